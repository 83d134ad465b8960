package vmstructs

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// CoreOptions tune how a core file is read.
type CoreOptions struct {
	// Root is prepended to the paths of the files the process had mapped (its NT_FILE note), which
	// are the paths the process saw: for a JVM that ran in a container, the container's root as this
	// machine sees it (an extracted image, or /proc/<pid>/root of a process in the same container).
	// Empty means "/".
	Root string
}

// OpenCoreFile reads the VMStructs of the JVM recorded in an ELF core file (gcore, or the kernel's
// core dump), with libjvm.so opened at the path the JVM saw.
func OpenCoreFile(ctx context.Context, path string) (*JVM, error) {
	return OpenCore(ctx, path, CoreOptions{})
}

// OpenCore reads the VMStructs of the JVM recorded in an ELF core file. libjvm.so is found among the
// core's file mappings and opened under opts.Root for its symbols; it must be the same build the JVM
// ran (checked by build ID when the core holds libjvm's first page). The JVM's memory is read from
// the core, and from the mapped files for read-only file mappings the core left out. JVM.PID is 0, as
// for every JVM that is not live (the views then leave /proc alone); the dumped process's pid is
// j.Core().PID().
func OpenCore(ctx context.Context, path string, opts CoreOptions) (*JVM, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c, err := OpenCoreMemory(path, opts)
	if err != nil {
		return nil, err
	}
	j, err := openCoreJVM(ctx, c, path)
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	return j, nil
}

func openCoreJVM(ctx context.Context, c *CoreMemory, corePath string) (*JVM, error) {
	lib, ok := c.libJVM()
	if !ok {
		what := fmt.Sprintf("process %d", c.pid)
		if c.command != "" {
			what += fmt.Sprintf(" (%s)", c.command)
		}
		if len(c.files) == 0 {
			return nil, fmt.Errorf("%w: no libjvm.so in the core %s of %s: it lists no mapped files", ErrNotJVM, corePath, what)
		}
		return nil, fmt.Errorf("%w: no libjvm.so in the core %s of %s", ErrNotJVM, corePath, what)
	}
	f, name, err := c.open(lib.Path)
	if err != nil {
		return nil, fmt.Errorf("vmstructs: open libjvm.so of the core: %w; if the JVM ran in a container, "+
			"set the container's root (CoreOptions.Root)", err)
	}
	ef, syms, err := libSymbols(f, true)
	if err != nil {
		return nil, fmt.Errorf("vmstructs: %s: %w", name, err)
	}
	bias, err := ef.Loads.Bias(lib.Start, lib.Offset, c.pageSize())
	if err != nil {
		return nil, fmt.Errorf("vmstructs: %s: %w", name, err)
	}
	if err := c.checkBuildID(ef.ELF, name, bias, lib.deleted()); err != nil {
		return nil, err
	}
	j, err := newJVM(ctx, Cached(c, corePageCache), syms, bias)
	if err != nil {
		if c.truncated {
			return nil, fmt.Errorf("vmstructs: core %s is truncated (%d bytes, its headers say %d): %w",
				corePath, c.size, c.wantSize, err)
		}
		return nil, fmt.Errorf("vmstructs: core %s: %w", corePath, err)
	}
	j.LibJVM, j.closer = strings.TrimSuffix(lib.Path, " (deleted)"), c
	return j, nil
}

// corePageCache is the page cache of a JVM read from a core (4 MiB): the views read many small
// fields, each of which would otherwise be a pread of the core.
const corePageCache = 1024

// Core returns the core file the JVM was read from, or nil for a live JVM. It belongs to the JVM:
// Close closes it.
func (j *JVM) Core() *CoreMemory {
	c, _ := j.closer.(*CoreMemory)
	return c
}

// CoreThreads returns the threads recorded in the core file the JVM was read from, in the core's
// order (the kernel puts the thread that crashed first), or nil for a live JVM.
func (j *JVM) CoreThreads() []CoreThread {
	if c := j.Core(); c != nil {
		return c.Threads()
	}
	return nil
}

// CoreThread is one thread of a core file (an NT_PRSTATUS note).
type CoreThread struct {
	TID    int // as the dumping tool saw it (the host's tid for a JVM in a pid namespace)
	Signal int // the signal that caused the dump (pr_cursig), 0 for gcore
	Regs   Regs
}

