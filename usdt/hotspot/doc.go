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
// it is made: jvmkit's is internal/guard, whose guardian process restores the flag if the command is
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
//   - So on a JVM started without the flag, switching it on gives a sample: the slow paths of compiled
//     code, about one per TLAB's worth of bytes a thread allocates, and every allocation of interpreted
//     code. A class's share of the samples roughly estimates its share of the bytes. Measured on the Alloc
//     workload (byte shares 69.6% AllocA, 30.4% byte[], 4.3% AllocB; count shares 73/18/9): the samples
//     put AllocA first on both JDKs, but with 87%, byte[] 12.5% and AllocB under 1%, so treat the shares
//     as a ranking, not a measurement.
//
// # object__alloc
//
// Its arguments are the Java thread id, the class name (the Klass's name Symbol, internal form: "[B",
// "java/lang/String") and the size in bytes. JDK 17 has one site, JDK 25 three: the runtime's slow path
// (dtrace_object_alloc(Thread*, oopDesc*, size_t)), the interpreter (dtrace_object_alloc(oopDesc*)) and
// C2's leaf call (dtrace_object_alloc(JavaThread*, oopDesc*)); AllocProfile.PerSite counts each. JDK 17's
// interpreter calls the probe's function without a size argument, so its sizes are garbage: TraceAlloc
// counts sizes outside 8 bytes..1 TiB as unknown (ClassAlloc.Unsized) and estimates their bytes from the
// class's other allocations; a garbage value inside that range cannot be told from a size, so on JDK 17
// the bytes of classes allocated by interpreted code can be wrong. Counts are exact.
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
// walker reaches the Java frames through the thread's frame anchor (the runtime's slow path, entered from
// a stub or the interpreter with call_VM) or by frame pointers (the interpreter's and C2's leaf calls,
// which set no anchor). AllocOptions.Sample records one firing in N at random; at about a million
// firings a second per allocating thread the reader walks some 10-13 thousand stacks a second on the test
// machine, so jvmkit alloc --stacks records one in 64 by default when every allocation fires, and every
// firing with --switch-flags. Measured on the AllocStacks workload (each class allocated in its own
// method, 2 s): with -XX:+DTraceAllocProbes, JDK 17 100% of 23k stacks reach the thread root and 100%
// name the allocating method; JDK 25 99.9% reach the root but about 0% name the allocating method: C2's
// leaf call to dtrace_object_alloc has no debug information at its return address, and the walker takes
// the next PcDesc in the code (-XX:+DebugNonSafepoints fixes two of the three classes, not all). With
// --switch-flags (slow paths, entered through stubs whose return addresses have debug information) both
// JDKs give 100% complete stacks naming the allocating method.
//
// # Collections
//
// gc__begin (is_full) and gc__end fire without a flag, from SvcGCMarker inside the safepoint, on the VM
// thread: G1's young, mixed, full, remark and cleanup pauses, Parallel's and Serial's collections. The
// time between them is the pause without the time to safepoint; measured against -Xlog:gc on G1, the
// traced pauses match the logged ones one to one and are about 0.1 ms longer. mem__pool__gc__begin/__end
// give every pool's usage before and after (TraceGC attaches them to the pause on the same thread).
// JDK 25 has two sites of each.
//
// # Compatibility
//
// Linux on amd64 (arm64 through usdt, untested), root (CAP_BPF, CAP_PERFMON, and ptrace access for the
// flags). Tested on Linux 6.18 with Debian's OpenJDK 17.0.15 and Temurin 25.0.3 (G1). JDKs built
// without --enable-dtrace have no notes: Sites returns ErrNoProbes.
package hotspot
