// Package attach implements HotSpot's dynamic attach mechanism on Linux: it starts a running JVM's
// attach listener if needed, connects to it and runs attach operations ("jcmd", "load",
// "properties", "threaddump", ...), from the same host or from the host into a container.
//
//	vm, err := attach.Dial(ctx, pid, nil)
//	out, err := vm.Jcmd(ctx, "VM.version")
//
// # Rendezvous
//
// HotSpot listens on a Unix socket /tmp/.java_pid<pid>, where /tmp is the target's own /tmp (its mount
// namespace; hard-coded, not java.io.tmpdir) and <pid> its pid in its own pid namespace (NSpid). The
// listener starts lazily: the JVM's signal thread, on SIGQUIT, looks for a file .attach_pid<pid> in
// its cwd, then in /tmp, owned by its euid (or root, JDK 11+); without it SIGQUIT prints a thread dump.
// Sources: OpenJDK src/hotspot/os/posix/attachListener_posix.cpp (before JDK 24:
// src/hotspot/os/linux/attachListener_linux.cpp) and src/hotspot/share/services/attachListener.cpp.
//
// This package reaches both files through /proc/<pid>/cwd and the target's /tmp opened inside
// /proc/<pid>/root as the target resolves it (Target.OpenTmp), never with setns(2) (which fails with
// EINVAL in a multithreaded process such as any Go program), signals the host pid through a pidfd, and
// waits for the socket with inotify on the target's /tmp.
//
// # Safety
//
//   - SIGQUIT is sent only to a process that maps libjvm.so and has a SIGQUIT handler (SigCgt in
//     /proc/<pid>/status); its default action would kill anything else, including a -Xrs JVM.
//   - -XX:+DisableAttachMechanism is read from the JVM's hsperfdata (sun.rt.jvmCapabilities) and
//     refused without signalling, as the JDK's attach provider does.
//   - The target's /tmp is opened with openat2(RESOLVE_IN_ROOT) from /proc/<pid>/root, and every file
//     there (trigger, socket, hsperfdata, the inotify watch) is reached through that descriptor
//     (/proc/self/fd/<fd>/<name>, or *at(2) calls). The path /proc/<pid>/root/tmp would follow an
//     absolute link /tmp -> /srv in a container's or chroot's root to the caller's /srv, and a relative
//     one's ".." above that root: as root, we would create, watch and connect there. A link is followed
//     as the target follows it, inside its root; a /tmp missing or not a directory is an error naming
//     the process and the path. Before Linux 5.6 (no openat2) only a /tmp that is a directory, not a
//     link, is used.
//   - The trigger file is created with O_CREAT|O_EXCL|O_NOFOLLOW relative to an O_PATH handle of its
//     directory, owned by the target's euid, and removed on every path.
//   - The socket must be a socket, mode 0600, owned by the target's euid; after connecting, SO_PEERCRED
//     must name the target process itself. A socket or symlink planted by anyone else is refused.
//   - A stale socket (nobody listens on it: left by a killed process that had the same pid) does not
//     block attaching: it is removed, when the caller may, by name under its directory after checking
//     that it is still the socket that refused, and the listener is started (HotSpot starts it again
//     when a SIGQUIT finds its socket gone). Another user's is removed at Dial, one of the JVM's user
//     when an operation's connect is refused. A socket somebody listens on is never removed.
//   - Every step has a deadline. While waiting for a reply the target is checked every second: a dead
//     or stopped JVM is an error, not a hang (the JDK's jcmd and jattach hang forever on a stopped JVM).
//   - Replies are drained at full speed into memory whatever the consumer's pace: JDK 25 streams output
//     into the socket from inside safepoints, so a slow reader would stall the JVM. Streaming is off
//     (streaming=0) unless Options.Streaming asks for it.
//
// # Protocol
//
// Version 1 (every JDK): "1\0<op>\0<arg0>\0<arg1>\0<arg2>\0", exactly three arguments of at most 1024
// bytes each (the JVM closes the connection without a reply otherwise, so [EncodeV1] checks first).
// Version 2 (JDK 24+, JDK-8339289/JDK-8342995): "2\0<size>\0<op>[ <options>]\0(<arg>\0)*" with size the
// byte count after its own NUL, up to 256 KiB; options "streaming=0|1" (JDK 25, JDK-8319055). The first
// operation picks the protocol: protocol 1 at once when the `release` file of the Java home of the
// target's executable (read inside its root) says JDK 23 or older; otherwise protocol 2, which older JVMs
// answer with 101 (ATTACH_ERROR_BADVERSION) at once, and the operation is repeated in protocol 1. The
// reply is a decimal status line and the output up to EOF.
//
// # Credentials
//
// JDK 11+ accept a peer with the JVM's euid and egid, or root. JDK 8 accepts only its own user: when a
// JDK 8 JVM closes the connection without a reply and the caller is root, the connection is retried
// from a thread whose effective ids are switched to the target's (raw setresuid/setresgid on a locked
// thread that is then discarded; Go's Setuid family would change every thread of the process).
//
// # Compatibility
//
// Tested on OpenJDK 17.0.15 (Debian, protocol 1) and Temurin 25.0.3 (protocol 2 with streaming), each as
// a plain process, in its own pid+mount namespace with a private /tmp, under another uid, with a
// read-only cwd, with -Xrs and with -XX:+DisableAttachMechanism; JDK 17 also in a chroot whose /tmp is a
// link (absolute, out of the root from the host's view; relative), on Linux 6.18. Per JDK:
//
//	JDK 8        protocol 1; root refused as a peer (credential switch); trigger owner must be the euid;
//	             load replies "<rc>" (untested here: no JDK 8 package on our machines)
//	JDK 9-20     load replies "return code: <rc>", failures status -1
//	JDK 21+      load always status 0: "return code: <rc>" or only an error message
//	JDK 24       protocol 2 (no per-argument limit)
//	JDK 25       protocol 2 options; streaming output on by default (we ask for streaming=0)
//
// OpenJ9 uses a different mechanism and is reported as ErrNotHotSpot. Other platforms build and
// return ErrNotSupported.
package attach