// Regs are a thread's general-purpose registers at the time of the dump.
type Regs struct {
	PC, SP, FP uint64 // rip, rsp, rbp on x86-64; pc, sp, x29 on arm64
	// GPR holds all the registers in the kernel's order: the x86-64 user_regs_struct (r15, r14, r13,
	// r12, rbp, rbx, r11, r10, r9, r8, rax, rcx, rdx, rsi, rdi, orig_rax, rip, cs, eflags, rsp, ss,
	// fs_base, gs_base, ds, es, fs, gs) or the arm64 user_pt_regs (x0-x30, sp, pc, pstate). Nil for
	// other architectures.
	GPR []uint64
}

// FileMapping is a file mapped by the dumped process (an entry of the NT_FILE note).
type FileMapping struct {
	Start, End uint64 // addresses, End exclusive
	Offset     uint64 // file offset of Start, in bytes
	Path       string // as the process saw it; the kernel appends " (deleted)" to deleted files
}

func (m FileMapping) deleted() bool { return strings.HasSuffix(m.Path, " (deleted)") }

// CoreMemory is the memory of a process recorded in an ELF core file. It reads the core's PT_LOAD
// segments and, where a segment or part of it is missing, the file that was mapped there: gcore omits
// unmodified file mappings unless the process's coredump_filter asks for them (HotSpot sets bits 2
// and 3, so a JVM's libjvm text is normally in the core), and the kernel writes only the first page
// of a library. Written pages (a writable segment's missing part) are never read from the file,
// whose contents would be stale. Only libjvm.so is checked to be the file the process mapped (by
// build ID). Memory that neither the core nor an unchanged file holds fails to read with ErrFault,
// also where the kernel left out anonymous memory because it was never written (zeros): the core
// does not say which filter applied.
type CoreMemory struct {
	r         io.ReaderAt
	size      int64
	wantSize  uint64 // where the last of what the headers describe (segments, section headers) ends
	truncated bool
	segs      []coreSegment // sorted by address
	files     []FileMapping // sorted by Start
	notes

	openFile func(name string) (io.ReaderAt, error) // a mapped file, by host path
	root     string
	closer   io.Closer

	mu     sync.Mutex
	opened map[string]openedFile // by Path from the note
}

type openedFile struct {
	r    io.ReaderAt // nil: could not be opened
	name string      // the host path
	err  error
}

type coreSegment struct {
	addr, memsz uint64
	off, filesz uint64 // where the segment's data is in the core, and how much the core meant to hold
	avail       uint64 // how much of it the core holds (less than filesz if it is truncated)
	writable    bool
}

// errNotInCore and errTruncated are the causes of a FaultError for memory the process had mapped
// that the core lacks.
var (
	errNotInCore = errors.New("not in the core file")
	errTruncated = errors.New("past the end of the truncated core file")
)

// OpenCoreMemory opens an ELF core file as Memory. Close releases the core and the mapped files it
// opened.
func OpenCoreMemory(path string, opts CoreOptions) (*CoreMemory, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("vmstructs: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("vmstructs: %w", err)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("vmstructs: %s is not a regular file", path)
	}
	c, err := newCoreMemory(f, st.Size(), nil)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("vmstructs: core %s: %w", path, err)
	}
	c.closer, c.root = f, opts.Root
	c.openFile = c.openHostFile
	return c, nil
}

