package vmstructs

import (
	"debug/elf"
	"fmt"
	"io"
)

// elfSymbols reads the dynamic and, when present, static symbol tables of an ELF file and its
// PT_LOAD segments. debug/elf has panicked on corrupt input before; a panic becomes an error.
func elfSymbols(r io.ReaderAt) (syms map[string]uint64, loads []elf.ProgHeader, err error) {
	return readELF(r, true)
}

// elfDynamicSymbols is elfSymbols without .symtab: the tables' symbols are all exported, and
// libjvm's .symtab (58k symbols) costs ~17 ms to read; it is loaded lazily when needed.
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
		var st []elf.Symbol
		st, serr = f.Symbols()
		add(st)
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
