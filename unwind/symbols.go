package unwind

import (
	"bytes"
	"cmp"
	"debug/elf"
	"fmt"
	"io"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ianlancetaylor/demangle"

	"github.com/jvmkit/jvmkit/internal/elfsym"
	"github.com/jvmkit/jvmkit/internal/filecache"
	"github.com/jvmkit/jvmkit/internal/procfs"
	"github.com/jvmkit/jvmkit/internal/rootfs"
	"github.com/jvmkit/jvmkit/vmstructs"
)

// Mapping is a file mapped into a process.
type Mapping struct {
	Start, End uint64 // End exclusive
	Offset     uint64 // file offset of Start
	Path       string // as the process sees it; "" for anonymous executable memory, "[vdso]" for the vDSO
	// Perms are the mapping's permissions ("r-xp") where known, "" for a core file's mappings: then the
	// file's own segments say what is code.
	Perms string

	live procfs.Mapping // for a live process: the maps line, to open the mapped file by its identity
}

// code reports whether the mapping may hold code: executable, or of unknown permissions.
func (m *Mapping) code() bool { return m.Perms == "" || len(m.Perms) > 2 && m.Perms[2] == 'x' }

// FileSymbols names native code from the ELF symbol tables (.symtab, else .dynsym) of the files a
// process mapped, C++ names demangled without their parameters, and unwinds native frames by the
// files' call frame information (.eh_frame, see cfi.go). Files are read on first use: a live process's
// through internal/rootfs (its root, else /proc/<pid>/map_files: containers entered by chroot, deleted
// libraries) and its vDSO from its memory, a core's under Root (a container's root as this machine
// sees it). It is safe for concurrent use.
type FileSymbols struct {
	Root string

	mu    sync.Mutex
	maps  []Mapping // sorted by Start
	files map[fileKey]*elfSymbols
	// reload re-reads the mappings when a pc is in none of them (libraries loaded since), at most
	// every reloadEvery.
	reload     func() ([]Mapping, error)
	lastReload time.Time
	pid        int // a live process's, whose files are opened by rootfs.OpenMapped; 0 for a core
}

// fileKey tells apart a deleted library from the new one at its path (a live process maps both after
// an upgrade).
type fileKey struct {
	path  string
	inode uint64
}

const reloadEvery = 250 * time.Millisecond

