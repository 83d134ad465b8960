// Package unwind walks the stacks of a HotSpot JVM's threads from outside the process, with nothing
// loaded into the JVM: Java frames (interpreted, compiled and inlined, with bcis and line numbers)
// through the JVM's VMStructs (package vmstructs), native frames by their call frame information
// (.eh_frame) and ELF symbols, kernel frames from a perf sample's callchain. The same [Walker] runs on
// live threads stopped with ptrace ([StopThread]), on perf samples ([Sampler], [Walker.Profile]) and on
// core files: its input is a [Sample] (registers, optionally a copy of the user stack) and a
// vmstructs.Memory.
//
// # Walking (x86-64)
//
// [Walker.Frames] is an iterator over a stack's frames, leaf first. Each pc is classified: outside
// the code cache it is native code; inside, the code blob found through the code heap's segment map
// says interpreter, nmethod (compiled Java, or a native method's wrapper), stub or adapter, and a pc
// equal to StubRoutines::_call_stub_return_address is an entry frame (the VM calling Java). Then:
//
//   - Interpreted frames: Method* at fp-24, bcp at fp-64 (src/hotspot/cpu/x86/frame_x86.hpp, JDK 9+;
//     not in VMStructs), bci = bcp - (ConstMethod* + sizeof(ConstMethod)); the caller's sp is the
//     frame's sender sp (fp-8), its pc at fp+8, its fp at fp. In the top frame the live bcp is in r13
//     and, at a method's entry before its frame is built, rbx holds the Method* and r13 the sender's
//     sp: then the return address is at sp, at fp+8 (after "enter") or in rax.
//   - Compiled frames: rbp is a general register without -XX:+PreserveFramePointer, so the frame size
//     (CodeBlob::_frame_size) gives the caller's sp; the return address and saved rbp are the frame's
//     last two words. A top pc before CodeBlob::_frame_complete_offset is in the prologue, decoded from
//     the verified entry ("push rbp", "sub rsp, n", C2's "mov [rsp+n-8], rbp", the stack bang, nops;
//     the caller's rbp is in rbp until it is stored); a top pc at "pop rbp",
//     "ret" or the return poll ("cmp rsp, [r15+off]; ja") is in the epilogue. A return address equal
//     to the nmethod's deopt handler is a deoptimised frame, whose original pc is saved at
//     sp + nmethod::_orig_pc_offset. Inlined frames come from the PcDesc scopes
//     (vmstructs.CodeCache.Scopes): for the top frame the first PcDesc after the pc, as HotSpot's
//     forte.cpp takes it, for return addresses the PcDesc at the pc.
//   - Stubs with a frame size unwind like compiled frames; frameless ones (StubRoutines, vtable and
//     itable stubs, adapters, C1's register-pushing stubs) and stubs sampled in their prologue or
//     epilogue (most runtime stubs never say where their frame is complete) by the first word above
//     sp that is the return address of a direct call into the stub ("call rel32" at the return
//     address minus 5, aimed at this blob at or before the pc); else by the bytes at the pc ("push
//     rbp", "mov rbp, rsp", "ret"), a frame built by "enter", or the return address at sp, whichever
//     leads back into code.
//   - Native code (libjvm, libc, JNI libraries, the vDSO): each frame is unwound by its call frame
//     information, the .eh_frame (and .eh_frame_hdr index) of its file or of the vDSO image read from
//     the process (cfi.go: the CFA and register rules of DWARF 4 section 6.4, expressions included, as
//     the PLT and glibc's signal trampoline use them), over the sample's own stack copy. So the Java
//     frames found below native code are those the thread had when it was sampled: the thread's frame
//     anchor (JavaThread::_anchor, its last Java frame) changes with every call into the VM or native
//     code, and a sample walked after it was taken (perf's, from a ring buffer; USDT's) must not read
//     it (walking by the live anchor put another call's Java native method above 93-96% of a thread's
//     write and stat samples). Only a thread walked while it stays stopped (Sample.Stopped: StopThread, core
//     files) may fall back to its anchor where call frame information is missing; frame pointers are
//     the last resort. A return address outside executable code (a data mapping: the CDS archive, the
//     modules image; a stale word) ends the stack (ReasonBadReturn); a thread's outermost frame (clone3,
//     _start: an undefined return address) is its root, also for threads that run no Java code.
//   - Entry frames: the JavaCallWrapper at fp + frame::entry_frame_call_wrapper_offset words holds the
//     anchor of the Java frames below the VM's own; a null anchor sp is the thread's root, where a
//     complete walk ends.
//
// The walk requires the sp to grow from frame to frame and stay aligned and within 64 MiB of where it
// started, and bounds the frames (Options.MaxDepth). A stack that does not reach its root ends in a
// Broken frame whose [Reason] says why; [Walker.Counts] counts walks by reason.
//
// Names: Java frames "pkg.Class.method" (Frame.Signature has Compiler.perfmap's form with types),
// hidden classes "Name/0x<address>"; native frames their ELF symbols, C++ demangled without parameters
// (github.com/ianlancetaylor/demangle); kernel frames from /proc/kallsyms.
//
// # Sampling
//
// [Sampler] opens a perf_event_open event per thread (PERF_TYPE_SOFTWARE/PERF_COUNT_SW_CPU_CLOCK, so it
// needs no hardware PMU) with PERF_SAMPLE_IP|TID|TIME|CALLCHAIN|REGS_USER|STACK_USER, the user
// registers ax, bx, bp, sp, ip, r13 and a 32 KiB copy of the user stack (Jetty's request threads under
// load: 99.9% of stacks within 16 KiB, all within 32 KiB), and reads the ring buffers every 10 ms, or
// more often at high rates (include/uapi/linux/perf_event.h, tools/perf/design.txt). New threads are
// found by polling /proc/<pid>/task. Samples are walked as soon as they are read, before the code they
// ran can be unloaded. Reads below the sampled sp are refused (that memory was dead at the sample).
// Frames beyond the copy are read from the live stack only while the copy's last 64 bytes, and the
// first 64 bytes of the frame that reaches beyond it, are still there (a frame that returned or ran on
// would have changed them; the end of the copy alone may lie in a large stack buffer nobody wrote
// since, as JDK 11's socket natives keep); else the stack ends in ReasonTruncated, as does a walk that
// fails on words read there. Deep native stacks (C2 compiling while the JIT warms up) can need a bigger copy
// (SamplerOptions.StackBytes).
//
// # Stopped threads
//
// [StopThread] stops one thread with PTRACE_SEIZE and PTRACE_INTERRUPT, reads its registers, runs a
// callback and detaches, passing on a signal the thread was receiving. It always detaches: on a panic
// in the callback, and, if the thread does not stop in time, by letting the tracing OS thread exit,
// which makes the kernel detach it.
//
// # Compatibility
//
// x86-64 only (perf register layout, interpreter frame slots, instruction patterns); other platforms
// build and return ErrNotSupported from StopThread and Profile. Tested on Linux 6.18 with
// Debian's OpenJDK 11.0.24 (bullseye) and 17.0.15, Debian trixie's OpenJDK 21 and 25, and Temurin
// 25.0.3, without -XX:+PreserveFramePointer and without -XX:+DebugNonSafepoints; glibc 2.36 (the host,
// JDK 11 included) and 2.41 (trixie). Differences handled: JDK 11's return poll ("mov r10, [r15+off]; test [r10], eax") and JDK 16+'s
// ("cmp rsp, [r15+off]; ja"); the reserved-stack check in the epilogue of @ReservedStackAccess methods;
// C1's prologue pushes rbp, C2's stores it after "sub rsp"; JDK 17 keeps the deopt handler as a pointer
// (CompiledMethod::_deopt_handler_begin), JDK 23+ as an offset (nmethod::_deopt_handler_offset); JDK
// 21+ compiles an nmethod entry barrier into every prologue, after "sub rsp" and before the frame is
// complete, whose stub pushes a cookie before "enter"; AccessFlags is 4 bytes on 17 and 2 on 25. JDK 8's
// interpreter keeps the bcp at fp-56 and sometimes a bci in it; that layout is not handled. Virtual
// threads' frames are walked into their carrier thread's.
//
// Measured on the Unwind workload (testdata of internal/testutil: compiled recursion, compiled and
// interpreted code calling each other, the SHA-256 intrinsic stub, megamorphic calls, a sleeping
// thread): the stacks of ptrace-stopped threads equal `jhsdb jstack --pid` of the same stopped JVM in
// every frame below the top compiled frame, where jhsdb could walk them (it prints no frames for a
// thread in a stub); jhsdb takes the debug information at or before a top compiled pc, HotSpot after
// it, so top compiled frames may differ in line and inlining. Over 99.5% of perf samples reach the
// thread root on JDK 11, 17, 21 and 25, of the Unwind workload's threads and of every thread of the
// Demo workload (GC, compiler and VM threads to their start). A thread alternating stat, write and
// LockSupport.parkNanos (the Syscalls workload): no system call sample under another call's native
// method on any of them (checked against perf's kernel frames of the same sample). Stacks walked in a
// gcore core file equal, frame by frame, those of the same ptrace-stopped threads walked live just
// before (JDK 17 and 25). A sampled pc in the code cache that is in no blob any more ends the stack in
// a code-unloaded frame (the code was freed since the sample); code replaced by another blob at the
// same address is not detected.
//
// # Recorded fixtures
//
// testdata/walk-jdk*.gob.gz are live samples of the Unwind workload (ptrace-stopped and perf) with
// every byte the walker read while walking them, the VMStructs table and the stacks it produced
// (record_test.go; `go test -run TestReplay -record` records them again). Replaying them must give
// the same stacks; FuzzWalk mutates their registers and stacks, and BenchmarkWalk measures the
// walker's throughput on them (scripts/bench-profile: about 120-300k stacks/s on one core, memory
// served from the image, depending on the load of the machine).
package unwind
