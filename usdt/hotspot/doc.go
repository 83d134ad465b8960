// Package hotspot is the HotSpot layer over package usdt: a catalogue of the probes of libjvm.so with
// their arguments and strings (Probes, Lookup, Sites), typed decoders for their events (Decode), the
// DTrace flags that gate some of them, read and switched at run time (ReadFlags, SwitchOn), and two
// traces built on them: allocations by class from object__alloc (TraceAlloc, counted in the kernel with
// usdt.Aggregate) and collection pauses from gc__begin/gc__end (TraceGC). jvmkit alloc and jvmkit gc are
// their commands.
//
// # Probes
//
// The probes are declared in OpenJDK's src/hotspot/os/posix/dtrace/hotspot.d and hs_private.d and fired
// from nmethod.cpp, objectMonitor.cpp, sharedRuntime.cpp, gc/shared/memAllocator.cpp, vmGCOperations
// (SvcGCMarker) and others. Strings are a pointer and a length, without a NUL. Java thread ids are
// java.lang.Thread ids, not OS tids. Register assignments differ per build and per site; the notes say
// them, nothing here hard-codes them.
//
// # DTrace flags and switching them at run time
//
// object__alloc fires only with -XX:+DTraceAllocProbes, method__entry/__return with DTraceMethodProbes,
// monitor__* with DTraceMonitorProbes (JDK 17-19 also: ExtendedDTraceProbes, which sets all three; it is
// obsolete in 20 and an unrecognized option in 25). None of them is manageable: jcmd VM.set_flag refuses.
// ReadFlags reads them from the JVMFlag table through vmstructs; SwitchOn writes the flag's byte through
// /proc/<pid>/mem (vmstructs.SetBoolFlag, which checks that the address is in libjvm's data) and its
// Switch restores it. jvmkit alloc --switch-flags restores it on every exit path: after --duration, on
// SIGINT, SIGTERM and SIGHUP (they cancel the command's context, and the command returns through its
// deferred restore), when the JVM exits, and on errors. SwitchOnKept tells a Keeper of each change before
// it is made: jvmkit's is cmd/internal/guard, whose guardian process restores the flag if the command is
// killed, and whose record lets a later command restore a change whose command and guardian were both
// killed.
//
// What a run-time switch does depends on where the code runs and on the JDK (sources: memAllocator.cpp,
// templateTable_x86.cpp, ciEnv.cpp, C2's macro expansion; measured on the Alloc workload, see
// internal/testutil/workloads/Alloc.java):
//
//   - The runtime's allocation slow path (MemAllocator: a new TLAB, an allocation outside a TLAB, C1/C2's
//     new_instance/new_array stubs, the interpreter's arrays) and the interpreter's new test the flag at
//     run time: they fire as soon as it is on and stop as soon as it is off.
//   - Compiled code decides at compile time (ciEnv caches the flag). Code compiled before the switch fires
//     only on its slow path; code compiled while the flag is on includes the probe. JDK 17's C2 then takes
//     the slow path for every allocation (so it stops firing once the flag is off again: measured, 0
//     firings in 2 s after the reset of a JVM started with the flag). JDK 21 and later (JDK-8278079; JDK 25
//     measured) keep C2's TLAB fast path and add a leaf call to SharedRuntime::dtrace_object_alloc, which
//     does not test the flag: such code keeps firing after the flag is restored, until it is compiled
//     again (measured on JDK 25: about 0.7-1 million firings per second of the Alloc workload after the
//     reset of a JVM started with the flag). Without a uprobe the call is cheap but not free.
//   - JDK 17's C1 also calls the probe from code it compiled while the flag was on, without testing the
//     flag: such code keeps firing after the flag is reset, as C2's does on JDK 21+ (measured on real
//     applications by internal/realapps' TestRealApps; the Alloc workload, all C2 code, fires 0 times on JDK 17).
//   - So on a JVM started without the flag, switching it on gives a sample: the slow paths of compiled
//     code, one per new TLAB (a thread's TLAB holds from KBs to MBs) or allocation outside one, and every
//     allocation of interpreted code and of code compiled during the trace. Counted as they come, these
//     are biased: on the Alloc workload (byte shares 66.7% AllocA, 29.2% byte[], 4.2% AllocB) the
//     samples gave 87%, 12.5% and under 1%; on H2 the class with the most bytes was missing from the top
//     10. AllocOptions.Weights weighs them instead (see below).
//
// # object__alloc
//
// Its arguments are the Java thread id, the class name (the Klass's name Symbol, internal form: "[B",
// "java/lang/String") and the size in bytes. JDK 17 has one site, JDK 25 three: the runtime's slow path
// (dtrace_object_alloc(Thread*, oopDesc*, size_t)), the interpreter (dtrace_object_alloc(oopDesc*)) and
// C2's leaf call (dtrace_object_alloc(JavaThread*, oopDesc*)); AllocProfile.PerSite counts each. JDK 17's
// interpreter, C1 and C2 call the probe's function without a size argument, so its sizes are garbage
// (a run on H2 printed 776338 MiB in 10 s); only the runtime's slow path passes the size. JDK 25 passes
// the size at every site (measured: every firing of the Alloc workload, bpftrace on the same probe).
//
// # Sizes and weights
//
// With AllocOptions.Weights, TraceAlloc reads the JVM's VMStructs and does not trust the size argument:
//
//   - Instance classes are sized from their layout helper (vmstructs.LoadedClasses; java.lang.Class
//     mirrors and stack chunks excepted, their size varies): exact on every JDK. Measured on the Alloc
//     workload, JDK 17 and 25 both give 32, 56 and 16 bytes per AllocA, byte[40] and AllocB.
//   - Every firing is weighed in the kernel by the JavaThread's allocated-bytes counter
//     (Thread::_allocated_bytes plus the used part of its TLAB, read in the probe through a map of
//     thread ids to JavaThreads that a watcher keeps current; usdt.ThreadWeight). When every allocation
//     fires, a firing's weight is its own size where the JVM counts the object before firing for it:
//     checked on the instance classes at the end of each trace (AllocProfile.WeightSizes). JDK 17: yes,
//     so arrays are sized exactly; JDK 25: no (C2's leaf call fires before its TLAB bump is counted), but
//     there the probe's sizes are right (AllocProfile.ProbeSizes, also checked on the instance classes).
//     Arrays sized by neither are reported with an unknown size, never guessed.
//   - In a sample (AllocOptions.Sampled, --switch-flags) the weights are those of JFR's
//     ObjectAllocationSample: the firing that starts a new TLAB (its allocation is the TLAB's first: the
//     TLAB's top less its start is the probe's size) weighs every byte the thread allocated since its
//     previous sample, an allocation outside a TLAB its own size (which the next TLAB's sample does not
//     weigh again; every one is a sample, where JFR takes one only after a TLAB's worth of the thread's
//     bytes, so classes allocated outside TLABs have more samples than in JFR for the same bytes), and
//     any other firing nothing (code compiled while the flag is on reports every
//     allocation: the TLAB samples stand for those). A firing in a TLAB whose start was not seen is not
//     a sample, nor is an allocation outside a TLAB made then: their bytes go to the thread's next
//     sample. A class's bytes are the sum of its weights: an estimate of what it allocated, summing to
//     what the traced threads allocated, as good as where the points fall: a loop that allocates the
//     same sequence over and over can lock the TLAB starts onto a few of its objects (a TLAB's size is
//     the same between collections), JFR's as well. The window ends (AllocTrace.Freeze) before the flag
//     is switched off: the code compiled while it was on goes on firing until the uprobes are detached,
//     in TLABs whose start no longer fires. Measured against JFR in the same JVM, against a second
//     instance started with the full probe, and in the full-probe JVM itself: docs/benchmarks.md.
//
// TraceAlloc counts in the kernel (usdt.Aggregate), keyed by the class name's address and length: a
// firing costs a hash lookup and two atomic adds, and the name is copied once per class. The cost that
// remains is the uprobe's trap, about 0.5-2 µs per firing on the test machine (a shared 2-vCPU VM), which
// bounds what one allocating thread can produce; AllocOptions.Events sends every firing through the ring
// buffer instead (the basis for allocation stacks), which measured 2-4 times slower on the same workload.
//
// # Allocation stacks
//
// AllocOptions.Stacks records each firing with the thread's registers and 16 KiB of its stack
// (usdt.Options.StackSize) and walks it at once with package unwind: the probe fires in libjvm, and the
// walker unwinds libjvm's frames by their call frame information over the copied stack to the Java
// frames (never by the thread's frame anchor, which has moved on by the time the record is read). AllocOptions.Sample records one firing in N at random; at about a million
// firings a second per allocating thread the reader walks some 10-13 thousand stacks a second on the test
// machine, so jvmkit alloc --stacks records one in 64 by default when every allocation fires, and every
// firing with --switch-flags. Measured on the AllocStacks workload (each class allocated in its own
// method, 2 s): with -XX:+DTraceAllocProbes, JDK 17 100% of 23k stacks reach the thread root and 100%
// name the allocating method; JDK 25 99.9% reach the root but about 0% name the allocating method: C2's
// leaf call to dtrace_object_alloc has no debug information at its return address, so its inlining is
// unknown and the walker names the compiled method the allocation was inlined into, as HotSpot's own
// walkers do. With
// --switch-flags (slow paths, entered through stubs whose return addresses have debug information) both
// JDKs give 100% complete stacks naming the allocating method.
//
// # Collections
//
// gc__begin (is_full) and gc__end fire without a flag, from SvcGCMarker inside the safepoint, on the VM
// thread; mem__pool__gc__begin/__end fire for every memory pool when a memory manager reports a
// collection (GCMemoryManager::gc_begin/gc_end). TraceGC turns them into the pauses -Xlog:gc reports:
//
//   - A safepoint of Parallel or Serial can hold a young collection and, when the old generation fills
//     up, a full one: gc__begin says minor for both, their managers (PS Scavenge then PS MarkSweep, Copy
//     then MarkSweepCompact) tell them apart, and each is a pause; full when its manager is a full
//     collector's or gc__begin says so. Serial reports the full collection inside the failed young one's
//     report: the young pause is taken to end where the full one's report starts (HotSpot fires nothing
//     where the young work ends), so its duration is longer than -Xlog:gc's.
//   - G1's Remark and Cleanup on JDK 21+ report through the "G1 Concurrent GC" manager, which begins
//     before gc__begin and ends after gc__end: its pools belong to that pause (they used to be given to
//     the next one, so Remark showed every pool dropping to 0 B). Its pools are as the last young pause
//     left them; -Xlog:gc's heap also counts what was allocated since into the current regions: measured,
//     up to 2 regions apart. JDK 17 reports no pools for them.
//   - A pause lasts from gc__begin (or its manager's first report, if earlier) to gc__end (or its
//     manager's last report, if later), which encloses the span -Xlog:gc times. Measured against -Xlog:gc
//     with timenanos (the probes' clock) on Serial, Parallel, G1 and ZGC, JDK 17 and 25, 3 s each under
//     a workload with young, full, System.gc(), Remark and Cleanup pauses: every logged pause traced one
//     to one, every full one flagged, 35-656 pauses per run; mean duration difference 28-616 µs.
//   - ZGC's pauses (Mark Start, Mark End, Relocate Start; "Y:"/"O:" on JDK 21+) fire gc__begin/gc__end
//     without pools; its and Shenandoah's concurrent cycles report through their managers outside any
//     pause and are not pauses. JDK 25 has two sites of each probe.
//
// # Compatibility
//
// Linux on amd64 (arm64 through usdt, untested), root (CAP_BPF, CAP_PERFMON, and ptrace access for the
// flags). Tested on Linux 6.18 with Debian's OpenJDK 17.0.15 and Temurin 25.0.3 (Serial, Parallel, G1,
// ZGC); VMStructs entries used for sizes and weights (Thread::_allocated_bytes, Thread::_tlab,
// ThreadLocalAllocBuffer::_start/_top, ClassLoaderDataGraph::_head, ClassLoaderData::_klasses/_next,
// Klass::_next_link/_name/_layout_helper, Symbol::_body) are exported by both. JDKs built
// without --enable-dtrace have no notes: Sites returns ErrNoProbes.
package hotspot