// newCoreMemory parses the core's headers and notes. openFile, when not nil, replaces the host file
// system for the mapped files (tests, fuzzing).
func newCoreMemory(r io.ReaderAt, size int64, openFile func(string) (io.ReaderAt, error)) (*CoreMemory, error) {
	c := &CoreMemory{r: r, size: size, openFile: openFile, opened: map[string]openedFile{}}
	progs, machine, shEnd, err := readCoreHeaders(r, size)
	if err != nil {
		return nil, err
	}
	c.machine, c.wantSize = machine, shEnd
	var noteBytes int
	for _, p := range progs {
		switch p.Type {
		case elf.PT_LOAD:
			if p.Memsz == 0 {
				continue
			}
			fileSize := min(p.Filesz, p.Memsz)
			s := coreSegment{addr: p.Vaddr, memsz: p.Memsz, off: p.Off, filesz: fileSize, writable: p.Flags&elf.PF_W != 0}
			if end := p.Off + fileSize; end >= p.Off {
				c.wantSize = max(c.wantSize, end)
			} else {
				c.wantSize = math.MaxUint64
			}
			if p.Off < uint64(size) {
				s.avail = min(fileSize, uint64(size)-p.Off)
			}
			c.segs = append(c.segs, s)
		case elf.PT_NOTE:
			if p.Filesz > maxNotes || noteBytes+int(p.Filesz) > maxNotes {
				return nil, fmt.Errorf("notes of %d bytes: too large", p.Filesz)
			}
			if p.Off > uint64(size) || p.Filesz > uint64(size)-p.Off {
				return nil, fmt.Errorf("the core file is truncated: its notes (at %#x, %d bytes) are past its end (%d bytes)",
					p.Off, p.Filesz, size)
			}
			b := make([]byte, p.Filesz)
			if _, err := r.ReadAt(b, int64(p.Off)); err != nil {
				return nil, fmt.Errorf("read notes: %w", err)
			}
			noteBytes += len(b)
			if err := c.parse(b); err != nil {
				return nil, err
			}
		}
	}
	if noteBytes == 0 {
		return nil, errors.New("no notes: not a process core file")
	}
	c.truncated = c.wantSize > uint64(size)
	sort.SliceStable(c.segs, func(i, k int) bool { return c.segs[i].addr < c.segs[k].addr })
	c.files = append([]FileMapping(nil), c.notes.files...)
	sort.SliceStable(c.files, func(i, k int) bool { return c.files[i].Start < c.files[k].Start })
	return c, nil
}

// maxNotes caps the notes read from a core: a JVM thread takes about 2.3 KiB of notes (registers,
// FPU and XSAVE state), so this allows some 100 000 threads.
const maxNotes = 256 << 20

// maxProgs caps the program headers of a core (one per mapping; Linux's default vm.max_map_count is
// 65530).
const maxProgs = 1 << 22

// readCoreHeaders reads the ELF header and program headers of a 64-bit little-endian core file, and
// where its section headers end (gdb writes some after the notes; the kernel none, or one for
// PN_XNUM). debug/elf would do, but it also parses the section headers, and its errors do not tell a
// truncated core from another file.
func readCoreHeaders(r io.ReaderAt, size int64) (progs []elf.ProgHeader, machine elf.Machine, shEnd uint64, err error) {
	var h [64]byte
	n, err := r.ReadAt(h[:], 0)
	if n < 4 || !bytes.Equal(h[:4], []byte(elf.ELFMAG)) {
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, 0, 0, err
		}
		return nil, 0, 0, errors.New("not an ELF file")
	}
	if n < len(h) {
		return nil, 0, 0, fmt.Errorf("the core file is truncated: %d bytes, shorter than an ELF header", size)
	}
	if elf.Class(h[elf.EI_CLASS]) != elf.ELFCLASS64 || elf.Data(h[elf.EI_DATA]) != elf.ELFDATA2LSB {
		return nil, 0, 0, fmt.Errorf("an ELF file of class %v, %v: only 64-bit little-endian cores are supported",
			elf.Class(h[elf.EI_CLASS]), elf.Data(h[elf.EI_DATA]))
	}
	le := binary.LittleEndian
	if t := elf.Type(le.Uint16(h[16:])); t != elf.ET_CORE {
		return nil, 0, 0, fmt.Errorf("an ELF file of type %v, not a core file", t)
	}
	machine = elf.Machine(le.Uint16(h[18:]))
	phoff, shoff := le.Uint64(h[32:]), le.Uint64(h[40:])
	phentsize, phnum := le.Uint16(h[54:]), uint64(le.Uint16(h[56:]))
	if shentsize, shnum := uint64(le.Uint16(h[58:])), uint64(le.Uint16(h[60:])); shoff != 0 && shnum != 0 {
		shEnd = shoff + shnum*shentsize
		if shEnd < shoff {
			shEnd = math.MaxUint64
		}
	}
	if phentsize != 56 {
		return nil, 0, 0, fmt.Errorf("malformed ELF header: program header size %d, want 56", phentsize)
	}
	if phnum == 0xffff { // PN_XNUM: the count is in the first section header's sh_info
		var sh [4]byte
		if shoff > math.MaxInt64-44 {
			return nil, 0, 0, fmt.Errorf("malformed ELF header: section headers at %#x", shoff)
		}
		if _, err := r.ReadAt(sh[:], int64(shoff)+44); err != nil {
			return nil, 0, 0, fmt.Errorf("the core file is truncated: read the program header count: %w", err)
		}
		phnum = uint64(le.Uint32(sh[:]))
	}
	if phnum > maxProgs {
		return nil, 0, 0, fmt.Errorf("malformed ELF header: %d program headers", phnum)
	}
	if phoff > uint64(size) || phnum*56 > uint64(size)-phoff {
		return nil, 0, 0, fmt.Errorf("the core file is truncated: %d bytes, its %d program headers end at %d",
			size, phnum, phoff+phnum*56)
	}
	b := make([]byte, phnum*56)
	if _, err := r.ReadAt(b, int64(phoff)); err != nil {
		return nil, 0, 0, fmt.Errorf("read program headers: %w", err)
	}
	progs = make([]elf.ProgHeader, phnum)
	for i := range progs {
		e := b[i*56:]
		progs[i] = elf.ProgHeader{
			Type: elf.ProgType(le.Uint32(e)), Flags: elf.ProgFlag(le.Uint32(e[4:])),
			Off: le.Uint64(e[8:]), Vaddr: le.Uint64(e[16:]), Paddr: le.Uint64(e[24:]),
			Filesz: le.Uint64(e[32:]), Memsz: le.Uint64(e[40:]), Align: le.Uint64(e[48:]),
		}
	}
	return progs, machine, shEnd, nil
}

