package usdt

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// testNote is a stapsdt note for buildELF.
type testNote struct {
	pc, base, sema       uint64
	provider, name, args string
}

// elfLayout describes a synthetic ELF file: one PT_LOAD segment of the whole file at vaddr, a .note.stapsdt
// section, a .stapsdt.base section at base (none if 0) and a symbol table.
type elfLayout struct {
	class   elf.Class
	order   binary.ByteOrder
	machine elf.Machine
	vaddr   uint64
	base    uint64
	notes   []testNote
	syms    map[string]uint64
	// rawNotes replaces the encoded notes (malformed input).
	rawNotes []byte
}

// buildELF writes a minimal ELF file with the layout: enough for debug/elf and ParseELF, nothing more.
func buildELF(l elfLayout) []byte {
	is64 := l.class == elf.ELFCLASS64
	putAddr := func(b *bytes.Buffer, v uint64) {
		if is64 {
			_ = binary.Write(b, l.order, v)
		} else {
			_ = binary.Write(b, l.order, uint32(v))
		}
	}
	pad4 := func(b *bytes.Buffer) {
		for b.Len()%4 != 0 {
			b.WriteByte(0)
		}
	}

	var notes bytes.Buffer
	if l.rawNotes != nil {
		notes.Write(l.rawNotes)
	}
	for _, n := range l.notes {
		var desc bytes.Buffer
		putAddr(&desc, n.pc)
		putAddr(&desc, n.base)
		putAddr(&desc, n.sema)
		desc.WriteString(n.provider + "\x00" + n.name + "\x00" + n.args + "\x00")
		_ = binary.Write(&notes, l.order, [3]uint32{8, uint32(desc.Len()), noteType})
		notes.WriteString("stapsdt\x00")
		notes.Write(desc.Bytes())
		pad4(&notes)
	}

	// Symbol table: null symbol, then the names in sorted order.
	var strtab bytes.Buffer
	strtab.WriteByte(0)
	var symtab bytes.Buffer
	symSize := 16
	if is64 {
		symSize = 24
	}
	symtab.Write(make([]byte, symSize))
	names := make([]string, 0, len(l.syms))
	for n := range l.syms {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		nameOff := uint32(strtab.Len())
		strtab.WriteString(n + "\x00")
		info := byte(elf.STB_GLOBAL)<<4 | byte(elf.STT_OBJECT)
		if is64 {
			_ = binary.Write(&symtab, l.order, struct {
				Name  uint32
				Info  uint8
				Other uint8
				Shndx uint16
				Value uint64
				Size  uint64
			}{nameOff, info, 0, 1, l.syms[n], 8})
		} else {
			_ = binary.Write(&symtab, l.order, struct {
				Name  uint32
				Value uint32
				Size  uint32
				Info  uint8
				Other uint8
				Shndx uint16
			}{nameOff, uint32(l.syms[n]), 8, info, 0, 1})
		}
	}

	shstr := "\x00.note.stapsdt\x00.stapsdt.base\x00.symtab\x00.strtab\x00.shstrtab\x00"
	nameOf := func(s string) uint32 { return uint32(strings.Index(shstr, "\x00"+s+"\x00") + 1) }

	ehSize, phSize, shSize := 52, 32, 40
	if is64 {
		ehSize, phSize, shSize = 64, 56, 64
	}
	// Layout: header, program header, notes, base byte, symtab, strtab, shstrtab, section headers.
	off := ehSize + phSize
	notesOff := off
	off += notes.Len()
	baseOff := off
	off++
	for off%8 != 0 {
		off++
	}
	symOff := off
	off += symtab.Len()
	strOff := off
	off += strtab.Len()
	shstrOff := off
	off += len(shstr)
	for off%8 != 0 {
		off++
	}
	shOff := off
	type section struct {
		name            string
		typ             elf.SectionType
		flags           uint64
		addr, off, size uint64
		link, info      uint32
		align, entsize  uint64
	}
	sections := []section{
		{},
		{name: ".note.stapsdt", typ: elf.SHT_NOTE, off: uint64(notesOff), size: uint64(notes.Len()), align: 4},
	}
	if l.base != 0 {
		sections = append(sections, section{name: ".stapsdt.base", typ: elf.SHT_PROGBITS, flags: uint64(elf.SHF_ALLOC),
			addr: l.base, off: uint64(baseOff), size: 1, align: 1})
	}
	symIdx := len(sections)
	sections = append(sections,
		section{name: ".symtab", typ: elf.SHT_SYMTAB, off: uint64(symOff), size: uint64(symtab.Len()),
			link: uint32(symIdx + 1), info: 1, align: 8, entsize: uint64(symSize)},
		section{name: ".strtab", typ: elf.SHT_STRTAB, off: uint64(strOff), size: uint64(strtab.Len()), align: 1},
		section{name: ".shstrtab", typ: elf.SHT_STRTAB, off: uint64(shstrOff), size: uint64(len(shstr)), align: 1},
	)
	fileSize := shOff + len(sections)*shSize

	var b bytes.Buffer
	ident := [16]byte{0x7f, 'E', 'L', 'F', byte(l.class), 1, 1}
	if l.order == binary.BigEndian {
		ident[5] = 2
	}
	b.Write(ident[:])
	w := func(v any) { _ = binary.Write(&b, l.order, v) }
	w(uint16(elf.ET_DYN))
	w(uint16(l.machine))
	w(uint32(1))
	putAddr(&b, 0)               // entry
	putAddr(&b, uint64(ehSize))  // phoff
	putAddr(&b, uint64(shOff))   // shoff
	w(uint32(0))                 // flags
	w(uint16(ehSize))            // ehsize
	w(uint16(phSize))            // phentsize
	w(uint16(1))                 // phnum
	w(uint16(shSize))            // shentsize
	w(uint16(len(sections)))     // shnum
	w(uint16(len(sections) - 1)) // shstrndx
	// PT_LOAD of the whole file.
	if is64 {
		w(uint32(elf.PT_LOAD))
		w(uint32(elf.PF_R | elf.PF_X))
		w([6]uint64{0, l.vaddr, l.vaddr, uint64(fileSize), uint64(fileSize), 0x1000})
	} else {
		w([8]uint32{uint32(elf.PT_LOAD), 0, uint32(l.vaddr), uint32(l.vaddr), uint32(fileSize), uint32(fileSize),
			uint32(elf.PF_R | elf.PF_X), 0x1000})
	}
	b.Write(notes.Bytes())
	b.WriteByte(0)
	for b.Len() < symOff {
		b.WriteByte(0)
	}
	b.Write(symtab.Bytes())
	b.Write(strtab.Bytes())
	b.WriteString(shstr)
	for b.Len() < shOff {
		b.WriteByte(0)
	}
	for _, s := range sections {
		var name uint32
		if s.name != "" {
			name = nameOf(s.name)
		}
		if is64 {
			w(name)
			w(uint32(s.typ))
			w([4]uint64{s.flags, s.addr, s.off, s.size})
			w([2]uint32{s.link, s.info})
			w([2]uint64{s.align, s.entsize})
		} else {
			w([10]uint32{name, uint32(s.typ), uint32(s.flags), uint32(s.addr), uint32(s.off), uint32(s.size),
				s.link, s.info, uint32(s.align), uint32(s.entsize)})
		}
	}
	return b.Bytes()
}

