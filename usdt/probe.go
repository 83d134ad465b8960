package usdt

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/jvmkit/jvmkit/internal/elfsym"
	"github.com/jvmkit/jvmkit/internal/procerr"
)

// Errors about the traced process and this platform, shared with attach, vmstructs, unwind and perfmap
// (the same values, so that one errors.Is test covers the whole project).
var (
	// ErrNotSupported is returned for machines other than x86-64 and arm64, and on platforms other
	// than Linux.
	ErrNotSupported = procerr.ErrNotSupported
	// ErrProcessGone: the traced process does not exist or exited.
	ErrProcessGone = procerr.ErrProcessGone
	// ErrPermission: the caller may not load BPF programs, attach uprobes or read the process's maps.
	ErrPermission = procerr.ErrPermission
)

// Probe is one probe site, one stapsdt note. A probe that is fired from several places in the code (HotSpot's
// object__alloc on JDK 25, a probe in an inlined function) has one Probe per site, all with the same Provider
// and Name.
type Probe struct {
	Provider string      `json:"provider"`
	Name     string      `json:"name"`
	Machine  elf.Machine `json:"-"` // the file's: the register names in Args are this machine's

	// PC is the link-time address of the site, and Semaphore the link-time address of the probe's
	// semaphore (0 for none), both adjusted for prelinking: by the difference between the address of the
	// .stapsdt.base section and Base, the address the note recorded for it.
	PC        uint64 `json:"pc"`
	Base      uint64 `json:"base"`
	Semaphore uint64 `json:"semaphore,omitempty"`

	// FileOffset is where PC is in the file, the offset a uprobe is attached at, and SemaphoreOffset where
	// the semaphore is, the uprobe's reference counter offset. They are 0 when no loadable segment contains
	// the address (a relocatable object file).
	FileOffset      uint64 `json:"file_offset"`
	SemaphoreOffset uint64 `json:"semaphore_offset,omitempty"`

	ArgString string `json:"args"` // the note's argument string, such as "-8@%rax 8@%rdx -4@%ecx"
	Args      []Arg  `json:"parsed_args"`

	// Err says why Args is nil although ArgString is not empty: a spec that does not parse, or names a
	// symbol the file does not define. Such a probe can be listed but not traced.
	Err error `json:"-"`
}

// String names the probe as "provider:name".
func (p *Probe) String() string { return p.Provider + ":" + p.Name }

// noteType is NT_STAPSDT, the type of every SystemTap SDT note (owner "stapsdt").
const noteType = 3

// ParseNotes reads every probe site of an ELF file, in the order of the notes. A file without
// .note.stapsdt has none, which is not an error.
func ParseNotes(r io.ReaderAt) ([]Probe, error) {
	ef, err := elfsym.Open(r)
	if err != nil {
		return nil, fmt.Errorf("usdt: %w", err)
	}
	return parseELF(ef)
}

func parseELF(ef *elfsym.File) (_ []Probe, err error) {
	defer func() {
		if p := recover(); p != nil { // debug/elf's section reads, on a corrupt file
			err = fmt.Errorf("usdt: %w: %v", elfsym.ErrMalformed, p)
		}
	}()
	f := ef.ELF
	var addrSize int
	switch f.Class {
	case elf.ELFCLASS64:
		addrSize = 8
	case elf.ELFCLASS32:
		addrSize = 4
	default:
		return nil, fmt.Errorf("usdt: ELF class %v", f.Class)
	}
	var adjustBase uint64 // .stapsdt.base's address; 0: no adjustment
	if s := f.Section(".stapsdt.base"); s != nil {
		adjustBase = s.Addr
	}
	var probes []Probe
	var syms *symbolTable
	for _, s := range f.Sections {
		if s.Type != elf.SHT_NOTE {
			continue
		}
		data, err := s.Data()
		if err != nil {
			return nil, fmt.Errorf("usdt: read %s: %w", s.Name, err)
		}
		align := 4
		if s.Addralign == 8 {
			align = 8
		}
		err = parseNoteData(data, f.ByteOrder, addrSize, align, func(n note) {
			p := Probe{
				Provider:  n.provider,
				Name:      n.name,
				Machine:   f.Machine,
				PC:        n.pc,
				Base:      n.base,
				Semaphore: n.semaphore,
				ArgString: n.args,
			}
			if adjustBase != 0 && n.base != 0 {
				p.PC += adjustBase - n.base
				if p.Semaphore != 0 {
					p.Semaphore += adjustBase - n.base
				}
			}
			p.FileOffset, _ = ef.Loads.Offset(p.PC)
			if p.Semaphore != 0 {
				p.SemaphoreOffset, _ = ef.Loads.Offset(p.Semaphore)
			}
			p.Args, p.Err = ParseArgs(f.Machine, n.args)
			if p.Err == nil {
				for i := range p.Args {
					a := &p.Args[i]
					if a.Symbol == "" {
						continue
					}
					if syms == nil {
						syms = newSymbolTable(ef)
					}
					if a.SymbolAddr, p.Err = syms.lookup(a.Symbol); p.Err != nil {
						p.Err = fmt.Errorf("argument %d: %w", i, p.Err)
						break
					}
				}
			}
			if p.Err != nil {
				p.Args = nil
				p.Err = fmt.Errorf("probe %s at %#x: %w", p.String(), p.PC, p.Err)
			}
			probes = append(probes, p)
		})
		if err != nil && s.Name == ".note.stapsdt" {
			return nil, fmt.Errorf("usdt: %s: %w", s.Name, err)
		}
		// A malformed note elsewhere (another tool's section) is not our business; the stapsdt notes found
		// before it are kept.
	}
	return probes, nil
}