// ReadAt implements Memory.
func (c *CoreMemory) ReadAt(p []byte, addr uint64) (int, error) { return c.read(p, addr, true) }

// readCore reads only what the core file itself holds, never the mapped files.
func (c *CoreMemory) readCore(p []byte, addr uint64) (int, error) { return c.read(p, addr, false) }

func (c *CoreMemory) read(p []byte, addr uint64, files bool) (int, error) {
	n := 0
	for n < len(p) {
		a := addr + uint64(n)
		if a < addr {
			return n, &FaultError{Addr: addr, Len: len(p)}
		}
		k, err := c.readChunk(p[n:], a, files)
		n += k
		if err != nil || k == 0 {
			return n, &FaultError{Addr: addr, Len: len(p), Err: err}
		}
	}
	return n, nil
}

// readChunk reads from one source, the segment or file mapping at a, and returns how much it read;
// the caller continues with the next chunk. An unmapped address returns 0 and a nil error.
func (c *CoreMemory) readChunk(p []byte, a uint64, files bool) (int, error) {
	limit := uint64(len(p))
	// A chunk never crosses the start of another segment or mapping, so that a corrupt core with
	// overlapping ones reads the same whatever the size of the read.
	i := sort.Search(len(c.segs), func(i int) bool { return c.segs[i].addr > a }) - 1
	if i+1 < len(c.segs) {
		limit = min(limit, c.segs[i+1].addr-a)
	}
	inSeg, lost := false, errNotInCore
	if i >= 0 && a-c.segs[i].addr < c.segs[i].memsz {
		s := c.segs[i]
		rel := a - s.addr
		if rel < s.filesz {
			lost = errTruncated
		}
		if rel < s.avail {
			m := min(limit, s.avail-rel)
			k, err := c.r.ReadAt(p[:m], int64(s.off+rel))
			if k < int(m) {
				if err == nil || errors.Is(err, io.EOF) {
					err = errTruncated // the file shrank
				}
				return k, err
			}
			return k, nil
		}
		if s.writable || !files {
			return 0, lost
		}
		inSeg = true
		limit = min(limit, s.memsz-rel)
	}
	if !files {
		return 0, nil
	}
	k := sort.Search(len(c.files), func(k int) bool { return c.files[k].Start > a }) - 1
	if k+1 < len(c.files) {
		limit = min(limit, c.files[k+1].Start-a)
	}
	if k < 0 || a >= c.files[k].End || c.files[k].deleted() {
		if inSeg {
			return 0, lost
		}
		return 0, nil
	}
	m := c.files[k]
	limit = min(limit, m.End-a)
	off := m.Offset + (a - m.Start)
	if off < m.Offset || off > math.MaxInt64 {
		return 0, errNotInCore
	}
	f, err := c.mapped(m.Path)
	if err != nil {
		return 0, fmt.Errorf("%w (%w)", errNotInCore, err)
	}
	n, err := f.ReadAt(p[:limit], int64(off))
	if n < int(limit) {
		// Past the end of the file: the process would have got SIGBUS there.
		if err == nil || errors.Is(err, io.EOF) {
			err = errNotInCore
		}
		return n, err
	}
	return n, nil
}