var ignoreErr = cmpopts.IgnoreFields(Probe{}, "Err")

func TestParseNotesSynthetic(t *testing.T) {
	// The file is mapped at vaddr 0x400000 from offset 0, so file offset = address - 0x400000.
	l := elfLayout{
		class: elf.ELFCLASS64, order: binary.LittleEndian, machine: elf.EM_X86_64,
		vaddr: 0x400000, base: 0x400100,
		notes: []testNote{
			{pc: 0x400010, base: 0x400100, provider: "p", name: "a", args: "-4@%eax 8@$5"},
			// Prelinked: the note's base is 0x100 lower than the section, so pc and semaphore move up.
			{pc: 0x3fff20, base: 0x400000, sema: 0x3fff30, provider: "p", name: "b", args: "8@glob+8(%rip)"},
			{pc: 0x400030, base: 0x400100, provider: "p", name: "a", args: ""},
			{pc: 0x400040, base: 0x400100, provider: "q", name: "bad", args: "4@%xmm0"},
		},
		syms: map[string]uint64{"glob": 0x400050},
	}
	probes, err := ParseNotes(bytes.NewReader(buildELF(l)))
	if err != nil {
		t.Fatal(err)
	}
	want := []Probe{
		{Provider: "p", Name: "a", Machine: elf.EM_X86_64, PC: 0x400010, Base: 0x400100, FileOffset: 0x10,
			ArgString: "-4@%eax 8@$5", Args: []Arg{
				{Kind: ArgReg, Size: 4, Signed: true, Reg: "eax"},
				{Kind: ArgConst, Size: 8, Value: 5},
			}},
		{Provider: "p", Name: "b", Machine: elf.EM_X86_64, PC: 0x400020, Base: 0x400000, Semaphore: 0x400030,
			FileOffset: 0x20, SemaphoreOffset: 0x30, ArgString: "8@glob+8(%rip)", Args: []Arg{
				{Kind: ArgMem, Size: 8, Reg: "rip", Value: 8, Symbol: "glob", SymbolAddr: 0x400050},
			}},
		{Provider: "p", Name: "a", Machine: elf.EM_X86_64, PC: 0x400030, Base: 0x400100, FileOffset: 0x30, Args: []Arg{}},
		{Provider: "q", Name: "bad", Machine: elf.EM_X86_64, PC: 0x400040, Base: 0x400100, FileOffset: 0x40,
			ArgString: "4@%xmm0"},
	}
	if diff := cmp.Diff(want, probes, ignoreErr, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("probes (-want +got):\n%s", diff)
	}
	for i, p := range probes {
		if (p.Err != nil) != (i == 3) {
			t.Errorf("probe %d: Err = %v", i, p.Err)
		}
	}
	if p := probes[3]; p.Err == nil || !strings.Contains(p.Err.Error(), "pt_regs") {
		t.Errorf("xmm argument: %v, want an error about pt_regs", p.Err)
	}
}

