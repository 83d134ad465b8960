//go:build linux && amd64

package unwind

import (
	"bytes"
	"compress/gzip"
	"encoding/gob"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/jvmkit/jvmkit/vmstructs"
)

// Recorded fixtures (testdata/walk-jdk*.gob.gz) hold what the walker read while it walked a set of
// live samples: the VMStructs table, the libjvm symbols the code cache needs, the thread list, the
// symbolizers' answers, a memory image of every byte read (the code cache, methods, debug info) and,
// per sample, its registers, the bytes it read that differ from the image (its stack) and the stack
// the live walk produced. Replaying a sample against them must give the same stack; FuzzWalk and the
// throughput benchmark use them too. `go test ./unwind -run TestRecord -record` (as root, with the
// JDKs installed) writes them again.

var record = flag.Bool("record", false, "record the walk fixtures in testdata from live JVMs")

// span is a run of recorded bytes.
type span struct {
	Addr uint64
	Data []byte
}

// image is memory made of sorted, non-overlapping spans.
type image []span

// read serves p from one span; ok is false if no single span holds all of it.
func (im image) read(p []byte, addr uint64) bool {
	i := sort.Search(len(im), func(i int) bool { return im[i].Addr+uint64(len(im[i].Data)) > addr })
	if i == len(im) || im[i].Addr > addr {
		return false
	}
	s := &im[i]
	off := addr - s.Addr
	if off+uint64(len(p)) > uint64(len(s.Data)) || off+uint64(len(p)) < off {
		return false
	}
	copy(p, s.Data[off:])
	return true
}

// byte1 reads one byte.
func (im image) byte1(addr uint64) (byte, bool) {
	var b [1]byte
	ok := im.read(b[:], addr)
	return b[0], ok
}

// replayMem is a recorded image with one sample's own bytes over it.
type replayMem struct {
	base image
	over image
}

func (m *replayMem) ReadAt(p []byte, addr uint64) (int, error) {
	if len(m.over) > 0 && m.over.read(p, addr) {
		return len(p), nil
	}
	if m.base.read(p, addr) && !m.overlaps(addr, uint64(len(p))) {
		return len(p), nil
	}
	// Parts from either: byte by byte, the sample's first.
	for i := range p {
		a := addr + uint64(i)
		b, ok := m.over.byte1(a)
		if !ok {
			b, ok = m.base.byte1(a)
		}
		if !ok {
			return i, &vmstructs.FaultError{Addr: addr, Len: len(p)}
		}
		p[i] = b
	}
	return len(p), nil
}

func (m *replayMem) overlaps(addr, n uint64) bool {
	if len(m.over) == 0 {
		return false
	}
	i := sort.Search(len(m.over), func(i int) bool { return m.over[i].Addr+uint64(len(m.over[i].Data)) > addr })
	return i < len(m.over) && m.over[i].Addr < addr+n
}

// symResult is a recorded answer of a Symbolizer.
type symResult struct {
	Name, Module string
	OK           bool
}

type symRecorder struct {
	base   Symbolizer
	m      map[uint64]symResult
	unwind map[unwindKey]unwindResult
	code   map[uint64]bool
}

func (s *symRecorder) Symbolize(pc uint64) (string, string, bool) {
	name, mod, ok := s.base.Symbolize(pc)
	s.m[pc] = symResult{name, mod, ok}
	return name, mod, ok
}

// unwindKey and unwindResult are a recorded answer of nativeCode.unwindInfo.
type unwindKey struct {
	PC  uint64
	Ret bool
}

type unwindResult struct {
	Code  bool
	Row   cfiRow
	NoFDE bool   // RowErr was errNoFDE
	Err   string // another RowErr
}

func (s *symRecorder) unwindInfo(pc uint64, ret bool) nativeInfo {
	info := s.base.(nativeCode).unwindInfo(pc, ret)
	r := unwindResult{Code: info.Code, Row: info.Row, NoFDE: errors.Is(info.RowErr, errNoFDE)}
	if info.RowErr != nil && !r.NoFDE {
		r.Err = info.RowErr.Error()
	}
	s.unwind[unwindKey{pc, ret}] = r
	return info
}

func (s *symRecorder) isCode(pc uint64) bool {
	ok := s.base.(nativeCode).isCode(pc)
	s.code[pc] = ok
	return ok
}

type symReplay map[uint64]symResult

func (s symReplay) Symbolize(pc uint64) (string, string, bool) {
	r := s[pc]
	return r.Name, r.Module, r.OK
}

