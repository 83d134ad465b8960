// Package jitlog is the timestamped log of a JVM's JIT code: which code had which name when. A perf map
// is a snapshot, read by perf at report time: code that HotSpot moved, recompiled or unloaded during a
// profile is named wrongly or not at all. The log records every change, stamped with the clock of perf
// record -k mono, and names each sample by its time.
//
// A recorder (outside the JVM: USDT probes hotspot:compiled__method__load/unload, then a snapshot of the
// code cache; package perfmap/jitlog/recorder) appends Records to a log with a Writer. A Resolver built from the records answers
// (pid, address, time) → name, and feeds the exporters: Symbolize rewrites perf script text, PerfMap and
// PerfMapWindow write perf maps as of a time or for a window, and WriteJitdump and CreateJitdump write
// jitdump files for perf inject --jit.
//
// # Records
//
// A Record says that at Time (nanoseconds of CLOCK_MONOTONIC: bpf_ktime_get_ns and perf record -k mono
// use that clock, so times in the log and in perf script match), in process PID (host pid), Size bytes
// of code at Start named Name were seen by a snapshot (SNAPSHOT), loaded (LOAD) or unloaded (UNLOAD).
// Source says where the record came from: "snapshot-vmstructs", "snapshot-perfmap", "usdt".
//
// HotSpot (src/hotspot/share/code/nmethod.cpp) fires compiled__method__load with the class, method and
// signature, insts_begin and insts_size, once the compiler has installed an nmethod, and again for
// every live nmethod when a JVMTI agent calls GenerateEvents(COMPILED_METHOD_LOAD): loads come twice.
// compiled__method__unload passes only the names. Interpreter, stubs and adapters fire nothing: only a
// snapshot names them. The recorder attaches the probes first, then takes the snapshot, so that no code
// falls between the two.
//
// # Recording
//
// A recorder is a loop around a Writer: Create the log (WriterOptions.FlushInterval bounds what a kill
// loses), Append a Record per probe event and per snapshot entry, Close at the end. Names are
// HotSpot's Method::external_name for loads and unloads alike (an UNLOAD finds its LOAD by name, and a
// SNAPSHOT from Compiler.perfmap or vmstructs names nmethods the same way). For
// perf inject, the recorder also calls CreateJitdump at its start and CodeLoad for each load, with the
// code read by ReadCode while it is still there.
//
// Package recorder (perfmap/jitlog/recorder) is that recorder for running JVMs: eBPF uprobes, the code
// cache read with package vmstructs. It is a package of its own so that this one, the format and what
// reads it (jvmkit symbolize, the exporters), links neither cilium/ebpf nor the probes.
//
// # How the resolver reads the log
//
// See NewResolver for the rules. In short: a LOAD names its range from its time on and ends the live
// code that it overlaps (HotSpot reused the memory); a LOAD repeating live code (same start, size and
// name) is a duplicate; a SNAPSHOT entry is valid from the beginning, unless code overlapping it ended
// before the snapshot (then from that end), and is a duplicate of a LOAD at the same start; an UNLOAD
// ends the oldest live code of the process with its name, or the code at its address when it has one.
// An UNLOAD with an address whose LOAD the log lost (damage) still names the code until its time: a
// span of Kind Unload, valid back to the end of the code there before it, marked Uncertain. At any
// time the live code of a process does not overlap, which the index relies on: a segment tree over
// addresses whose nodes list spans sorted by time, O(log² n) per lookup. A lookup with no code valid at
// the time asked falls back to the code at that address nearest in time, marked not Exact. Symbolize
// marks names that may be wrong (fallbacks, Uncertain spans) with MarkUncertain, "[?] ".
//
// # File format, version 1
//
// A log is a 16-byte header followed by records, all integers little-endian:
//
//	header:  magic "JVMKJLOG" (8 bytes), version u32 = 1, flags u32 = 0
//	record:  off  size
//	          0    2   marker "JR"
//	          2    1   kind: 1 SNAPSHOT, 2 LOAD, 3 UNLOAD
//	          3    1   S, length of source
//	          4    2   N, length of name
//	          6    2   0 (reserved)
//	          8    8   time, ns CLOCK_MONOTONIC
//	         16    8   start
//	         24    8   size
//	         32    4   pid
//	         36    N   name, UTF-8
//	       36+N    S   source, UTF-8
//	     36+N+S    4   CRC-32C (Castagnoli) of bytes 0 to 36+N+S of the record
//
// A record is 40+N+S bytes. Readers of version 1 refuse other versions (VersionError) and header flags.
// The Writer creates the file with O_CREAT|O_EXCL (never through a symbolic link) and appends whole
// batches of records with one write each; a killed writer loses its unwritten batch, and a write cut
// short (a full disk) leaves a partial record at the end. The Reader never fails on content: it skips
// damage (a partial record, a bad checksum, garbage) to the next marker that starts a record with a good
// checksum, and reports each skipped part as Damage with its offset. A false resynchronisation needs a
// marker, a valid header and a matching CRC-32C in the damaged bytes.
//
// # perf script
//
// Symbolize reads the text of perf script: the default format and -F with time, ip, sym and dso (the
// recommended fields: -F comm,pid,tid,time,period,event,ip,sym,dso --ns). Times must be of a recording
// made with -k mono (perf's default clock is not CLOCK_MONOTONIC), printed as absolute times (not
// --reltime or --deltatime). perf script prints microseconds unless --ns is given: times then are
// rounded, which matters only for samples within a microsecond of a change. Without -F pid, headers
// carry only the thread id; see SymbolizeOptions.PID.
//
// # jitdump
//
// jitdump (tools/perf/Documentation/jitdump-specification.txt) is perf's format for JIT code:
// CODE_LOAD records with a time, the code's pid, address, size, name and bytes. perf record must run
// with -k mono; perf inject --jit reads a file jit-<pid>.dump when process <pid> mapped it executable
// during the recording, writes each CODE_LOAD as an ELF file next to it and injects an mmap of that
// file into the pid of the record, at the record's time. So a helper process may publish another
// process's code (CreateJitdump): perf must record the helper as well (-p JVM,HELPER or -a). jitdump
// has no unload: perf keeps naming unloaded code until other code is loaded over it.
//
// # Java names
//
// The recorder turns the probe's strings (class "java/lang/String", method "indexOf", signature "(II)I")
// into HotSpot's Method::external_name, the names of jcmd Compiler.perfmap ("int
// java.lang.String.indexOf(int, int)"), with the project's one Java-name rule (internal/javaname, shared
// with vmstructs, the unwinder and allocation profiles), so LOAD and SNAPSHOT names of the same code
// agree. Hidden classes (lambda forms, JDK 15+) are named as Class.getName does: "Foo$$Lambda/0x...".
//
// # Compatibility
//
// The format and resolver are portable; CreateJitdump and ReadCode are Linux only (ErrNotSupported
// elsewhere). Tested with perf 6.1 on Linux 6.18 (x86-64): perf record -k mono, perf inject --jit and
// perf script, with the helper-pid route, name the samples of code replaced at one address as Symbolize
// does. The probe semantics above are those of JDK 17 to 25; the recorder's JDK differences are in
// package recorder.
package jitlog