func TestParseNotesClassesAndOrders(t *testing.T) {
	for _, tc := range []struct {
		name    string
		class   elf.Class
		order   binary.ByteOrder
		machine elf.Machine
		args    string
	}{
		{"elf64-le-x86", elf.ELFCLASS64, binary.LittleEndian, elf.EM_X86_64, "-8@%rax"},
		{"elf64-le-arm64", elf.ELFCLASS64, binary.LittleEndian, elf.EM_AARCH64, "-8@x0 4@[sp, 16]"},
		{"elf64-be-arm64", elf.ELFCLASS64, binary.BigEndian, elf.EM_AARCH64, "8@[x29, -8]"},
		{"elf32-le", elf.ELFCLASS32, binary.LittleEndian, elf.EM_386, "4@%eax"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := elfLayout{class: tc.class, order: tc.order, machine: tc.machine, vaddr: 0x1000, base: 0x1800,
				notes: []testNote{{pc: 0x1010, base: 0x1800, sema: 0x1020, provider: "prov", name: "probe", args: tc.args}}}
			probes, err := ParseNotes(bytes.NewReader(buildELF(l)))
			if err != nil {
				t.Fatal(err)
			}
			if len(probes) != 1 {
				t.Fatalf("%d probes, want 1", len(probes))
			}
			p := probes[0]
			if p.PC != 0x1010 || p.Semaphore != 0x1020 || p.FileOffset != 0x10 || p.SemaphoreOffset != 0x20 ||
				p.Provider != "prov" || p.Name != "probe" || p.ArgString != tc.args {
				t.Errorf("probe %+v", p)
			}
			if tc.machine == elf.EM_386 {
				if p.Err == nil {
					t.Errorf("i386 arguments parsed: %+v", p.Args)
				}
			} else if p.Err != nil {
				t.Error(p.Err)
			}
		})
	}
}