// mapped returns the mapped file named p in the core, opened once.
func (c *CoreMemory) mapped(p string) (io.ReaderAt, error) {
	r, _, err := c.open(p)
	return r, err
}

// open returns a mapped file, opened once, and the host path it was opened at.
func (c *CoreMemory) open(p string) (io.ReaderAt, string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	o, ok := c.opened[p]
	if !ok {
		o.r, o.name, o.err = c.openLocked(p)
		c.opened[p] = o
	}
	return o.r, o.name, o.err
}

func (c *CoreMemory) openLocked(p string) (io.ReaderAt, string, error) {
	p = strings.TrimSuffix(p, " (deleted)")
	name := p
	if c.root != "" {
		name = filepath.Join(c.root, p)
	}
	if c.openFile == nil {
		return nil, name, fmt.Errorf("open %s: %w", name, fs.ErrNotExist)
	}
	r, err := c.openFile(name)
	return r, name, err
}

// openHostFile opens a mapped file on this machine. Only regular files: the paths come from the core,
// and opening a FIFO or a device could block or have effects.
func (c *CoreMemory) openHostFile(name string) (io.ReaderAt, error) {
	st, err := os.Stat(name)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("open %s: not a regular file", name)
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("open %s: not a regular file", name)
	}
	return f, nil
}

// Close releases the core file and the mapped files opened for it.
func (c *CoreMemory) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for k, o := range c.opened {
		if cl, ok := o.r.(io.Closer); ok {
			errs = append(errs, cl.Close())
		}
		delete(c.opened, k)
	}
	if c.closer != nil {
		errs = append(errs, c.closer.Close())
		c.closer = nil
	}
	return errors.Join(errs...)
}

// Truncated reports whether the core file is shorter than its headers say: a dump cut short by
// RLIMIT_CORE, a full disk or a partial copy. What it still holds reads normally; reads of what it
// lost fail.
func (c *CoreMemory) Truncated() bool { return c.truncated }

// PID returns the pid of the dumped process (NT_PRPSINFO, else the first thread's).
func (c *CoreMemory) PID() int { return c.pid }

// Command returns the dumped process's command name and the start of its command line
// (NT_PRPSINFO pr_fname and pr_psargs, at most 15 and 79 bytes).
func (c *CoreMemory) Command() (name, args string) { return c.command, c.args }

// Threads returns the threads recorded in the core.
func (c *CoreMemory) Threads() []CoreThread { return append([]CoreThread(nil), c.threads...) }

// Files returns the file mappings recorded in the core, by address.
func (c *CoreMemory) Files() []FileMapping { return append([]FileMapping(nil), c.files...) }

// pageSize is the process's page size (AT_PAGESZ), needed to match a mapping's file offset to an ELF
// segment.
func (c *CoreMemory) pageSize() uint64 {
	if ps := c.auxPageSize; ps >= 4096 && ps&(ps-1) == 0 && ps <= 1<<20 {
		return ps
	}
	return 4096
}

// libJVM returns the lowest mapping of libjvm.so.
func (c *CoreMemory) libJVM() (FileMapping, bool) {
	for _, m := range c.files { // sorted by Start
		if path.Base(strings.TrimSuffix(m.Path, " (deleted)")) == "libjvm.so" {
			return m, true
		}
	}
	return FileMapping{}, false
}

// checkBuildID compares the build ID of the file opened as libjvm.so with the one in the core's copy
// of libjvm's first page: a JDK updated since the dump would give wrong symbols, and wrong data where
// the core lacks libjvm's read-only segments. The core lacks the page only if the dump was filtered
// hard; then a deleted libjvm (" (deleted)": certainly replaced since) is an error, anything else is
// trusted.
func (c *CoreMemory) checkBuildID(f *elf.File, name string, bias uint64, deleted bool) error {
	want, addr := fileBuildID(f)
	if want == nil {
		return nil // no build ID to compare
	}
	b := make([]byte, len(want)+16+64) // the note's header, name and descriptor
	n, _ := c.readCore(b, bias+addr)
	got, ok := noteBuildID(b[:n])
	switch {
	case !ok && deleted:
		return fmt.Errorf("vmstructs: libjvm.so was deleted after the JVM started and the core lacks its header to check %s against", name)
	case !ok:
		return nil
	case !bytes.Equal(got, want):
		return fmt.Errorf("vmstructs: %s (build ID %x) is not the libjvm.so the JVM ran (build ID %x): open the core where that JDK is installed, or set CoreOptions.Root",
			name, want, got)
	}
	return nil
}

