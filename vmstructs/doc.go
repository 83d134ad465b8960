// Package vmstructs reads a HotSpot JVM's own data structures from outside the process, live or from
// a core file, with nothing running in the JVM and without stopping it.
//
// HotSpot describes itself in four tables exported from libjvm.so (src/hotspot/share/runtime/
// vmStructs.{hpp,cpp}): gHotSpotVMStructs (type, field, C++ type string, static?, offset or address),
// gHotSpotVMTypes (type, superclass, size, integer/oop/unsigned), gHotSpotVMIntConstants and
// gHotSpotVMLongConstants. The entry layouts are themselves described by exported symbols
// (gHotSpotVMStructEntryTypeNameOffset, ...ArrayStride, ...), which live in .bss and are computed by
// static initialisers: they are read from the process's memory, never from the file. The Serviceability
// Agent (jhsdb) reads the same tables.
//
// # Layers
//
//   - [Memory]: ReadAt over a live process (/proc/<pid>/mem, process_vm_readv), a core file, or
//     recorded bytes ([Bytes]) for tests and fuzzing.
//   - [ReadTable]: the four tables, parsed as untrusted input (bounded strides, entry counts and
//     string lengths; fuzzed).
//   - [Open] / [OpenCoreFile]: libjvm.so found in /proc/<pid>/maps (or the core's file notes) and
//     opened through /proc/<pid>/root, or /proc/<pid>/map_files where that path is not the mapped file
//     (a container entered by chroot, whose maps show the host's path; a deleted library), so JVMs in
//     containers work from the host (internal/rootfs.OpenMapped); .dynsym gives the tables, .symtab
//     (loaded lazily) the few statics HotSpot does not export (both read by internal/elfsym).
//   - A typed layer: every view resolves the fields it needs by name with aliases for renamed ones
//     ("nmethod|CompiledMethod", "_code_begin|_code_offset"), reads each field with the width of its
//     own C++ type from the types table, and reports what this JVM lacks as a [MissingError] for that
//     view only. Capabilities come from the presence of fields, not from version numbers.
//
// # Flags
//
// [JVM.Flags] reads the JVM's -XX flags the way `jcmd <pid> VM.flags -all` prints them (type, value,
// kinds, origin), plus the locked diagnostic/experimental and the develop/notproduct flags jcmd omits.
// Entries: the static JVMFlag::flags (JVMFlag*) and JVMFlag::numFlags, and per entry JVMFlag::_addr,
// _name, _flags (JVMFlag::Flags) and _type: the FlagType enum (bool, int, uint, intx, uintx, uint64_t,
// size_t, double, ccstr, ccstrlist) from JDK 16, the type's name as a const char* before. JDK 16+
// export JVMFlagOrigin::* constants, JVMFlag::VALUE_ORIGIN_MASK and JVMFlag::WAS_SET_ON_COMMAND_LINE;
// JDK 11 exports none, and its JVMFlag::Flags enum (origins in bits 0-3, default 0 ... jimage 8,
// ORIG_COMMAND_LINE bit 17) is taken from its jvmFlag.hpp. The kind bits are not exported and moved:
// JDK 11 has product 4, manageable 5, diagnostic 6, experimental 7, notproduct 8, develop 9, pd 10,
// read-write 11 (printed "rw"), C1 12, C2 13, ARCH 14, lp64_product 15, JVMCI 16; JDK 17 dropped
// read-write: C1 11, C2 12, ARCH 13, lp64_product 14, JVMCI 15; JDK 21 and 25 dropped notproduct, so
// develop is 8 and pd through JVMCI are 9-14 (derived from VM.flags -all on live JVMs; other releases
// are decoded only when UseCompressedOops, {lp64_product} on 11 and {product lp64_product} later,
// identifies the layout). On 11, 17, 21 and 25, `jvmkit flags` prints every line of VM.flags -all
// byte for byte and in order (diagnostic and experimental flags unlocked). [JVM.SetBoolFlag] writes one bool flag's byte through a
// [Writer] the caller opens on purpose ([OpenProcessMemoryWriter]) and returns the old value; it refuses
// non-bool and develop/notproduct flags and addresses outside libjvm's writable data. The JVM reads flags
// without synchronisation; a byte store is atomic on x86-64 and arm64, but many flags are read only at
// start-up, and flipping flags that chose a GC or a heap layout can crash the JVM: manageable flags are
// the ones meant to change at run time.
//
// # Code cache
//
// [JVM.CodeCache], [JVM.CodeBlobs], [JVM.FindBlob] and [JVM.MethodName] read the code heaps:
// CodeCache::_heaps (GrowableArrayBase::_len, GenericGrowableArray before JDK 16, GrowableArray<int>::_data),
// CodeCache::_low_bound/_high_bound, CodeHeap::{_memory, _segmap, _log2_segment_size},
// VirtualSpace::{_low, _high, _low_boundary, _high_boundary}, sizeof(HeapBlock) and
// HeapBlock::Header::{_length, _used}. Block starts come from the segment map (0 at a block start, a
// backwards hop count inside a block, 0xFF for free space); FindBlob follows at most 64 hops. JDK 17 keeps
// the code range in the pointers _code_begin/_code_end and a blob's C++ class is recognised by its vtable
// pointer against libjvm's _ZTV* symbols; JDK 23+ stores _code_offset/_data_offset relative to the blob
// and a _kind byte (CodeBlobKind::* constants). HeapBlock shrank from 16 to 8 bytes (_length size_t ->
// uint32_t), _frame_complete_offset became int16, _comp_level one byte, the verified entry a u2 offset.
// Method names follow Method::external_name as Compiler.perfmap prints them: Method::_constMethod ->
// ConstMethod::{_constants, _name_index, _signature_index} -> constant-pool slots (cp +
// sizeof(ConstantPool) + 8*index, low tag bit masked) and ConstantPool::_pool_holder -> Klass::_name ->
// Symbol::{_length, _body}; JDK 11 names a VM-anonymous class (lambdas, LambdaForms:
// InstanceKlass::_misc_is_anonymous) "Name/0x<address of its InstanceKlass>", as Class.getName, stack
// traces and Compiler.codelist do (its JVMTI and JFR use the mirror's identity hash). [CodeCache.Scopes]
// decodes an nmethod's inlining chain from PcDesc::{_pc_offset, _scope_decode_offset} and UNSIGNED5 scope
// records (sender offset, metadata index, bci + 1; JDK 20+ excludes the zero byte): on JDK <= 22 at
// offsets from the nmethod, on JDK 25 in nmethod::_immutable_data (PcDescs first) with the metadata at
// CodeBlob::_mutable_data + _relocation_size. Line numbers come from the compressed table after the
// bytecodes. [CodeCache.Dead] reads nmethod::_state (a signed char): up to JDK 19 an nmethod made zombie
// (3) or unloaded (4) stays in the code cache until the sweeper frees it; JDK 20 removed the sweeper and
// those states (not_installed -1, in_use 0, not_entrant 1), and frees unloaded nmethods itself.
//
// # Threads
//
// [JVM.Threads] lists the Java threads without stopping the JVM: ThreadsSMRSupport::_java_thread_list
// -> ThreadsList::{_length, _threads} (exported from JDK 12). The reader holds no hazard pointer, so it
// re-reads the list pointer after copying the array (retrying if the list was replaced) and drops
// threads that left the list meanwhile. JDK 11 does not export the SMR list but still links every
// JavaThread into Threads::_thread_list through JavaThread::_next (newest first): that list is walked
// until two walks agree with each other and with Threads::_number_of_threads (under heavy churn, the
// threads both of the last two walks met), each thread checked as it is read. Per JavaThread: the tid from OSThread::_thread_id via JavaThread::_osthread (17)
// or Thread::_osthread (25), the state from JavaThread::_thread_state (named by the _thread_* int
// constants), the last Java frame from JavaThread::_anchor. Name, Java id, daemon and Thread.State come
// from the java.lang.Thread object: JavaThread::_threadObj (an OopHandle) -> Thread.name ->
// String.value/coder. Those Java field offsets are not in VMStructs; they are libjvm statics
// (java_lang_Thread::_name_offset, java_lang_String::_value_offset, ...) found by their mangled names in
// .symtab; on JDK 19+ daemon and status live in Thread.FieldHolder. References follow UseCompressedOops
// with CompressedOops::_narrow_oop._base/_shift (17) or CompressedOops::_base/_shift (21+); generational
// ZGC pointers are uncoloured (x86-64 layout). Without .symtab a live JVM's threads are named from
// /proc/<pid>/task/<tid>/comm (15 bytes, marked truncated); a core's are left unnamed. TID is the id in
// the JVM's own pid namespace; HostTID maps it through NSpid for live JVMs.
//
// # Core files
//
// [OpenCore] reads the same tables from an ELF core file written by gdb's gcore or by the kernel
// (64-bit little-endian; notes NT_FILE, NT_PRSTATUS, NT_PRPSINFO, NT_AUXV as in include/uapi/linux/elf.h
// and fs/binfmt_elf.c). libjvm.so is found among the core's file mappings and opened under
// CoreOptions.Root (the container's root for a JVM that ran in one); its build ID must match the copy
// of libjvm's first page in the core. Memory comes from the core's PT_LOAD segments; read-only file
// mappings the core left out are read from the mapped file, never a writable one. HotSpot sets its
// coredump_filter to 0x3f, so gcore normally dumps libjvm whole, including PROT_NONE reservations (a
// default JVM's core is several GB); with the kernel's default 0x33, unmodified file mappings (libjvm's
// text and .rodata, where the VMStructs names are) are left out and read from the file. JVM.PID is 0
// for a core; the dumped pid, the threads and their registers are on JVM.Core(). [Cached] puts a
// bounded LRU page cache in front of any Memory.
//
// # Change log of the layouts we read (x86-64)
//
//	JDK 11 (Debian 11.0.24): 837 fields, 755 types, 417 int and 47 long constants.
//	    No ThreadsSMRSupport entries: Threads::_thread_list + JavaThread::_next, _number_of_threads;
//	    JavaThread::_osthread; Universe::_narrow_oop._base/_shift (not CompressedOops);
//	    java_lang_String::value_offset/coder_offset without the underscore (.symtab);
//	    JVMFlag::_type const char*, no JVMFlagOrigin constants, kind bits as above;
//	    GenericGrowableArray::_len; CodeBlob layout as in 17 (_name +96, _code_begin pointer);
//	    Symbol::_length_and_refcount; VM-anonymous classes (InstanceKlass::_misc_is_anonymous);
//	    ZGC experimental. JVMTI's CompiledMethodLoad reports an nmethod's instructions only
//	    (insts_begin, up to nmethod::_stub_offset), not our (and Compiler.perfmap's) code range.
//	JDK 17 (OpenJDK 17.0.15): 788 fields, 768 types, 398 int and 86 long constants.
//	    CodeBlob::_name +96, _code_begin (pointer), HeapBlock::Header::_length size_t;
//	    CompiledMethod::_method; JavaThread::_osthread; JDK_Version::_current present;
//	    CompressedOops::_narrow_oop._base; ThreadsSMRSupport::_java_thread_list;
//	    nmethod::_state with the sweeper's zombie 3 and unloaded 4 (as in 11).
//	JDK 21 (Debian 21.0.13): 826 fields, 802 types, 352 int and 97 long constants.
//	    CodeBlob::_name +64, _code_begin +8 (pointer); still CompiledMethod::_method,
//	    JavaThread::_osthread, HeapBlock::Header::_length size_t, CompressedOops::_narrow_oop._base;
//	    java.lang.Thread's daemon and status in Thread.FieldHolder (JDK 19+); JVMFlag kinds as 25;
//	    Compiler.perfmap takes no file name (JDK 22+ do); no sweeper (JDK 20+): nmethod::_state
//	    -1 to 1, no zombie or unloaded nmethods.
//	JDK 25 (Temurin 25.0.3; Debian 25.0.5): 585-588 fields, 335-336 types, 346 int and 97 long
//	    constants. CodeBlob::_name +8, _code_offset (int), _kind + CodeBlobKind::* constants (JDK 23+),
//	    HeapBlock::Header::_length uint32_t, _frame_size/_frame_complete_offset int16_t;
//	    nmethod::_method (CompiledMethod merged back, JDK 23), nmethod::_immutable_data;
//	    Thread::_osthread; CompressedOops::_base/_shift flattened;
//	    JDK_Version::_current absent (Abstract_VM_Version::_vm_major_version instead).
//
// Tested live on these four, on the host and (21, 25) in containers of a Debian trixie root entered
// by podman/runc, pivot_root and chroot, with the container's own jcmd as the oracle. JDK 8 is not
// available on our machines; its differences are documented in shared/reference/vmstructs-unwind.md
// and handled by aliases where known, untested.
package vmstructs
