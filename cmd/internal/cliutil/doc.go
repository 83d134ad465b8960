// Package cliutil is what the command-line tools (cmd/internal/gjcmd, cmd/internal/gjmaps,
// cmd/internal/jvmkit and its extras) share: one exit point (SignalContext, the context that SIGINT and
// SIGTERM cancel; Finish, which prints the error once as "tool: message" and gives the exit status),
// the exit statuses and the errors that choose them, the version stamped at build time, the shell
// completion protocol and pid completions, and what a build's architecture cannot do. It does not
// import cobra: gjcmd, which starts often and must start fast, parses its own command line and links
// this package, whose imports (attach and jcmd) it needs anyway. The cobra side of the other trees is
// package clitree.
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