// NewProcessSymbols names the native code of a live process from /proc/<pid>/maps.
func NewProcessSymbols(pid int) *FileSymbols {
	s := &FileSymbols{pid: pid, files: map[fileKey]*elfSymbols{}}
	s.reload = func() ([]Mapping, error) { return processMappings(pid) }
	s.maps, _ = s.reload()
	s.lastReload = time.Now()
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

// processMappings returns the mappings of a live process that may hold code: file mappings (code and
// the read-only segments beside it, which make up the module), the vDSO and anonymous executable
// memory.
func processMappings(pid int) ([]Mapping, error) {
	maps, err := procfs.Default.Maps(pid)
	if err != nil {
		return nil, err
	}
	var out []Mapping
	for _, m := range maps {
		exec := len(m.Perms) > 2 && m.Perms[2] == 'x'
		switch {
		case strings.HasPrefix(m.Path, "/") && m.Inode != 0:
		case m.Path == "[vdso]":
		case m.Path == "" && exec:
		default:
			continue
		}
		out = append(out, Mapping{Start: m.Start, End: m.End, Offset: m.Offset, Path: m.Path, Perms: m.Perms, live: m})
	}
	return out, nil
}

// Symbolize implements Symbolizer.
func (s *FileSymbols) Symbolize(pc uint64) (name, module string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, es := s.module(pc)
	if m == nil || m.Path == "" {
		return "", "", false
	}
	module = path.Base(m.Path)
	name, ok = es.lookup(pc - m.Start + m.Offset)
	return name, module, ok
}

// module finds the mapping of pc and its file's symbols.
func (s *FileSymbols) module(pc uint64) (*Mapping, *elfSymbols) {
	m := s.find(pc)
	if m == nil && s.reload != nil && time.Since(s.lastReload) >= reloadEvery {
		s.lastReload = time.Now()
		if maps, err := s.reload(); err == nil {
			s.maps = maps
		}
		m = s.find(pc)
	}
	if m == nil {
		return nil, nil
	}
	if m.Path == "" {
		return m, &elfSymbols{}
	}
	key := fileKey{m.Path, m.live.Inode}
	es := s.files[key]
	if es == nil {
		es = s.load(m)
		s.files[key] = es
	}
	return m, es
}

// load reads the ELF file of a mapping; one that cannot be read names and unwinds nothing.
func (s *FileSymbols) load(m *Mapping) *elfSymbols {
	if m.Path == "[vdso]" {
		if s.pid == 0 {
			return &elfSymbols{}
		}
		b, err := readProcessMemory(s.pid, m.Start, m.End-m.Start)
		if err != nil {
			return &elfSymbols{}
		}
		return readELFSymbols(bytes.NewReader(b))
	}
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
	return sharedELFSymbols(f)
}

// sharedFiles holds what was read of every file a FileSymbols still uses: processes that map the same
// file (many JVMs of one JDK) share it.
var sharedFiles filecache.Cache[elfSymbols]

// sharedELFSymbols reads f's symbols unless another FileSymbols has read the same file already.
func sharedELFSymbols(f *os.File) *elfSymbols {
	id, ok := filecache.Identify(f)
	if !ok {
		return readELFSymbols(f)
	}
	es, _ := sharedFiles.Get(id, func() (*elfSymbols, error) { return readELFSymbols(f), nil })
	return es
}

func (s *FileSymbols) find(pc uint64) *Mapping {
	i := sort.Search(len(s.maps), func(i int) bool { return s.maps[i].End > pc })
	if i < len(s.maps) && s.maps[i].Start <= pc {
		return &s.maps[i]
	}
	return nil
}

// nativeInfo is what the walker needs to know about native code at a pc.
type nativeInfo struct {
	// Code says the pc is in executable memory: an executable mapping, in a segment of its file that
	// is code. A return address elsewhere (data, a file that is no program) is garbage.
	Code bool
	// Row is the call frame information in effect at the pc; RowErr says why there is none
	// (errNoFDE: the code has none; the file could not be read or parsed).
	Row    cfiRow
	RowErr error
}

// unwindInfo describes the native code at pc; ret says pc is a return address, whose call frame
// information is that of the call before it.
func (s *FileSymbols) unwindInfo(pc uint64, ret bool) nativeInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, es := s.module(pc)
	if m == nil || !m.code() {
		return nativeInfo{RowErr: errNoFDE}
	}
	if m.Path == "" {
		return nativeInfo{Code: true, RowErr: errNoFDE} // anonymous code: another JIT's, a trampoline
	}
	addr, exec, ok := es.loads.Vaddr(pc - m.Start + m.Offset)
	if !ok || !exec {
		return nativeInfo{RowErr: errNoFDE}
	}
	info := nativeInfo{Code: true}
	if ret {
		addr--
	}
	info.Row, info.RowErr = es.row(addr)
	return info
}

// isCode reports whether pc is in executable memory (see nativeInfo.Code).
func (s *FileSymbols) isCode(pc uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, es := s.module(pc)
	if m == nil || !m.code() {
		return false
	}
	if m.Path == "" {
		return true
	}
	_, exec, ok := es.loads.Vaddr(pc - m.Start + m.Offset)
	return ok && exec
}

// elfSymbols are a file's function symbols, by address, its loadable segments to turn file offsets
// into addresses, and its call frame information.
type elfSymbols struct {
	loads elfsym.Segments
	syms  elfsym.Funcs // names demangled on lookup
	eh    *ehFrame
	ehErr error

	mu   sync.Mutex                      // shared by the FileSymbols of every process that maps the file
	rows *genCache[uint64, cfiRowResult] // cache by address
}

type cfiRowResult struct {
	row cfiRow
	err error
}

// maxCachedRows bounds a generation of a file's cache of call frame information rows (see genCache).
const maxCachedRows = 1 << 13

// readELFSymbols reads a file's function symbols, segments and call frame information; what cannot be
// read is left empty.
func readELFSymbols(r io.ReaderAt) *elfSymbols {
	es := &elfSymbols{ehErr: errNoFDE}
	f, err := elfsym.Open(r)
	if err != nil {
		return es
	}
	es.loads = f.Loads
	es.syms, _ = f.Funcs()
	es.eh, es.ehErr = readEhFrame(f.ELF)
	return es
}

