// Package perfmap reads and writes perf's JIT symbol maps (/tmp/perf-<pid>.map) and builds them for
// HotSpot JVMs, so that perf resolves JIT-compiled Java frames by name.
//
// # Format
//
// perf's map format (tools/perf/Documentation/jit-interface.txt) is one symbol per line:
//
//	START SIZE symbolname
//
// START and SIZE are hexadecimal; the name is the rest of the line and may contain spaces. Write emits
// lower-case hex without a prefix (as perf-map-agent does); HotSpot's Compiler.perfmap
// (CodeCache::write_perf_map, codeCache.cpp) writes "0x"-prefixed, zero-padded hex. perf reads both, and
// so does Parse.
//
// perf (tools/perf/util/symbol.c, dso__load_perf_map via map__new) ignores a map that is not owned by the
// user running perf or by root, which is why maps are written owned by root by default.
//
// # Where perf looks
//
// perf (6.1 here) opens the map of a process in another mount namespace inside it, under the process's
// namespace pid (/tmp/perf-<nspid>.map in the container: where the JVM's own Compiler.perfmap writes it), and
// falls back to /tmp/perf-<pid>.map in its own namespace under the pid it recorded (as a user trial's strace
// showed: setns, then the container's file). Place writes both: the
// target's /tmp/perf-<nspid>.map, reached with openat2 RESOLVE_IN_ROOT under /proc/<pid>/root so that a
// symbolic link inside the container cannot redirect the write to the host, and the host's
// /tmp/perf-<hostpid>.map.
//
// # Writing
//
// Maps are written atomically: a temporary file created O_EXCL in the same directory, written, fsynced and
// renamed over the final name. The final name is never followed: a symbolic link (or anything but a regular
// file) there is refused with ErrNotRegular.
//
// # Sources
//
// FromVMStructs reads the code cache from the JVM's memory (package vmstructs); no code runs in the JVM
// and it works with -XX:+DisableAttachMechanism. With VMStructsOptions.Unfold, each nmethod is split into
// ranges by inlining chain, read from its PcDescs (vmstructs.CodeCache.InlineRanges), and a range of
// inlined code is named "outer->...->inner", as perf-map-agent's unfoldall names it; the ranges do not
// overlap, so perf resolves every address to exactly one of them. With Annotate, compiled Java methods
// get the suffix "_[j]" and inlined ones "_[i]", which flame graph tools colour.
//
// FromJcmd has the JVM write its own map (Compiler.perfmap, JDK 17+) through the attach mechanism and
// reads it back (jcmd.Client.PerfMapData). The JVM writes with fopen "w", following any symbolic link at
// the name with its own privileges; so a new empty file of the JVM's user is first renamed over the name
// (internal/rootfs Prepare: never a link another user planted in /tmp, and a JVM that does not run as
// root can write over a map root placed earlier), and the map is read back from that very file, checked
// to be written, complete and unchanged while read: never a stale map, never someone else's file. From
// JDK 22 on the JVM writes under a fresh name (Compiler.perfmap's filename argument), so that a map
// someone else keeps at /tmp/perf-<pid>.map is never touched. JDK 11 has no Compiler.perfmap, which the
// error says.
//
// Writers of one JVM's maps take turns: gjmaps holds jcmd.LockMap (a flock on
// /tmp/.perf-<nspid>.map.lock in the JVM's /tmp) while it builds and places a map, and gjcmd while the
// JVM runs Compiler.perfmap. The lock is for liveness; correctness comes from the checks above and from
// publishing by rename.
//
// FromAgent loads jvmkit's own JVMTI agent (jvmti/agent, C, embedded in the Go binary, so that
// `go install` builds need no compiler) into the JVM with the attach mechanism's load operation: the
// library is written into the JVM's own filesystem under a content-addressed name, the agent replays the
// JVM's compiled-method and generated-code events into a map in a fresh private directory, and the map is
// read back and removed. Names and options are perf-map-agent's (AgentOptions). Loading again is safe: the
// dynamic linker hands the same path to the same instance, which keeps one JVMTI environment. With
// AgentOptions.Library another agent (perf-map-agent's libperfmap.so) is loaded instead. JDK 21+ prints a
// warning on the JVM's stderr the first time an agent is loaded dynamically (JEP 451).
//
// # Compatibility
//
// Linux only; elsewhere the functions fail with ErrNotSupported. openat2 needs Linux 5.6. Tested with the
// JDKs the test harness finds (JDK 17 and later for FromJcmd; Compiler.perfmap does not exist before 17).
package perfmap