// fileBuildID returns the GNU build ID of an ELF file and the address of its note in the file's
// address space.
func fileBuildID(f *elf.File) (id []byte, addr uint64) {
	for _, p := range f.Progs {
		if p.Type != elf.PT_NOTE || p.Filesz > 1<<16 {
			continue
		}
		b := make([]byte, p.Filesz)
		if _, err := p.ReadAt(b, 0); err != nil {
			continue
		}
		for off := 0; off < len(b); {
			nt, next, ok := nextNote(b, off)
			if !ok {
				break
			}
			if nt.name == "GNU" && nt.typ == ntGNUBuildID {
				return nt.desc, p.Vaddr + uint64(off)
			}
			off = next
		}
	}
	return nil, 0
}

// noteBuildID decodes one GNU build-ID note at the start of b.
func noteBuildID(b []byte) ([]byte, bool) {
	nt, _, ok := nextNote(b, 0)
	if !ok || nt.name != "GNU" || nt.typ != ntGNUBuildID {
		return nil, false
	}
	return nt.desc, true
}

// notes is what the core's PT_NOTE segments say about the process.
type notes struct {
	machine     elf.Machine
	pid         int    // NT_PRPSINFO pr_pid, else the first NT_PRSTATUS
	command     string // NT_PRPSINFO pr_fname
	args        string // NT_PRPSINFO pr_psargs
	threads     []CoreThread
	files       []FileMapping
	auxPageSize uint64 // AT_PAGESZ from NT_AUXV, 0 if absent
}

// Core note types (include/uapi/linux/elf.h); the CORE-owned ones we read.
const (
	ntPrstatus = 1
	ntPrpsinfo = 3
	ntAuxv     = 6
	ntFile     = 0x46494c45 // "FILE"

	ntGNUBuildID = 3 // owner "GNU"
)

// maxCoreThreads and maxCoreFiles cap what one core's notes may list.
const (
	maxCoreThreads = 1 << 20
	maxCoreFiles   = 1 << 22
)

type note struct {
	name string
	typ  uint32
	desc []byte
}

// nextNote decodes the note at off: namesz, descsz and type (4 bytes each), then the name and the
// descriptor, each padded to 4 bytes (core files use 4-byte alignment on 64-bit Linux too).
func nextNote(b []byte, off int) (note, int, bool) {
	if off < 0 || off > len(b) || len(b)-off < 12 {
		return note{}, 0, false
	}
	h := b[off:]
	namesz, descsz := uint64(binary.LittleEndian.Uint32(h)), uint64(binary.LittleEndian.Uint32(h[4:]))
	typ := binary.LittleEndian.Uint32(h[8:])
	nameEnd := 12 + namesz
	descStart := (nameEnd + 3) &^ 3
	descEnd := descStart + descsz
	if descEnd > uint64(len(h)) || descStart > uint64(len(h)) {
		return note{}, 0, false
	}
	name := string(bytes.TrimRight(h[12:nameEnd], "\x00"))
	next := off + int(min((descEnd+3)&^3, uint64(len(h))))
	return note{name: name, typ: typ, desc: h[descStart:descEnd:descEnd]}, next, true
}

