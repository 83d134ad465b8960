// Package usdt reads the statically defined tracing probes of ELF files (USDT: SystemTap SDT notes, as
// HotSpot's libjvm.so, Python and some libc builds carry them) and traces them in running processes with
// uprobes and eBPF. It knows nothing about HotSpot: the caller says which probes to trace and which of
// their arguments are strings.
//
// # Notes
//
// sys/sdt.h (systemtap-sdt-dev) compiles each probe site to a nop and an ELF note in .note.stapsdt: owner
// "stapsdt", type 3, and a desc of three address-sized words, the site's pc, the link-time address of the
// .stapsdt.base section and the address of the probe's semaphore (0 for none), followed by three
// NUL-terminated strings, provider, name and arguments (https://sourceware.org/systemtap/wiki/UserSpaceProbeImplementation).
// ParseNotes keeps every site: a probe in an inlined function, or fired from several places, has one note
// per site, and all are traced. When a prelinker moved the file, .stapsdt.base's address differs from the
// note's, and pc and semaphore move by the difference. A uprobe is attached at a file offset, so PC and
// Semaphore are converted through the PT_LOAD segment that contains them (libjvm.so maps its text at
// offset = address; a non-PIE executable does not).
//
// Semaphores are 16-bit counters in the .probes section; a program tests its semaphore before it computes
// expensive arguments. Attach passes the semaphore's file offset as the uprobe's reference counter offset,
// and the kernel counts it up in every process the uprobe applies to while the uprobe exists (Linux 4.20,
// commit 1cc33161a83d). HotSpot's probes have none; some of them are gated by -XX flags instead.
//
// # Argument specs
//
// Each argument is "[-]N[f]@operand": N bytes (1, 2, 4 or 8), negative when signed, f for a float, and an
// operand the compiler printed as an asm operand of the nop (constraint "nor"). x86-64 operands are in
// AT&T syntax: %reg (any of the 8/16/32/64-bit names, %ah..%dh included), $constant, disp(%base),
// disp(%base,%index,scale), and for globals sym+disp(%rip) or sym (gcc -O2). arm64 operands are reg,
// constant, [reg] and [reg, offset]. ParseArg turns a spec into an Arg; ParseNotes resolves the symbols
// from .symtab and .dynsym. Floating-point and vector registers are not in pt_regs and are refused.
//
// # Programs
//
// Attach generates one BPF program per site with cilium/ebpf's asm package (no C compiler): the uprobe
// context is struct pt_regs (arch/x86/include/asm/ptrace.h; arm64: user_pt_regs), registers are loaded
// from their slots, memory through bpf_probe_read_user, a symbol's address is its link-time address plus
// the load bias (the probe's run-time address, pt_regs ip, minus its PC), and each value is truncated to
// its size and sign-extended if signed (libbpf's arg_bitshift). The program reserves a record in a BPF
// ring buffer, fills it and submits it; when the ring is full it counts a drop in a per-CPU array, per
// site. Records are laid out as:
//
//	offset  size  field
//	0       8     time: bpf_ktime_get_ns, CLOCK_MONOTONIC (the clock of perf record -k mono and jitdump)
//	8       8     bpf_get_current_pid_tgid: tgid << 32 | tid, in the initial pid namespace
//	16      4     site index
//	20      2     faults: bit i set when argument i's memory could not be read
//	22      1     number of arguments
//	23      1     number of strings
//	24      4     flags: optional sections after the strings (bit 0 registers, bit 1 stack)
//	28      4     reserved, 0
//	32      8*n   argument values
//	...           per string: s32 bytes copied (or -errno), u32 pointer argument, StringSize bytes
//
// Strings are copied with an explicit length (HotSpot passes names as pointer and length, without a NUL),
// clamped to StringSize where the verifier can see it, or with bpf_probe_read_user_str when NUL-terminated.
// With Options.Regs (flag bit 0) the record goes on with the probed thread's pt_regs (x86-64: 21 words,
// r15 ... ss; arm64: user_pt_regs, 34 words), loaded from the context. With Options.StackSize (bit 1,
// implies bit 0) follow a u32 length, a u32 0 and up to StackSize bytes of the user stack from the
// stack pointer up: one bpf_probe_read_user of StackSize bytes, and where that fails (the stack's
// mapping ends first: the main thread's stack, or a shallow thread stack before a guard page) 1 KiB
// chunks up to the first that fails. Such records are built in a per-CPU slot of an array map and sent
// with bpf_ringbuf_output, up to the bytes copied. Options.Sample records a firing with probability
// 1/N (bpf_get_prandom_u32), so that stacks can be taken from probes that fire a million times a second.
// Readers reject records with flags they do not know. Measured on a gcc fixture (Linux 6.18): the copy
// equals the bytes of a local array at the probe, whole 16 KiB copies of deep stacks, 9-13 KiB of
// shallow ones (main thread and a pthread).
//
// Each uprobe is opened through the uprobe PMU (perf_event_open) with the target's pid, so that other
// processes mapping the same file (other JVMs on a shared machine) do not fire it, and the program checks
// the tgid as well. Files of other processes are opened through /proc/<pid>/root, so that a containerised
// process's library is found and the uprobe lands on the inode it mapped; when that path does not name
// the mapped file (deleted or replaced by an upgrade, or a container entered by chroot, whose maps show
// the host's path), through /proc/<pid>/map_files (internal/rootfs.OpenMapped, shared with vmstructs and
// unwind).
//
// # Compatibility
//
// Linux on amd64 and arm64 only (elsewhere Attach and Modules return ErrNotSupported; the parsers work
// everywhere, on ELF32/64 and either byte order). Needs Linux 5.8 for ring buffers and
// bpf_probe_read_user, the uprobe PMU (4.17) with ref_ctr_offset (4.20), and root or CAP_BPF +
// CAP_PERFMON. Tested on Linux 6.18 (x86-64) with cilium/ebpf v0.22.0, gcc 12 and systemtap-sdt-dev 4.8
// fixtures (-O0 and -O2, PIE, non-PIE, shared library), and the libjvm.so of Debian's OpenJDK 17.0.15 (531
// sites) and Temurin 25.0.3 (566 sites): every site's program passes the verifier, and
// hotspot:compiled__method__load's addresses equal Compiler.perfmap's. The arm64 code generation is
// unit-tested only.
//
// HotSpot differences that matter to callers: register assignments differ per build and per site (never
// hard-code them); JDK 25 has three object__alloc sites where JDK 17 has one; object__alloc,
// method__entry/return and monitor__* fire only with -XX:+DTraceAllocProbes, -XX:+DTraceMethodProbes and
// -XX:+DTraceMonitorProbes (JDK 17 also: -XX:+ExtendedDTraceProbes, removed in 20); compiled__method__load
// and the others fire unconditionally.
package usdt
