package vmstructs

import (
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"strings"
)

// elfSymbols reads the dynamic symbols and, when present, the data symbols of the static symbol table
// (.symtab) of an ELF file, and its PT_LOAD segments. debug/elf has panicked on corrupt input before; a panic becomes an error.
func elfSymbols(r io.ReaderAt) (syms map[string]uint64, loads []elf.ProgHeader, err error) {
	return readELF(r, true)
}

// elfDynamicSymbols is elfSymbols without .symtab: the tables' symbols are all exported, and
// libjvm's .symtab (58k symbols) costs time to read; it is loaded lazily when needed.
func elfDynamicSymbols(r io.ReaderAt) (syms map[string]uint64, loads []elf.ProgHeader, err error) {
	return readELF(r, false)
}

func readELF(r io.ReaderAt, withSymtab bool) (syms map[string]uint64, loads []elf.ProgHeader, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("vmstructs: malformed ELF file: %v", p)
		}
	}()
	f, err := elf.NewFile(r)
	if err != nil {
		return nil, nil, fmt.Errorf("vmstructs: %w", err)
	}
	defer f.Close()
	syms = map[string]uint64{}
	add := func(list []elf.Symbol) {
		for _, s := range list {
			if s.Value != 0 && s.Section != elf.SHN_UNDEF {
				if _, dup := syms[s.Name]; !dup {
					syms[s.Name] = s.Value
				}
			}
		}
	}
	dyn, derr := f.DynamicSymbols()
	add(dyn)
	serr := derr
	if withSymtab {
		serr = dataSymbols(f, syms)
	}
	if derr != nil && serr != nil {
		return nil, nil, fmt.Errorf("vmstructs: no symbol table: %w", derr)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			loads = append(loads, p.ProgHeader)
		}
	}
	return syms, loads, nil
}

// loadBias computes where the file is loaded: a mapping of the file at address start with file
// offset off belongs to the PT_LOAD segment whose page-aligned file offset is off.
func loadBias(loads []elf.ProgHeader, start, off, pageSize uint64) (uint64, error) {
	mask := ^(pageSize - 1)
	for _, p := range loads {
		if p.Off&mask == off {
			return start - p.Vaddr&mask, nil
		}
	}
	return 0, fmt.Errorf("vmstructs: no PT_LOAD segment at file offset %#x", off)
}

// dataSymbols adds the data symbols (objects and TLS: variables, vtables, static members) of f's
// .symtab to syms, without overwriting names already there. Code symbols are left out: they are most
// of libjvm's 58-70k symbols and nothing here looks them up. The table is scanned raw, which costs a
// few milliseconds where debug/elf's Symbols takes tens.
func dataSymbols(f *elf.File, syms map[string]uint64) error {
	if f.Class != elf.ELFCLASS64 {
		return errors.New("vmstructs: .symtab: not a 64-bit ELF file")
	}
	st := f.Section(".symtab")
	if st == nil || st.Type != elf.SHT_SYMTAB {
		return elf.ErrNoSymbols
	}
	if int(st.Link) >= len(f.Sections) || st.Size > maxSymtab {
		return errors.New("vmstructs: .symtab: bad string table link or size")
	}
	strs := f.Sections[st.Link]
	if strs.Size > maxSymtab {
		return errors.New("vmstructs: .strtab: too large")
	}
	tab, err := st.Data()
	if err != nil {
		return fmt.Errorf("vmstructs: .symtab: %w", err)
	}
	strData, err := strs.Data()
	if err != nil {
		return fmt.Errorf("vmstructs: .strtab: %w", err)
	}
	names := string(strData)                                      // one copy; names are substrings of it
	const entSize = 24                                            // Elf64_Sym
	for off := entSize; off+entSize <= len(tab); off += entSize { // entry 0 is the null symbol
		e := tab[off : off+entSize]
		typ := elf.SymType(e[4] & 0xf)
		shndx := elf.SectionIndex(f.ByteOrder.Uint16(e[6:8]))
		value := f.ByteOrder.Uint64(e[8:16])
		if typ != elf.STT_OBJECT && typ != elf.STT_TLS || shndx == elf.SHN_UNDEF || value == 0 {
			continue
		}
		start := int(f.ByteOrder.Uint32(e[0:4]))
		if start <= 0 || start >= len(names) {
			continue
		}
		end := strings.IndexByte(names[start:], 0)
		if end < 0 {
			continue
		}
		name := names[start : start+end]
		if _, dup := syms[name]; !dup {
			syms[name] = value
		}
	}
	return nil
}

// maxSymtab bounds .symtab and .strtab (libjvm's are 1.4 and 2.6 MB).
const maxSymtab = 256 << 20
