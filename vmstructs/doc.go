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
//     opened through /proc/<pid>/root, so JVMs in containers work from the host; .dynsym gives the
//     tables, .symtab (loaded lazily) the few statics HotSpot does not export.
//   - A typed layer: every view resolves the fields it needs by name with aliases for renamed ones
//     ("nmethod|CompiledMethod", "_code_begin|_code_offset"), reads each field with the width of its
//     own C++ type from the types table, and reports what this JVM lacks as a [MissingError] for that
//     view only. Capabilities come from the presence of fields, not from version numbers.
//
// # Flags
//
// [JVM.Flags] reads the JVM's -XX flags the way `jcmd <pid> VM.flags -all` prints them (type, value,
// kinds, origin), plus the locked diagnostic/experimental and the develop/notproduct flags jcmd omits.
// Entries (JDK 17 and 25 alike): the static JVMFlag::flags (JVMFlag*) and JVMFlag::numFlags, and per
// entry JVMFlag::_addr, _name, _flags (JVMFlag::Flags) and _type (the FlagType enum: bool, int, uint,
// intx, uintx, uint64_t, size_t, double, ccstr, ccstrlist); JVMFlagOrigin::* constants,
// JVMFlag::VALUE_ORIGIN_MASK and JVMFlag::WAS_SET_ON_COMMAND_LINE. The kind bits are not exported and
// moved: JDK 17 has product 4, manageable 5, diagnostic 6, experimental 7, notproduct 8, develop 9, pd
// 10, C1 11, C2 12, ARCH 13, lp64_product 14, JVMCI 15; JDK 25 dropped notproduct, so develop is 8 and
// pd through JVMCI are 9-14 (derived from VM.flags -all on live JVMs; other releases are decoded only
// when UseCompressedOops identifies the layout). [JVM.SetBoolFlag] writes one bool flag's byte through a
// [Writer] the caller opens on purpose ([OpenProcessMemoryWriter]) and returns the old value; it refuses
// non-bool and develop/notproduct flags and addresses outside libjvm's writable data. The JVM reads flags
// without synchronisation; a byte store is atomic on x86-64 and arm64, but many flags are read only at
// start-up, and flipping flags that chose a GC or a heap layout can crash the JVM: manageable flags are
// the ones meant to change at run time.
//
// # Change log of the layouts we read (x86-64)
//
//	JDK 17 (OpenJDK 17.0.15): 788 fields, 768 types, 398 int and 86 long constants.
//	    CodeBlob::_name +96, _code_begin (pointer), HeapBlock::Header::_length size_t;
//	    CompiledMethod::_method; JavaThread::_osthread; JDK_Version::_current present.
//	JDK 25 (Temurin 25.0.3): 585 fields, 335 types, 346 int and 97 long constants.
//	    CodeBlob::_name +8, _code_offset (int), _kind + CodeBlobKind::* constants (JDK 23+),
//	    HeapBlock::Header::_length uint32_t, _frame_size/_frame_complete_offset int16_t;
//	    nmethod::_method (CompiledMethod merged back, JDK 23); Thread::_osthread;
//	    JDK_Version::_current absent (Abstract_VM_Version::_vm_major_version instead).
//
// JDK 8, 11 and 21 are not available on our machines; their differences are documented in
// shared/reference/vmstructs-unwind.md and handled by aliases where known, untested.
package vmstructs
