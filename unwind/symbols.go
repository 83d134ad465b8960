package unwind

import (
	"bufio"
	"debug/elf"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/ianlancetaylor/demangle"

	"github.com/jvmkit/jvmkit/vmstructs"
)

// Mapping is a file mapped into a process.
type Mapping struct {
	Start, End uint64 // End exclusive
	Offset     uint64 // file offset of Start
	Path       string // as the process sees it
}

// FileSymbols names native code from the ELF symbol tables (.symtab, else .dynsym) of the files a
// process mapped, C++ names demangled without their parameters. Files are read on first use, through
// Root (a container's root as this machine sees it; /proc/<pid>/root for a live process). It is safe
// for concurrent use.
type FileSymbols struct {
	Root string

	mu    sync.Mutex
	maps  []Mapping // sorted by Start
	files map[string]*elfSymbols
	// reload re-reads the mappings when a pc is in none of them (libraries loaded since).
	reload func() ([]Mapping, error)
}

// NewProcessSymbols names the native code of a live process from /proc/<pid>/maps.
func NewProcessSymbols(pid int) *FileSymbols {
	p := strconv.Itoa(pid)
	s := &FileSymbols{Root: "/proc/" + p + "/root", files: map[string]*elfSymbols{}}
	s.reload = func() ([]Mapping, error) { return ReadMaps(pid) }
	s.maps, _ = s.reload()
	return s
}

// NewFileSymbols names native code in the given mappings (a core file's NT_FILE note), with the
// files read under root ("" is "/").
func NewFileSymbols(maps []Mapping, root string) *FileSymbols {
	m := append([]Mapping(nil), maps...)
	sort.Slice(m, func(i, j int) bool { return m[i].Start < m[j].Start })
	return &FileSymbols{Root: root, maps: m, files: map[string]*elfSymbols{}}
}

// CoreMappings converts a core file's mappings.
func CoreMappings(files []vmstructs.FileMapping) []Mapping {
	out := make([]Mapping, 0, len(files))
	for _, f := range files {
		out = append(out, Mapping{Start: f.Start, End: f.End, Offset: f.Offset, Path: f.Path})
	}
	return out
}

// ReadMaps reads the file mappings of a process from /proc/<pid>/maps.
func ReadMaps(pid int) ([]Mapping, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/maps")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Mapping
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// start-end perms offset dev inode path
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || !strings.HasPrefix(fields[5], "/") {
			continue
		}
		lo, hi, ok := strings.Cut(fields[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		off, err3 := strconv.ParseUint(fields[2], 16, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		out = append(out, Mapping{Start: start, End: end, Offset: off, Path: strings.Join(fields[5:], " ")})
	}
	return out, sc.Err()
}

// Symbolize implements Symbolizer.
func (s *FileSymbols) Symbolize(pc uint64) (name, module string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.find(pc)
	if m == nil && s.reload != nil {
		if maps, err := s.reload(); err == nil {
			s.maps = maps
		}
		s.reload = nil // once: later misses are not code of a library
		m = s.find(pc)
	}
	if m == nil {
		return "", "", false
	}
	module = path.Base(strings.TrimSuffix(m.Path, " (deleted)"))
	es := s.files[m.Path]
	if es == nil {
		es = loadELFSymbols(filepath.Join(s.Root, m.Path))
		s.files[m.Path] = es
	}
	name, ok = es.lookup(pc - m.Start + m.Offset)
	return name, module, ok
}

func (s *FileSymbols) find(pc uint64) *Mapping {
	i := sort.Search(len(s.maps), func(i int) bool { return s.maps[i].End > pc })
	if i < len(s.maps) && s.maps[i].Start <= pc {
		return &s.maps[i]
	}
	return nil
}

// elfSymbols are a file's function symbols, by address, with its loadable segments to turn file
// offsets into addresses.
type elfSymbols struct {
	loads []elf.ProgHeader
	syms  []elfSym
}

type elfSym struct {
	addr, size uint64
	name       string // mangled; demangled on lookup
}

func loadELFSymbols(file string) *elfSymbols {
	es := &elfSymbols{}
	f, err := elf.Open(file)
	if err != nil {
		return es
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			es.loads = append(es.loads, p.ProgHeader)
		}
	}
	syms, _ := f.Symbols()
	dyn, _ := f.DynamicSymbols()
	seen := map[uint64]bool{}
	for _, list := range [][]elf.Symbol{syms, dyn} {
		for _, sym := range list {
			if elf.ST_TYPE(sym.Info) != elf.STT_FUNC || sym.Value == 0 || seen[sym.Value] {
				continue
			}
			seen[sym.Value] = true
			es.syms = append(es.syms, elfSym{addr: sym.Value, size: sym.Size, name: sym.Name})
		}
	}
	sort.Slice(es.syms, func(i, j int) bool { return es.syms[i].addr < es.syms[j].addr })
	return es
}

// lookup names the function at file offset off.
func (es *elfSymbols) lookup(off uint64) (string, bool) {
	addr, ok := uint64(0), false
	for _, p := range es.loads {
		if off >= p.Off && off < p.Off+p.Filesz {
			addr, ok = off-p.Off+p.Vaddr, true
			break
		}
	}
	if !ok {
		return "", false
	}
	i := sort.Search(len(es.syms), func(i int) bool { return es.syms[i].addr > addr }) - 1
	if i < 0 {
		return "", false
	}
	s := &es.syms[i]
	if s.size > 0 && addr >= s.addr+s.size {
		return "", false
	}
	if strings.HasPrefix(s.name, "_Z") {
		s.name = demangle.Filter(s.name, demangle.NoParams, demangle.NoClones)
	}
	return s.name, true
}

// KernelSymbols names kernel addresses from /proc/kallsyms (readable with addresses by root).
type KernelSymbols struct {
	once  sync.Once
	addrs []uint64
	names []string
}

// Symbolize implements Symbolizer.
func (k *KernelSymbols) Symbolize(pc uint64) (name, module string, ok bool) {
	k.once.Do(k.load)
	i := sort.Search(len(k.addrs), func(i int) bool { return k.addrs[i] > pc }) - 1
	if i < 0 {
		return "", "", false
	}
	return k.names[i], "[kernel.kallsyms]", true
}

func (k *KernelSymbols) load() {
	f, err := os.Open("/proc/kallsyms")
	if err != nil {
		return
	}
	defer f.Close()
	type sym struct {
		a uint64
		n string
	}
	var syms []sym
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 3 || (fields[1] != "t" && fields[1] != "T" && fields[1] != "w" && fields[1] != "W") {
			continue
		}
		a, err := strconv.ParseUint(fields[0], 16, 64)
		if err != nil || a == 0 {
			continue
		}
		syms = append(syms, sym{a, fields[2]})
	}
	sort.Slice(syms, func(i, j int) bool { return syms[i].a < syms[j].a })
	for _, s := range syms {
		k.addrs = append(k.addrs, s.a)
		k.names = append(k.names, s.n)
	}
}
