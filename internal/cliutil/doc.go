// Package cliutil is what the three command trees (internal/cli/gjcmd, internal/cli/gjmaps,
// internal/cli/jvmkit) share: Run (one exit point: the context that SIGINT/SIGTERM cancel, the error
// printed once as "tool: message", the exit status), the exit statuses and the errors that choose them,
// the version stamped at build time, pid completions and the marks of what a build's architecture
// cannot do. It is small on purpose: gjcmd links it, and everything it imports is in gjcmd's start-up
// (attach and jcmd only, which gjcmd needs anyway).
//
// Exit statuses, shared by every tool:
//
//	0   success
//	1   the JVM reported a failure (jcmd's status for a failed command)
//	2   usage error
//	3   no such JVM: the pid does not exist, is not a Java process or not HotSpot (OpenJ9)
//	4   permission: the caller may not attach, or a planted socket/symlink was refused
//	5   no attach listener: timeout, JVM stopped or hung, attach disabled
//	6   not in this build: the command needs what its architecture lacks (arm64: the Java stack
//	    walker); the message says what works instead, and --help marks such commands
//	130 interrupted (SIGINT/SIGTERM)
//
// Compatibility: the exit statuses and the "tool: message" form are part of every tool's interface
// (scripts test them) and do not change. Version, Commit and Date are set with -ldflags -X by make build
// and the release tool; their package path is part of that contract. The Go API is internal and changes
// with its three callers.
package cliutil