// nativeReplay answers as the recorded FileSymbols did.
type nativeReplay struct {
	symReplay
	unwind map[unwindKey]unwindResult
	code   map[uint64]bool
}

func (n nativeReplay) unwindInfo(pc uint64, ret bool) nativeInfo {
	r, ok := n.unwind[unwindKey{pc, ret}]
	if !ok {
		return nativeInfo{RowErr: errNoFDE}
	}
	info := nativeInfo{Code: r.Code, Row: r.Row}
	switch {
	case r.NoFDE:
		info.RowErr = errNoFDE
	case r.Err != "":
		info.RowErr = errors.New(r.Err)
	}
	return info
}

func (n nativeReplay) isCode(pc uint64) bool { return n.code[pc] }

// symOnly hides every method of a Symbolizer but Symbolize.
type symOnly struct{ s Symbolizer }

func (s symOnly) Symbolize(pc uint64) (string, string, bool) { return s.s.Symbolize(pc) }

// page is a recorded page: its bytes and which of them were read.
type page struct {
	data  [pageSize]byte
	valid [pageSize]bool
}

const pageSize = 4096

// recorder is a vmstructs.Memory that reads through to a live process and keeps every byte read: the
// first value seen in the shared image, later different values in the current sample's overlay.
// While a sample with a stack copy is walked, reads within the copy are served from it.
type recorder struct {
	base   vmstructs.Memory
	shared map[uint64]*page
	over   map[uint64]*page // the current sample's
	// stackLo and stack are the current sample's stack copy.
	stackLo uint64
	stack   []byte
}

func newRecorder(base vmstructs.Memory) *recorder {
	return &recorder{base: base, shared: map[uint64]*page{}}
}

func (r *recorder) begin(s *Sample) {
	r.over = map[uint64]*page{}
	r.stackLo, r.stack = s.Regs.SP, s.Stack
}

// end returns the sample's overlay.
func (r *recorder) end() image {
	im := spans(r.over)
	r.over, r.stack = nil, nil
	return im
}

func (r *recorder) ReadAt(p []byte, addr uint64) (int, error) {
	var n int
	var err error
	if len(r.stack) > 0 && addr >= r.stackLo && addr-r.stackLo+uint64(len(p)) <= uint64(len(r.stack)) {
		n = copy(p, r.stack[addr-r.stackLo:])
	} else {
		n, err = r.base.ReadAt(p, addr)
	}
	for i := range n {
		a := addr + uint64(i)
		pg := r.shared[a&^(pageSize-1)]
		if pg == nil {
			pg = &page{}
			r.shared[a&^(pageSize-1)] = pg
		}
		o := a & (pageSize - 1)
		switch {
		case !pg.valid[o]:
			pg.data[o], pg.valid[o] = p[i], true
		case pg.data[o] != p[i] && r.over != nil:
			op := r.over[a&^(pageSize-1)]
			if op == nil {
				op = &page{}
				r.over[a&^(pageSize-1)] = op
			}
			op.data[o], op.valid[o] = p[i], true
		}
	}
	return n, err
}

// spans turns pages into sorted spans of contiguous valid bytes.
func spans(pages map[uint64]*page) image {
	addrs := make([]uint64, 0, len(pages))
	for a := range pages {
		addrs = append(addrs, a)
	}
	sort.Slice(addrs, func(i, j int) bool { return addrs[i] < addrs[j] })
	var out image
	for _, a := range addrs {
		pg := pages[a]
		for o := 0; o < pageSize; o++ {
			if !pg.valid[o] {
				continue
			}
			addr := a + uint64(o)
			if n := len(out); n > 0 && out[n-1].Addr+uint64(len(out[n-1].Data)) == addr {
				out[n-1].Data = append(out[n-1].Data, pg.data[o])
			} else {
				out = append(out, span{Addr: addr, Data: []byte{pg.data[o]}})
			}
		}
	}
	return out
}

// fixture is a recording (see the top of this file).
type fixture struct {
	JDK     string // "jdk17"
	Version string
	Fields  []vmstructs.Field
	Types   []vmstructs.Type
	Ints    []vmstructs.Constant
	Longs   []vmstructs.Constant
	Symbols map[string]uint64
	Threads map[int]uint64
	Names   map[int]string // thread names by tid
	Image   image
	Native  map[uint64]symResult
	Kernel  map[uint64]symResult
	// Unwind and Code are the native symbolizer's call frame information and code checks.
	Unwind  map[unwindKey]unwindResult
	Code    map[uint64]bool
	Samples []recordedSample
}