func TestParseNotesMalformed(t *testing.T) {
	desc := func(extra string) []byte {
		var b bytes.Buffer
		_ = binary.Write(&b, binary.LittleEndian, [3]uint64{1, 2, 3})
		b.WriteString(extra)
		return b.Bytes()
	}
	note := func(namesz, descsz, typ uint32, name string, d []byte) []byte {
		var b bytes.Buffer
		_ = binary.Write(&b, binary.LittleEndian, [3]uint32{namesz, descsz, typ})
		b.WriteString(name)
		b.Write(d)
		return b.Bytes()
	}
	for _, tc := range []struct {
		name string
		raw  []byte
		ok   bool
	}{
		{"truncated header", []byte{8, 0, 0}, false},
		{"desc past the end", note(8, 1000, 3, "stapsdt\x00", desc("p\x00n\x00\x00")), false},
		{"short desc", note(8, 8, 3, "stapsdt\x00", desc("")[:8]), false},
		{"unterminated name", note(8, 27, 3, "stapsdt\x00", desc("p\x00n")), false},
		{"empty provider", note(8, 27, 3, "stapsdt\x00", desc("\x00n\x00")), false},
		{"args to the end", note(8, 30, 3, "stapsdt\x00", desc("p\x00n\x00$1")), true},
		{"other owner", note(4, 4, 3, "GNU\x00", []byte{1, 2, 3, 4}), true},
		{"other type", note(8, 4, 1, "stapsdt\x00", []byte{1, 2, 3, 4}), true},
		{"huge sizes", note(0xffffffff, 0xffffffff, 3, "", nil), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := elfLayout{class: elf.ELFCLASS64, order: binary.LittleEndian, machine: elf.EM_X86_64, vaddr: 0x1000, rawNotes: tc.raw}
			_, err := ParseNotes(bytes.NewReader(buildELF(l)))
			if (err == nil) != tc.ok {
				t.Errorf("err = %v, want ok = %v", err, tc.ok)
			}
		})
	}
}

func TestParseNotesNotELF(t *testing.T) {
	if _, err := ParseNotes(strings.NewReader("#!/bin/sh\n")); err == nil {
		t.Error("a shell script parsed as ELF")
	}
}

// FuzzParseNotes feeds ParseNotes whole files (seeded with synthetic ones) and parseNoteData the raw
// section bytes: neither may panic, and what they return must be consistent.
func FuzzParseNotes(f *testing.F) {
	f.Add(buildELF(elfLayout{class: elf.ELFCLASS64, order: binary.LittleEndian, machine: elf.EM_X86_64,
		vaddr: 0x400000, base: 0x400100, syms: map[string]uint64{"glob": 0x400200},
		notes: []testNote{
			{pc: 0x400010, base: 0x400100, provider: "p", name: "a", args: "-4@%eax 8@$5 -8@glob(%rip) -4@4(%rdx,%rsi,4)"},
			{pc: 0x400020, base: 0x400000, sema: 0x400030, provider: "p", name: "b"},
		}}))
	f.Add(buildELF(elfLayout{class: elf.ELFCLASS32, order: binary.BigEndian, machine: elf.EM_AARCH64,
		vaddr: 0x1000, notes: []testNote{{pc: 0x1010, provider: "p", name: "a", args: "8@[x0, 8] -4@w1 8@5"}}}))
	f.Fuzz(func(t *testing.T, data []byte) {
		probes, err := ParseNotes(bytes.NewReader(data))
		if err == nil {
			for _, p := range probes {
				if p.Provider == "" || p.Name == "" {
					t.Errorf("probe without provider or name: %+v", p)
				}
				if p.Err == nil && p.ArgString != "" && len(p.Args) == 0 {
					t.Errorf("arguments %q parsed to none", p.ArgString)
				}
			}
		}
		for _, align := range []int{4, 8} {
			for _, addr := range []int{4, 8} {
				_ = parseNoteData(data, binary.LittleEndian, addr, align, func(n note) {
					if n.provider == "" || n.name == "" {
						t.Errorf("note without provider or name: %+v", n)
					}
				})
			}
		}
	})
}
