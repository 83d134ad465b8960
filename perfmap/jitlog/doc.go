// Package jitlog is the timestamped log of a JVM's JIT code: which code had which name when. A perf map
// is a snapshot, read by perf at report time: code that HotSpot moved, recompiled or unloaded during a
// profile is named wrongly or not at all. The log records every change, stamped with the clock of perf
// record -k mono, and names each sample by its time.
//
// A recorder (outside the JVM: USDT probes hotspot:compiled__method__load/unload, then a snapshot of the
// code cache) appends Records to a log with a Writer. A Resolver built from the records answers
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
// # Recorder
//
// RecordJVMs is that recorder, for one or more running JVMs (jvmkit jitlog record -o LOG PID...,
// gjmaps --log LOG after it wrote the maps). It needs root: uprobes, and the JVMs' memory. Per JVM, in
// this order:
//
//  1. attach BPF uprobes to hotspot:compiled__method__load and compiled__method__unload of the JVM's
//     libjvm.so (usdt.Attach, 4 MiB ring buffer, strings cut at RecordOptions.StringSize);
//  2. take the snapshot: the code cache read from the JVM's memory (vmstructs; every blob, named as
//     Compiler.perfmap names it), or jcmd Compiler.perfmap when that fails or is asked for, or none.
//     Its entries are SNAPSHOT records, all stamped with the time the snapshot began;
//  3. stream: each probe event becomes a LOAD or UNLOAD record with the probe's time.
//
// Since the probes come first, code loaded while the snapshot is taken is in both, and the resolver
// keeps one. Once every JVM has its snapshot in the log and the log is flushed, RecordOptions.Ready is
// called (the commands print "recording the JIT code of ..." on stderr): perf record should start after
// it. The recording ends with the context, RecordOptions.Duration or the exit of every JVM; the events
// still in the ring buffers are logged first.
//
// Sizes. The probe gives insts_size, the instructions without the stub section (exception and deopt
// handlers, constants), where samples land too. So a LOAD is logged with the size of the whole nmethod,
// its blob in the code cache (found at the probe's address, with the probe's name), the size that the
// snapshot and Compiler.perfmap give the same code: the two records agree, and the resolver sees a
// duplicate. Only when the blob is no longer there (the code was freed before the event was read) is
// insts_size logged; JVMRecordStats.FullSize counts the others. An UNLOAD logged with an address has
// the size of the code it ends.
//
// Unloads. compiled__method__unload carries names only, and a method often has several nmethods live at
// once: tier-3 (C1) and tier-4 (C2) code, OSR code, a recompilation after a deoptimization. The
// recorder keeps, per JVM, the code it believes live (from the snapshot and the loads; a load drops the
// live code it overlaps) with the order of its loads, and logs an UNLOAD only with the address of code
// it has seen die:
//
//   - the candidates are the live code of the UNLOAD's name; with none (code the recorder never saw,
//     or that a later load already replaced), the UNLOAD is left out;
//   - even a single candidate is checked against the code cache: dead is code with no blob of that
//     name at its start any more (freed), or, on JDKs with a sweeper (up to 19), an nmethod in state
//     zombie or unloaded (nmethod::_state >= 3); a candidate that a later load replaced counts as dead;
//   - when one or more are dead, the oldest of them is the one unloaded: the UNLOAD is logged with its
//     start and size and the probe's time (left out if that one was replaced meanwhile);
//   - when none is dead yet, the UNLOAD waits, and is checked again every 50 ms: after 10 s, or at the
//     end of the recording, it is left out.
//
// A left-out UNLOAD is counted in JVMRecordStats.Ambiguous. Its code stays live in the log, which
// names nothing wrongly: freed code runs no more, and code loaded at its address ends it. An UNLOAD by
// name alone would have the resolver end the oldest live code of the name, which may be the version
// that runs (on JDK 25 that left up to 11% of a churning profile's samples unnamed): the recorder never
// writes one. A delayed UNLOAD keeps the probe's time, so records are not in time order in the file,
// which the resolver does not need.
//
// JDKs. On JDK 17 (the sweeper, removed in JDK 20) the unload probe fires when an nmethod is made
// unloaded or zombie, and the code stays in the code cache until the sweeper flushes it: the recorder
// reads the state. On JDK 21 and later nmethods have no zombie state: unlinked nmethods are freed at
// the end of the same GC cycle, so a freed blob tells. Loads come twice when a JVMTI agent calls
// GenerateEvents (see above): the repeat is a duplicate. JDKs built without DTrace probes (the probes
// are in the OpenJDK builds of Debian and Temurin, tested with 17 and 25) cannot be recorded: the JVM's
// JVMRecordStats.Err says so, and the others are recorded. The recorder's own cost, measured by
// BenchmarkRecordOverhead (scripts/bench-jitlog), is about 0.3 s of CPU per 8 s on JitChurn's ~200
// probe events per second.
//
// SIGKILL. The commands write the log with a FlushInterval of 200 ms: a recorder killed at any moment
// leaves a readable log that has every record but those appended in its last 200 ms (at worst a
// partial record at the end, skipped by the Reader as damage). The JVM is not affected: the uprobes
// belong to the recorder's file descriptors, and the kernel removes them, and decrements the probes'
// semaphores, when the process dies. RecordOptions.Jitdump files are flushed per load, so a killed
// recorder's jitdump lacks at most its last record.
//
// # How the resolver reads the log
//
// See NewResolver for the rules. In short: a LOAD names its range from its time on and ends the live
// code that it overlaps (HotSpot reused the memory); a LOAD repeating live code (same start, size and
// name) is a duplicate; a SNAPSHOT entry is valid from the beginning, unless code overlapping it ended
// before the snapshot (then from that end), and is a duplicate of a LOAD at the same start; an UNLOAD
// ends the oldest live code of the process with its name. At any time the live code of a process does
// not overlap, which the index relies on: a segment tree over addresses whose nodes list spans sorted
// by time, O(log² n) per lookup. A lookup with no code valid at the time asked falls back to the code at
// that address nearest in time, marked not Exact.
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
// does. The probe semantics above are those of JDK 17 to 25.
package jitlog
