// Package elfsym reads the symbol tables (.dynsym, .symtab) and loadable segments (PT_LOAD) of an ELF
// file: the one reader behind vmstructs (the addresses of libjvm's VMStructs tables and other data
// symbols, where a mapping of the file is loaded), unwind (the functions that native frames are named
// after, which part of a file is code) and usdt (the file offsets of probe sites and semaphores, the
// variables that argument specs name).
//
// Headers and sections come from debug/elf; the symbol tables are scanned raw (Elf32_Sym, Elf64_Sym),
// because debug/elf's Symbols allocates a string and a Symbol for each of libjvm's 58-70k entries,
// where a caller keeps a few hundred (vmstructs: the dynamic symbols) or ten thousand (its data
// symbols): a name is only read for a symbol that is kept, as a substring of one copy of the string
// table. debug/elf has panicked on corrupt input before; here a panic becomes ErrMalformed.
//
// # Format
//
// The System V ABI, "Object Files": the ELF header, section headers (a symbol table's sh_link names its
// string table), symbol table entries (st_name, st_info's type in its low four bits, st_shndx,
// st_value, st_size; entry 0 is the null symbol) and program headers (PT_LOAD: p_offset, p_vaddr,
// p_filesz, p_flags). A symbol's name is a NUL-terminated string at st_name in the string table; one
// out of range or unterminated reads as "", as in debug/elf.
//
// # Compatibility
//
// 32- and 64-bit files of either byte order. Tested against debug/elf's answers on the JDKs' libjvm.so
// (17: 58k symbols, 25: 70k) and glibc on linux/amd64.
package elfsym
