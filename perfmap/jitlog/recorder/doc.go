// Package recorder records the JIT code of running HotSpot JVMs into a JIT log (package
// perfmap/jitlog): BPF uprobes on the probes hotspot:compiled__method__load and unload (packages usdt
// and usdt/hotspot), and the code cache read from the JVM's memory (package vmstructs) for a snapshot
// and for the sizes of loaded code. The log's format, its reader, resolver and exporters are in package
// jitlog, which links none of this: tools that only read logs carry no eBPF.
//
// # Recording
//
// Record is the recorder, for one or more running JVMs (jvmkit jitlog record -o LOG PID...,
// gjmaps --log LOG after it wrote the maps). It needs root: uprobes, and the JVMs' memory. Per JVM, in
// this order:
//
//  1. attach BPF uprobes to hotspot:compiled__method__load and compiled__method__unload of the JVM's
//     libjvm.so (usdt.Attach, 4 MiB ring buffer, strings cut at Options.StringSize);
//  2. take the snapshot: the code cache read from the JVM's memory (vmstructs; every blob, named as
//     Compiler.perfmap names it), or jcmd Compiler.perfmap when that fails or is asked for, or none.
//     Its entries are SNAPSHOT records, all stamped with the time the snapshot began;
//  3. stream: each probe event becomes a LOAD or UNLOAD record with the probe's time.
//
// Since the probes come first, code loaded while the snapshot is taken is in both, and the resolver
// keeps one. Once every JVM has its snapshot in the log and the log is flushed, Options.Ready is
// called (the commands print "recording the JIT code of ..." on stderr): perf record should start after
// it. The recording ends with the context, Options.Duration or the exit of every JVM; the events
// still in the ring buffers are logged first.
//
// Sizes. The probe gives insts_size, the instructions without the stub section (exception and deopt
// handlers, constants), where samples land too. So a LOAD is logged with the size of the whole nmethod,
// its blob in the code cache (found at the probe's address, with the probe's name), the size that the
// snapshot and Compiler.perfmap give the same code: the two records agree, and the resolver sees a
// duplicate. When the blob is not found (the code was freed before the event was read, or a read of
// the JVM's memory failed), insts_size is logged, and the blob is looked for again for a few seconds:
// found, the LOAD is logged again with the whole size and the same time (the resolver keeps the later
// of the two). JVMStats.FullSize counts the loads logged with the whole size. An UNLOAD logged with an
// address has the size of the code it ends.
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
//     zombie or unloaded (vmstructs.CodeCache.Dead); a candidate that a later load replaced counts as
//     dead;
//   - when one or more are dead, the oldest of them is the one unloaded: the UNLOAD is logged with its
//     start and size and the probe's time (left out if that one was replaced meanwhile);
//   - when none is dead yet, the UNLOAD waits, and is checked again every 500 ms: after 10 s, or at the
//     end of the recording, it is left out.
//
// A left-out UNLOAD is counted in JVMStats.Ambiguous. Its code stays live in the log, which
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
// GenerateEvents (see package jitlog): the repeat is a duplicate. JDKs built without DTrace probes (the
// probes are in the OpenJDK builds of Debian and Temurin, tested with 17 and 25) cannot be recorded:
// the JVM's JVMStats.Err says so, and the others are recorded. The recorder's own cost, measured by
// BenchmarkRecordOverhead (scripts/bench-jitlog), is about 0.3 s of CPU per 8 s on JitChurn's ~200
// probe events per second.
//
// SIGKILL. The commands write the log with a FlushInterval of 200 ms: a recorder killed at any moment
// leaves a readable log that has every record but those appended in its last 200 ms (at worst a
// partial record at the end, skipped by the Reader as damage). The JVM is not affected: the uprobes
// belong to the recorder's file descriptors, and the kernel removes them, and decrements the probes'
// semaphores, when the process dies. Options.Jitdump files are flushed per load, so a killed
// recorder's jitdump lacks at most its last record.
//
// # Compatibility
//
// Linux only (uprobes; Record returns ErrNotSupported elsewhere), as root. TestRecordJIT runs on Linux
// 6.18, x86-64, with Debian's JDK 17, Temurin 25, and Debian trixie's JDK 21 and 25 (in a container
// root); Debian's JDK 11 has no probes and is skipped. The probe semantics are those of JDK 17 to 25
// (see package jitlog).
package recorder
