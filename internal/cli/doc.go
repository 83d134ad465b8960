// Package cli holds the command trees of jvmkit's binaries (cobra, RunE, one exit point). The mains in
// cmd/ only call GjcmdMain or JvmkitMain and exit with its status.
//
// gjcmd (gjcmd.go) is the drop-in jcmd. jvmkit (jvmkit*.go, one file per view) reads JVMs through
// VMStructs: vmstructs, flags (--set ... --write-memory), threads, codecache (--pc); every view takes a
// pid or a core file (--core-root for a containerised JVM's core) and prints JSON with --json as
// {"schema": "jvmkit.<view>/v1", "data": ...}.
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
package cli
