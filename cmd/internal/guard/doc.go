// Package guard makes sure that what jvmkit changes in a JVM is undone, even when the command that
// changed it is killed. It is the one home of that rule: a command records each change before making
// it, a guardian process restores it if the command dies first, and a durable record lets a later
// command undo a change whose command and guardian were both killed.
//
// # Records
//
// One file per JVM in DefaultDir (/run/jvmkit: tmpfs, emptied at boot), named <pid>-<start>.json, the
// start time being /proc/<pid>/stat's field 22, so that a reused pid never matches an old record. The
// directory must be owned by the effective uid and writable by nobody else (OpenStore refuses anything
// else, links included); files are opened relative to it with O_NOFOLLOW, written to an O_EXCL
// temporary file, synced and renamed, and changed only under a flock, so concurrent commands lose
// nothing. A record lists the changes in force (kind, name, old and new value, who and when) with their
// holders, the commands that rely on them now, and a bounded history that jvmkit flags prints. Records of
// JVMs that are gone are removed by the next update.
//
// Two commands switching the same flag share one change: the second joins it as a holder, and the flag is
// restored when the last holder releases it or dies, to the value it had before the first.
//
// # Guardian
//
// Begin starts the guardian before anything is changed: the same binary executed again through
// /proc/self/exe with JVMKIT_GUARDIAN=1 (this package's init runs it, in jvmkit and in any test binary
// that links the package), in a session and process group of its own, so that a terminal's signals and
// a kill of the command's process group do not reach it; it ignores SIGINT, SIGTERM and SIGHUP, which
// the command receives and handles itself. It holds a pidfd of the command (taken while the command is
// still its parent, so it cannot name another process) and of the JVM, and has the JVM's VMStructs and
// memory open, so that an undo is a one-byte write: measured, the flag reads false within milliseconds
// of a SIGKILL of the command. When the command ends, it undoes the changes the command held that no
// other live command holds, unless the command said that it released them itself; when the JVM exits,
// it removes the JVM's record; then it exits.
//
// What remains: if the command and its guardian are both killed before the command restores its change
// (kill -9 of both, a cgroup killed at once after its stop timeout, a reboot of a container runtime
// that keeps the JVM), the change stays until a command looks at the record: jvmkit alloc --restore PID,
// or the next jvmkit alloc on that JVM, undoes it; jvmkit flags says it was left behind.
//
// # Compatibility
//
// Linux 5.3+ (pidfd_open), root (writing a JVM's memory needs ptrace access). Other platforms: every
// call returns procerr.ErrNotSupported.
package guard