// parse decodes the notes of one PT_NOTE segment. It is pure and bounded by len(b).
func (n *notes) parse(b []byte) error {
	for off := 0; off < len(b); {
		nt, next, ok := nextNote(b, off)
		if !ok {
			return fmt.Errorf("malformed note at offset %d of %d", off, len(b))
		}
		off = next
		if nt.name != "CORE" {
			continue // LINUX (XSAVE state), GNU, ...
		}
		var err error
		switch nt.typ {
		case ntPrstatus:
			err = n.prstatus(nt.desc)
		case ntPrpsinfo:
			err = n.prpsinfo(nt.desc)
		case ntAuxv:
			n.auxv(nt.desc)
		case ntFile:
			err = n.fileNote(nt.desc)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// prstatus decodes struct elf_prstatus (include/linux/elfcore.h) of x86-64 and arm64: pr_cursig (s16)
// at 12, pr_pid (the tid) at 32, pr_reg at 112. Other architectures keep the tid only.
func (n *notes) prstatus(d []byte) error {
	if len(d) < 36 {
		return fmt.Errorf("NT_PRSTATUS of %d bytes: too short", len(d))
	}
	if len(n.threads) >= maxCoreThreads {
		return fmt.Errorf("more than %d threads", maxCoreThreads)
	}
	le := binary.LittleEndian
	t := CoreThread{TID: int(int32(le.Uint32(d[32:]))), Signal: int(int16(le.Uint16(d[12:])))}
	nregs, pc, sp, fp := 0, 0, 0, 0
	switch n.machine {
	case elf.EM_X86_64:
		nregs, pc, sp, fp = 27, 16, 19, 4
	case elf.EM_AARCH64:
		nregs, pc, sp, fp = 34, 32, 31, 29
	}
	if nregs > 0 && len(d) >= 112+8*nregs {
		t.Regs.GPR = make([]uint64, nregs)
		for i := range t.Regs.GPR {
			t.Regs.GPR[i] = le.Uint64(d[112+8*i:])
		}
		t.Regs.PC, t.Regs.SP, t.Regs.FP = t.Regs.GPR[pc], t.Regs.GPR[sp], t.Regs.GPR[fp]
	}
	n.threads = append(n.threads, t)
	if n.pid == 0 {
		n.pid = t.TID
	}
	return nil
}

// prpsinfo decodes struct elf_prpsinfo of 64-bit Linux: pr_pid at 24, pr_fname[16] at 40,
// pr_psargs[80] at 56.
func (n *notes) prpsinfo(d []byte) error {
	if len(d) < 136 {
		return fmt.Errorf("NT_PRPSINFO of %d bytes: too short", len(d))
	}
	if pid := int(int32(binary.LittleEndian.Uint32(d[24:]))); pid > 0 {
		n.pid = pid
	}
	n.command = cString(d[40:56])
	n.args = cString(d[56:136])
	return nil
}

// auxv finds AT_PAGESZ in the auxiliary vector (pairs of u64).
func (n *notes) auxv(d []byte) {
	const atPagesz = 6
	for i := 0; i+16 <= len(d); i += 16 {
		if binary.LittleEndian.Uint64(d[i:]) == atPagesz {
			n.auxPageSize = binary.LittleEndian.Uint64(d[i+8:])
			return
		}
	}
}

// fileNote decodes NT_FILE (fs/binfmt_elf.c fill_files_note): count and page size (u64), count
// entries of start, end and file offset in pages (u64 each), then count NUL-terminated paths. The
// kernel writes the real page size; gdb writes 1 with offsets in bytes.
func (n *notes) fileNote(d []byte) error {
	le := binary.LittleEndian
	if len(d) < 16 {
		return fmt.Errorf("NT_FILE of %d bytes: too short", len(d))
	}
	count, pageSize := le.Uint64(d), le.Uint64(d[8:])
	if count > uint64(len(d)-16)/24 || len(n.files)+int(count) > maxCoreFiles {
		return fmt.Errorf("NT_FILE lists %d files in %d bytes", count, len(d))
	}
	names := d[16+24*count:]
	for i := range count {
		e := d[16+24*i:]
		start, end, pgoff := le.Uint64(e), le.Uint64(e[8:]), le.Uint64(e[16:])
		name, rest, found := bytes.Cut(names, []byte{0})
		if !found && len(rest) == 0 && len(name) == 0 {
			return fmt.Errorf("NT_FILE: %d paths for %d files", i, count)
		}
		names = rest
		off := pgoff * pageSize
		if pageSize != 0 && off/pageSize != pgoff || end < start {
			return fmt.Errorf("NT_FILE: malformed entry %d (%#x-%#x, offset %#x pages of %d)", i, start, end, pgoff, pageSize)
		}
		n.files = append(n.files, FileMapping{Start: start, End: end, Offset: off, Path: string(name)})
	}
	return nil
}

func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}