// readEhFrame reads and indexes a file's .eh_frame (with .eh_frame_hdr's table when it has one).
func readEhFrame(f *elf.File) (*ehFrame, error) {
	sec := f.Section(".eh_frame")
	if sec == nil || sec.Type == elf.SHT_NOBITS {
		return nil, errNoFDE
	}
	data, err := sec.Data()
	if err != nil {
		return nil, fmt.Errorf("read .eh_frame: %w", err)
	}
	var hdr []byte
	var hdrAddr uint64
	if h := f.Section(".eh_frame_hdr"); h != nil && h.Type != elf.SHT_NOBITS {
		if b, err := h.Data(); err == nil {
			hdr, hdrAddr = b, h.Addr
		}
	}
	return parseEhFrame(data, sec.Addr, hdr, hdrAddr)
}

// row returns the call frame information at a file address, cached.
func (es *elfSymbols) row(addr uint64) (cfiRow, error) {
	if es.eh == nil {
		return cfiRow{}, es.ehErr
	}
	es.mu.Lock()
	defer es.mu.Unlock()
	if es.rows == nil {
		es.rows = newGenCache[uint64, cfiRowResult](maxCachedRows)
	}
	if r, ok := es.rows.get(addr); ok {
		return r.row, r.err
	}
	row, err := es.eh.row(addr)
	es.rows.put(addr, cfiRowResult{row, err})
	return row, err
}

// lookup names the function at file offset off.
func (es *elfSymbols) lookup(off uint64) (string, bool) {
	addr, _, ok := es.loads.Vaddr(off)
	if !ok {
		return "", false
	}
	i, ok := es.syms.Find(addr)
	if !ok {
		return "", false
	}
	es.mu.Lock()
	defer es.mu.Unlock()
	s := &es.syms[i]
	if strings.HasPrefix(s.Name, "_Z") {
		s.Name = demangle.Filter(s.Name, demangle.NoParams, demangle.NoClones)
	}
	return s.Name, true
}

// KernelSymbols names kernel addresses from /proc/kallsyms (readable with addresses by root).
type KernelSymbols struct {
	once  sync.Once
	syms  []kernelSym // by address
	names string      // the names, one after the other
}

// kernelSym is a kernel function: its address and its name, names[off:off+n]. /proc/kallsyms has
// about 120k of them: one string of all their names, not a string each (and not each whole line, which
// a substring of it would keep), is a third of the memory.
type kernelSym struct {
	addr   uint64
	off, n uint32
}

// Symbolize implements Symbolizer.
func (k *KernelSymbols) Symbolize(pc uint64) (name, module string, ok bool) {
	k.once.Do(k.load)
	i := sort.Search(len(k.syms), func(i int) bool { return k.syms[i].addr > pc }) - 1
	if i < 0 {
		return "", "", false
	}
	s := k.syms[i]
	return k.names[s.off : s.off+s.n], "[kernel.kallsyms]", true
}

func (k *KernelSymbols) load() {
	b, err := os.ReadFile("/proc/kallsyms")
	if err != nil {
		return
	}
	k.syms, k.names = parseKallsyms(b)
}

// parseKallsyms keeps the text symbols (types t, T, w, W) of /proc/kallsyms with a non-zero address
// (zero: the reader may not see addresses), sorted by address, one an address: the first listed.
func parseKallsyms(b []byte) ([]kernelSym, string) {
	var syms []kernelSym
	var names []byte
	for line := range bytes.Lines(b) {
		fields := bytes.Fields(line) // the newline goes with the blanks
		if len(fields) < 3 || len(fields[1]) != 1 || !strings.ContainsRune("tTwW", rune(fields[1][0])) {
			continue
		}
		a, err := strconv.ParseUint(string(fields[0]), 16, 64)
		if err != nil || a == 0 || len(names)+len(fields[2]) > math.MaxUint32 {
			continue
		}
		syms = append(syms, kernelSym{addr: a, off: uint32(len(names)), n: uint32(len(fields[2]))})
		names = append(names, fields[2]...)
	}
	slices.SortStableFunc(syms, func(x, y kernelSym) int { return cmp.Compare(x.addr, y.addr) })
	syms = slices.CompactFunc(syms, func(x, y kernelSym) bool { return x.addr == y.addr }) // keeps the first
	return syms, string(names)
}

// maxVDSO bounds the vDSO image read from a process (it is two pages on x86-64).
const maxVDSO = 1 << 20

// readProcessMemory reads a live process's vDSO image through /proc/<pid>/mem.
func readProcessMemory(pid int, addr, n uint64) ([]byte, error) {
	if n > maxVDSO {
		return nil, fmt.Errorf("vdso of %d bytes", n)
	}
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/mem")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, n)
	if _, err := f.ReadAt(b, int64(addr)); err != nil {
		return nil, fmt.Errorf("read vdso: %w", err)
	}
	return b, nil
}