// note is the content of one stapsdt note.
type note struct {
	pc, base, semaphore  uint64
	provider, name, args string
}

// parseNoteData walks the notes of a note section (ELF gABI "Note Section": namesz, descsz, type, name
// and desc; desc starts and the next note starts at the next multiple of align) and calls fn for every stapsdt note. The desc of a stapsdt note is three
// address-sized words, pc, base and semaphore, then provider, name and arguments, each NUL-terminated
// (https://sourceware.org/systemtap/wiki/UserSpaceProbeImplementation).
func parseNoteData(data []byte, bo binary.ByteOrder, addrSize, align int, fn func(note)) error {
	pad := func(n uint64) uint64 { return (n + uint64(align) - 1) &^ uint64(align-1) }
	for off, i := uint64(0), 0; off < uint64(len(data)); i++ {
		rest := data[off:]
		if len(rest) < 12 {
			return fmt.Errorf("note %d at %#x: truncated header", i, off)
		}
		namesz, descsz, typ := uint64(bo.Uint32(rest)), uint64(bo.Uint32(rest[4:])), bo.Uint32(rest[8:])
		descOff := pad(12 + namesz) // binutils' ELF_NOTE_DESC_OFFSET
		descEnd := pad(descOff + descsz)
		if descOff > uint64(len(rest)) || descOff+descsz > uint64(len(rest)) {
			return fmt.Errorf("note %d at %#x: name or desc past the end of the section", i, off)
		}
		name := rest[12 : 12+namesz]
		desc := rest[descOff : descOff+descsz]
		if descEnd > uint64(len(rest)) {
			descEnd = uint64(len(rest)) // the last note's padding may be missing
		}
		off += descEnd
		if string(bytes.TrimRight(name, "\x00")) != "stapsdt" || typ != noteType {
			continue
		}
		n, err := parseStapsdt(desc, bo, addrSize)
		if err != nil {
			return fmt.Errorf("note %d at %#x: %w", i, off-descEnd, err)
		}
		fn(n)
	}
	return nil
}

func parseStapsdt(desc []byte, bo binary.ByteOrder, addrSize int) (note, error) {
	if len(desc) < 3*addrSize {
		return note{}, errors.New("stapsdt desc shorter than three addresses")
	}
	word := func(i int) uint64 {
		if addrSize == 4 {
			return uint64(bo.Uint32(desc[i*4:]))
		}
		return bo.Uint64(desc[i*8:])
	}
	n := note{pc: word(0), base: word(1), semaphore: word(2)}
	strs := desc[3*addrSize:]
	var fields [3]string
	for i := range fields {
		end := bytes.IndexByte(strs, 0)
		if end < 0 {
			if i < 2 {
				return note{}, errors.New("stapsdt desc: provider or name not NUL-terminated")
			}
			end = len(strs) // an argument string that runs to the end of the desc
		}
		fields[i] = string(strs[:end])
		strs = strs[min(end+1, len(strs)):]
	}
	n.provider, n.name, n.args = fields[0], fields[1], strings.TrimSpace(fields[2])
	if n.provider == "" || n.name == "" {
		return note{}, errors.New("stapsdt desc: empty provider or name")
	}
	return n, nil
}

// symbolTable resolves the symbols that x86-64 argument specs name ("glob(%rip)"), from .symtab and
// .dynsym. Local symbols of the same name from different objects are ambiguous unless they agree.
type symbolTable struct {
	addr      map[string]uint64
	ambiguous map[string]bool
}

func newSymbolTable(f *elfsym.File) *symbolTable {
	addr, ambiguous, _ := f.Defined() // a file without symbol tables just has no symbols
	return &symbolTable{addr: addr, ambiguous: ambiguous}
}

func (t *symbolTable) lookup(name string) (uint64, error) {
	a, ok := t.addr[name]
	switch {
	case !ok:
		return 0, fmt.Errorf("symbol %q is not in the file's symbol tables", name)
	case t.ambiguous[name]:
		return 0, fmt.Errorf("symbol %q is defined more than once", name)
	}
	return a, nil
}

// ReadFile reads the probe sites of the ELF file at path.
func ReadFile(path string) ([]Probe, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("usdt: %w", err)
	}
	defer f.Close()
	probes, err := ParseNotes(f)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, path)
	}
	return probes, nil
}