type recordedSample struct {
	Sample  Sample // without its stack copy: the bytes read from it are in Overlay
	Overlay image
	Want    Stack
}

// fixtureRecorder walks live samples through a recorder.
type fixtureRecorder struct {
	f        *fixture
	rec      *recorder
	w        *Walker
	nat, krn *symRecorder
}

func newFixtureRecorder(j *vmstructs.JVM, jdk string, threads map[int]uint64, names map[int]string, native, kernel Symbolizer) (*fixtureRecorder, error) {
	v, _ := j.Version()
	fr := &fixtureRecorder{
		f: &fixture{JDK: jdk, Version: v, Fields: j.Table.Fields, Types: j.Table.Types, Ints: j.Table.Ints, Longs: j.Table.Longs,
			Symbols: j.CodeCacheSymbols(), Threads: threads, Names: names},
		rec: newRecorder(j.Mem),
		nat: &symRecorder{base: native, m: map[uint64]symResult{}, unwind: map[unwindKey]unwindResult{}, code: map[uint64]bool{}},
		krn: &symRecorder{base: kernel, m: map[uint64]symResult{}},
	}
	var nat Symbolizer = fr.nat
	if _, ok := native.(nativeCode); !ok {
		nat = symOnly{fr.nat}
	}
	w, err := New(j.WithMemory(fr.rec), Options{Native: nat, Kernel: symOnly{fr.krn}})
	if err != nil {
		return nil, err
	}
	w.SetThreads(threads)
	fr.w = w
	return fr, nil
}

// walk walks a live sample (the thread stopped, or a perf sample with its stack copy) and keeps it.
func (fr *fixtureRecorder) walk(s *Sample) Stack {
	fr.rec.begin(s)
	smp := *s
	smp.Stack = nil
	smp.Kernel = append([]uint64(nil), s.Kernel...)
	st := fr.w.Walk(&smp)
	fr.f.Samples = append(fr.f.Samples, recordedSample{Sample: smp, Overlay: fr.rec.end(), Want: st})
	return st
}

func (fr *fixtureRecorder) fixture() *fixture {
	fr.f.Image = spans(fr.rec.shared)
	fr.f.Native, fr.f.Kernel = fr.nat.m, fr.krn.m
	fr.f.Unwind, fr.f.Code = fr.nat.unwind, fr.nat.code
	return fr.f
}

func (f *fixture) save(path string) error {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err := gob.NewEncoder(zw).Encode(f); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

func loadFixture(path string) (*fixture, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	zr, err := gzip.NewReader(file)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var f fixture
	if err := gob.NewDecoder(zr).Decode(&f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &f, nil
}

// fixtures loads every recorded fixture; there must be some.
func fixtures(tb testing.TB) []*fixture {
	tb.Helper()
	paths, _ := filepath.Glob("testdata/walk-*.gob.gz")
	if len(paths) == 0 {
		tb.Fatal("no testdata/walk-*.gob.gz fixtures: record them with go test ./unwind -run TestRecord -record")
	}
	var out []*fixture
	for _, p := range paths {
		f, err := loadFixture(p)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, f)
	}
	return out
}

// replayer walks a fixture's samples offline.
type replayer struct {
	f   *fixture
	mem *replayMem
	w   *Walker
	// codeLo and codeHi bound the code heaps' committed memory.
	codeLo, codeHi uint64
}

func (f *fixture) replayer(tb testing.TB) *replayer {
	tb.Helper()
	mem := &replayMem{base: f.Image}
	j := vmstructs.NewRecordedJVM(vmstructs.NewTable(f.Fields, f.Types, f.Ints, f.Longs), f.Symbols, mem)
	var native Symbolizer = symReplay(f.Native)
	if f.Unwind != nil {
		native = nativeReplay{symReplay(f.Native), f.Unwind, f.Code}
	}
	w, err := New(j, Options{Native: native, Kernel: symReplay(f.Kernel)})
	if err != nil {
		tb.Fatalf("%s: %v", f.JDK, err)
	}
	w.SetThreads(f.Threads)
	r := &replayer{f: f, mem: mem, w: w, codeLo: ^uint64(0)}
	for _, h := range w.cc.Heaps() {
		r.codeLo, r.codeHi = min(r.codeLo, h.Low), max(r.codeHi, h.High)
	}
	return r
}

func (r *replayer) walk(i int) Stack {
	s := &r.f.Samples[i]
	r.mem.over = s.Overlay
	smp := s.Sample
	return r.w.Walk(&smp)
}
