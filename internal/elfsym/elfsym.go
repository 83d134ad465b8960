package elfsym

import (
	"cmp"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// ErrMalformed says the file is not an ELF file debug/elf can read without panicking.
var ErrMalformed = errors.New("malformed ELF file")

// maxTable bounds a symbol table and its string table (libjvm's .symtab and .strtab are 1.4 and
// 2.6 MB).
const maxTable = 256 << 20

// File is an ELF file read for its symbols and segments.
type File struct {
	// ELF is the file's headers, for sections other packages read (unwind's .eh_frame).
	ELF *elf.File
	// Loads are the file's PT_LOAD segments.
	Loads Segments
}

// guard turns a panic of debug/elf into an error.
func guard(err *error) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("%w: %v", ErrMalformed, p)
	}
}

// Open reads r's ELF headers and its PT_LOAD segments.
func Open(r io.ReaderAt) (_ *File, err error) {
	defer guard(&err)
	f, err := elf.NewFile(r)
	if err != nil {
		return nil, err
	}
	var loads Segments
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			loads = append(loads, p.ProgHeader)
		}
	}
	return &File{ELF: f, Loads: loads}, nil
}

// Symbols returns the file's defined dynamic symbols (.dynsym) by name and, with data, the defined
// data symbols (objects and TLS: variables, vtables, static members) of its static symbol table
// (.symtab); the first of a name wins, .dynsym's first. .symtab's code symbols are left out: they are
// most of libjvm's symbols and vmstructs looks none up. It fails only when neither table can be read.
func (f *File) Symbols(data bool) (_ map[string]uint64, err error) {
	defer guard(&err)
	syms := map[string]uint64{}
	add := func(name string, value, _ uint64) {
		if _, dup := syms[name]; !dup && name != "" {
			syms[name] = value
		}
	}
	derr := f.scan(elf.SHT_DYNSYM, nil, func(_ elf.SymType, shndx elf.SectionIndex, value uint64) bool {
		return shndx != elf.SHN_UNDEF && value != 0
	}, add)
	serr := derr
	if data {
		serr = f.scan(elf.SHT_SYMTAB, nil, func(typ elf.SymType, shndx elf.SectionIndex, value uint64) bool {
			return (typ == elf.STT_OBJECT || typ == elf.STT_TLS) && shndx != elf.SHN_UNDEF && value != 0
		}, add)
	}
	if derr != nil && serr != nil {
		return nil, fmt.Errorf("no symbol table: %w", derr)
	}
	return syms, nil
}

// Defined returns every defined symbol of .symtab and .dynsym by name, whatever its type (usdt: the
// variables that argument specs name), and the names defined more than once with different values
// (local symbols of several objects), which name no one address. A table the file lacks, or cannot be
// read, adds nothing.
func (f *File) Defined() (_ map[string]uint64, ambiguous map[string]bool, err error) {
	defer guard(&err)
	syms, ambiguous := map[string]uint64{}, map[string]bool{}
	for _, typ := range []elf.SectionType{elf.SHT_SYMTAB, elf.SHT_DYNSYM} {
		_ = f.scan(typ, nil, func(_ elf.SymType, shndx elf.SectionIndex, _ uint64) bool {
			return shndx != elf.SHN_UNDEF
		}, func(name string, value, _ uint64) {
			if name == "" {
				return
			}
			if old, ok := syms[name]; ok && old != value {
				ambiguous[name] = true
			}
			syms[name] = value
		})
	}
	return syms, ambiguous, nil
}

// Func is a function symbol.
type Func struct {
	Addr, Size uint64
	Name       string // as in the table (C++ names mangled)
}

// Funcs are function symbols sorted by address, one an address.
type Funcs []Func

// Funcs returns the function symbols of .symtab and .dynsym, the first at an address (.symtab's
// first). A table the file lacks, or cannot be read, adds nothing.
func (f *File) Funcs() (_ Funcs, err error) {
	defer guard(&err)
	var fs Funcs
	// Most of a library's symbols are functions. (Sized by the table read, not by its header: a corrupt
	// header's size would allocate gigabytes.)
	grow := func(entries int) { fs = slices.Grow(fs, entries/2) }
	for _, typ := range []elf.SectionType{elf.SHT_SYMTAB, elf.SHT_DYNSYM} {
		_ = f.scan(typ, grow, func(t elf.SymType, _ elf.SectionIndex, value uint64) bool {
			return t == elf.STT_FUNC && value != 0
		}, func(name string, value, size uint64) {
			fs = append(fs, Func{Addr: value, Size: size, Name: name})
		})
	}
	// Sorted by address and then table order, to keep the first of an address (.dynsym repeats
	// .symtab's exported functions); keys without pointers sort several times faster than Funcs.
	type key struct {
		addr uint64
		i    int
	}
	keys := make([]key, len(fs))
	for i, fn := range fs {
		keys[i] = key{fn.Addr, i}
	}
	slices.SortFunc(keys, func(a, b key) int {
		if c := cmp.Compare(a.addr, b.addr); c != 0 {
			return c
		}
		return cmp.Compare(a.i, b.i)
	})
	out := make(Funcs, 0, len(fs))
	for _, k := range keys {
		if len(out) == 0 || out[len(out)-1].Addr != k.addr {
			out = append(out, fs[k.i])
		}
	}
	return out, nil
}

