package unwind

import (
	"bufio"
	"debug/elf"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/ianlancetaylor/demangle"

	"github.com/jvmkit/jvmkit/internal/procfs"
	"github.com/jvmkit/jvmkit/internal/rootfs"
	"github.com/jvmkit/jvmkit/vmstructs"
)

// Mapping is a file mapped into a process.
type Mapping struct {
	Start, End uint64 // End exclusive
	Offset     uint64 // file offset of Start
	Path       string // as the process sees it

	live procfs.Mapping // for a live process: the maps line, to open the mapped file by its identity
}

// FileSymbols names native code from the ELF symbol tables (.symtab, else .dynsym) of the files a
// process mapped, C++ names demangled without their parameters. Files are read on first use: a live
// process's through internal/rootfs (its root, else /proc/<pid>/map_files: containers entered by
// chroot, deleted libraries), a core's under Root (a container's root as this machine sees it). It is
// safe for concurrent use.
type FileSymbols struct {
	Root string

	mu    sync.Mutex
	maps  []Mapping // sorted by Start
	files map[fileKey]*elfSymbols
	// reload re-reads the mappings when a pc is in none of them (libraries loaded since).
	reload func() ([]Mapping, error)
	pid    int // a live process's, whose files are opened by rootfs.OpenMapped; 0 for a core
}

// fileKey tells apart a deleted library from the new one at its path (a live process maps both after
// an upgrade).
type fileKey struct {
	path  string
	inode uint64
}

// NewProcessSymbols names the native code of a live process from /proc/<pid>/maps.
func NewProcessSymbols(pid int) *FileSymbols {
	s := &FileSymbols{pid: pid, files: map[fileKey]*elfSymbols{}}
	s.reload = func() ([]Mapping, error) { return processMappings(pid) }
	s.maps, _ = s.reload()
	return s
}

// NewFileSymbols names native code in the given mappings (a core file's NT_FILE note), with the
// files read under root ("" is "/").
func NewFileSymbols(maps []Mapping, root string) *FileSymbols {
	m := append([]Mapping(nil), maps...)
	sort.Slice(m, func(i, j int) bool { return m[i].Start < m[j].Start })
	return &FileSymbols{Root: root, maps: m, files: map[fileKey]*elfSymbols{}}
}

// CoreMappings converts a core file's mappings.
func CoreMappings(files []vmstructs.FileMapping) []Mapping {
	out := make([]Mapping, 0, len(files))
	for _, f := range files {
		out = append(out, Mapping{Start: f.Start, End: f.End, Offset: f.Offset, Path: f.Path})
	}
	return out
}

// processMappings returns the file mappings of a live process, sorted by Start as maps lists them.
func processMappings(pid int) ([]Mapping, error) {
	maps, err := procfs.Default.Maps(pid)
	if err != nil {
		return nil, err
	}
	var out []Mapping
	for _, m := range maps {
		if m.Inode != 0 && strings.HasPrefix(m.Path, "/") {
			out = append(out, Mapping{Start: m.Start, End: m.End, Offset: m.Offset, Path: m.Path, live: m})
		}
	}
	return out, nil
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
	key := fileKey{m.Path, m.live.Inode}
	es := s.files[key]
	if es == nil {
		es = s.load(m)
		s.files[key] = es
	}
	name, ok = es.lookup(pc - m.Start + m.Offset)
	return name, module, ok
}

// load reads the symbols of m's file; a file that cannot be read names nothing.
func (s *FileSymbols) load(m *Mapping) *elfSymbols {
	var f *os.File
	var err error
	if s.pid != 0 {
		f, err = rootfs.OpenMapped(procfs.Default, s.pid, m.live)
	} else {
		f, err = os.Open(filepath.Join(s.Root, m.Path))
	}
	if err != nil {
		return &elfSymbols{}
	}
	defer f.Close()
	return readELFSymbols(f)
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

func readELFSymbols(r io.ReaderAt) *elfSymbols {
	es := &elfSymbols{}
	f, err := elf.NewFile(r)
	if err != nil {
		return es
	}
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
