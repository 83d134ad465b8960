// Package jcmd runs HotSpot diagnostic commands over the attach protocol and finds the JVMs on the
// machine, including those in containers, the way the JDK's jcmd launcher does but without a JVM.
//
//	c, err := jcmd.Dial(ctx, pid, nil)
//	rec, err := c.StartJFR(ctx, jcmd.JFRStart{Name: "leak", Settings: []string{"profile"}})
//	f, err := c.DumpJFR(ctx, jcmd.JFRDump{Name: "leak", Filename: "leak.jfr", PathToGCRoots: jcmd.Bool(true)})
//	dst, n, err := c.CopyOut(ctx, f, "/var/tmp/out", false)
//
// # Commands
//
// [Client.Run] sends any command line as it is. [Client.RunChecked] and the typed helpers first check
// the line against the JVM's own description of the command (`help <name>`, parsed by [ParseHelp] and
// cached per client): unknown options are reported with the closest known name, values are checked
// by type, positional arguments counted, so a typo never reaches the JVM. [Command.Check] mirrors the
// two parsers HotSpot has: the C++ DCmd parser (most commands, JFR.configure) and JFR's Java argument
// parser (JFR.start, dump, check, stop, view), which differ on booleans, negative numbers and bare
// words (see parse.go). Typed helpers return structured results: [Recording] (JFR.check),
// [ThreadDump] (Thread.print), [Flag] (VM.flags), properties, [Debugger] (VM.start_java_debugging,
// with the port the JDWP agent really listens on, found in /proc/<pid>/net/tcp).
//
// # Files written by the JVM
//
// JFR.dump, JFR.stop, GC.heap_dump, Compiler.perfmap and Thread.dump_to_file write files in the JVM's
// world: its mount namespace, its cwd, its uid, with %p (and for JFR %t) expanded by the JVM. Most of
// these writes follow a symbolic link at the name with the JVM's privileges, so before a line is sent,
// [Client.PrepareWrites] finds the files it will have the JVM write (a table of the commands that write
// files, and any argument that the JVM's help types FILE) and makes each path safe in the JVM's world,
// or refuses it with an error wrapping attach.ErrPermission (see internal/rootfs Prepare); after the
// command, [Writes.Check] verifies that the files made for the JVM hold what it wrote. The typed helpers
// and [Client.RunWriting] do both. The
// path the JVM reports is used when it reports one; otherwise the name given is resolved as the JVM
// resolves it ([JVMCwd]; %p and %t expanded where that JDK expands them). [OpenInJVM] opens it with openat2
// RESOLVE_IN_ROOT on /proc/<pid>/root, so symbolic links inside a container resolve inside it and
// never to the host's files (a plain open of /proc/<pid>/root/... would follow an absolute link to
// the caller's root). [CopyOut] copies it out atomically (temp file + rename in the destination
// directory), owned by the caller, never through a symlink, never over a file unless asked.
//
// # Discovery
//
// [List] scans /proc for processes that map libjvm.so (HotSpot) or OpenJ9's libraries, so JVMs started
// with -XX:-UsePerfData are found too, then reads each one's hsperfdata file through the process's own
// root (/proc/<pid>/root/tmp/hsperfdata_<user>/<nspid>) for its main class and its capabilities. A JVM
// in a container is reported under its host pid with its namespaced pid alongside. The JDK's jcmd
// instead lists hsperfdata files only (jdk.internal.jvmstat LocalVmManager and, for containers,
// sun.tools.attach PlatformSupportImpl), which misses -XX:-UsePerfData JVMs.
//
// [Select] implements jcmd's target argument: a pid; 0 for every attachable JVM; anything else is a
// substring of the main class or jar (jdk.jcmd sun/tools/common/ProcessArgumentMatcher.java).
//
// # Compatibility
//
// Verified against OpenJDK 17.0.15 (Debian) and Temurin 25.0.3 on Linux 6.18, plain, in pid+mount
// namespaces with a private /tmp, and under uid 65534; golden outputs of both are in testdata/. What
// differs:
//
//   - %p/%t in JFR file names: expanded from JDK 18 (JDK-8261441); JDK 17 writes "x_%p.jfr" literally
//     and garbles its reply ("Conversion = 'p'"), so the name given is trusted there. Other FILE
//     arguments (GC.heap_dump, Compiler.perfmap, Thread.dump_to_file): %p from JDK 24 (JDK-8334492).
//   - Compiler.perfmap takes a file name from JDK 22 (JDK-8314029); before, /tmp/perf-<nspid>.map.
//   - VM.start_java_debugging exists up to JDK 23; JDK 24 removed onjcmd=y (JDK-8336401) and JDK 25
//     rejects it at start-up and has no such command: StartDebugging says so (ErrDebuggingUnsupported).
//     On 17 the JVM echoes the configured address (port 0); the real port comes from /proc.
//   - JFR.start .jfc options: JDK 17 applies gc, allocation-profiling, compiler, method-profiling,
//     thread-dump, exceptions, memory-leaks, locking-threshold, file-threshold, socket-threshold,
//     class-loading; JDK 25 drops file-/socket-threshold and adds method-timing, method-trace.
//   - JFR commands report their own parse errors as output with status 0; the JVM refuses to stop a
//     delayed recording ("Recording must be started before it can be stopped."): StopJFR returns an
//     error for any output without "Stopped recording".
//   - JDK 8: JFR needs -XX:+UnlockCommercialFeatures on Oracle builds before 8u262, OpenJDK 8u262+ has
//     it; not available on our machines, untested.
//
// Linux only, like package attach: on other platforms the parsers and pure functions work, and List,
// Inspect, Dial, JVMCwd, OpenInJVM and CopyOut return errors wrapping
// attach.ErrNotSupported.
package jcmd