// Find returns the index of the function at addr: the last one starting at or below it, unless its
// size says addr is past its end.
func (fs Funcs) Find(addr uint64) (int, bool) {
	i, found := slices.BinarySearchFunc(fs, addr, func(f Func, a uint64) int { return cmp.Compare(f.Addr, a) })
	if !found {
		i--
	}
	if i < 0 {
		return 0, false
	}
	if s := &fs[i]; s.Size > 0 && addr >= s.Addr+s.Size {
		return 0, false
	}
	return i, true
}

// scan reads the first symbol table of type typ, calls grow (if not nil) with its number of entries,
// and calls add with the name of each symbol keep
// accepts (names are resolved only for those: most of a table is left out, and the name lookup is
// most of the scan's cost). Names are substrings of one copy of the string table.
func (f *File) scan(typ elf.SectionType, grow func(entries int), keep func(elf.SymType, elf.SectionIndex, uint64) bool,
	add func(name string, value, size uint64)) error {
	ef := f.ELF
	st := ef.SectionByType(typ)
	if st == nil {
		return elf.ErrNoSymbols
	}
	if int(st.Link) >= len(ef.Sections) || st.Size > maxTable {
		return fmt.Errorf("symbol table %s: bad string table link or size", st.Name)
	}
	strs := ef.Sections[st.Link]
	if strs.Size > maxTable {
		return fmt.Errorf("string table %s: too large", strs.Name)
	}
	tab, err := st.Data()
	if err != nil {
		return fmt.Errorf("symbol table %s: %w", st.Name, err)
	}
	strData, err := strs.Data()
	if err != nil {
		return fmt.Errorf("string table %s: %w", strs.Name, err)
	}
	names := string(strData)
	bo := ef.ByteOrder
	entSize := elf.Sym64Size
	if ef.Class == elf.ELFCLASS32 {
		entSize = elf.Sym32Size
	}
	if grow != nil {
		grow(len(tab) / entSize)
	}
	for off := entSize; off+entSize <= len(tab); off += entSize { // entry 0 is the null symbol
		e := tab[off : off+entSize]
		var nameOff uint32
		var info uint8
		var shndx uint16
		var value, size uint64
		if entSize == elf.Sym64Size {
			nameOff, info, shndx = bo.Uint32(e[0:4]), e[4], bo.Uint16(e[6:8])
			value, size = bo.Uint64(e[8:16]), bo.Uint64(e[16:24])
		} else {
			nameOff, value, size = bo.Uint32(e[0:4]), uint64(bo.Uint32(e[4:8])), uint64(bo.Uint32(e[8:12]))
			info, shndx = e[12], bo.Uint16(e[14:16])
		}
		if !keep(elf.SymType(info&0xf), elf.SectionIndex(shndx), value) {
			continue
		}
		add(name(names, nameOff), value, size)
	}
	return nil
}

// name reads the string at off, "" when it is out of range or unterminated (as debug/elf does).
func name(names string, off uint32) string {
	if int64(off) >= int64(len(names)) {
		return ""
	}
	s := names[off:]
	end := strings.IndexByte(s, 0)
	if end < 0 {
		return ""
	}
	return s[:end]
}

// Segments are a file's PT_LOAD segments.
type Segments []elf.ProgHeader

// Bias computes where the file is loaded: a mapping of the file at address start with file offset
// off belongs to the segment whose page-aligned file offset is off.
func (s Segments) Bias(start, off, pageSize uint64) (uint64, error) {
	mask := ^(pageSize - 1)
	for _, p := range s {
		if p.Off&mask == off {
			return start - p.Vaddr&mask, nil
		}
	}
	return 0, fmt.Errorf("no PT_LOAD segment at file offset %#x", off)
}

// Offset turns one of the file's own addresses into the offset in the file it is loaded from: false
// when no segment loads it from the file (bss, or no segment at all).
func (s Segments) Offset(vaddr uint64) (uint64, bool) {
	for _, p := range s {
		if vaddr >= p.Vaddr && vaddr-p.Vaddr < p.Filesz {
			return vaddr - p.Vaddr + p.Off, true
		}
	}
	return 0, false
}

// Vaddr turns a file offset into the file's own address, and says whether its segment is code.
func (s Segments) Vaddr(off uint64) (addr uint64, exec, ok bool) {
	for _, p := range s {
		if off >= p.Off && off < p.Off+p.Filesz {
			return off - p.Off + p.Vaddr, p.Flags&elf.PF_X != 0, true
		}
	}
	return 0, false, false
}
