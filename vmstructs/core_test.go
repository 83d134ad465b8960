//go:build linux

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
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/internal/testutil"
)

// synthCore builds small ELF core files the way the kernel and gdb lay them out.
type synthCore struct {
	machine    elf.Machine
	segs       []synthSeg
	notes      []synthNote
	notesFirst bool // the kernel writes the notes first, gdb last
}

type synthSeg struct {
	addr, memsz uint64
	data        []byte // the bytes in the core: p_filesz = len(data)
	flags       elf.ProgFlag
}

type synthNote struct {
	name string
	typ  uint32
	desc []byte
}

func encodeNotes(notes []synthNote) []byte {
	var b bytes.Buffer
	le := binary.LittleEndian
	pad := func() {
		for b.Len()%4 != 0 {
			b.WriteByte(0)
		}
	}
	for _, n := range notes {
		_ = binary.Write(&b, le, [3]uint32{uint32(len(n.name) + 1), uint32(len(n.desc)), n.typ})
		b.WriteString(n.name)
		b.WriteByte(0)
		pad()
		b.Write(n.desc)
		pad()
	}
	return b.Bytes()
}

func (s synthCore) bytes() []byte {
	le := binary.LittleEndian
	notes := encodeNotes(s.notes)
	phnum := len(s.segs) + 1
	off := uint64(64 + 56*phnum)
	noteOff := off
	if s.notesFirst {
		off += uint64(len(notes))
	}
	segOffs := make([]uint64, len(s.segs))
	for i, sg := range s.segs {
		segOffs[i] = off
		off += uint64(len(sg.data))
	}
	if !s.notesFirst {
		noteOff = off
	}
	machine := s.machine
	if machine == 0 {
		machine = elf.EM_X86_64
	}
	h := make([]byte, 64)
	copy(h, elf.ELFMAG)
	h[elf.EI_CLASS], h[elf.EI_DATA], h[elf.EI_VERSION] = byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), 1
	le.PutUint16(h[16:], uint16(elf.ET_CORE))
	le.PutUint16(h[18:], uint16(machine))
	le.PutUint32(h[20:], 1)
	le.PutUint64(h[32:], 64)
	le.PutUint16(h[52:], 64)
	le.PutUint16(h[54:], 56)
	le.PutUint16(h[56:], uint16(phnum))
	out := bytes.NewBuffer(h)
	ph := func(typ elf.ProgType, flags elf.ProgFlag, off, vaddr, filesz, memsz uint64) {
		_ = binary.Write(out, le, [2]uint32{uint32(typ), uint32(flags)})
		_ = binary.Write(out, le, [6]uint64{off, vaddr, 0, filesz, memsz, 1})
	}
	ph(elf.PT_NOTE, elf.PF_R, noteOff, 0, uint64(len(notes)), 0)
	for i, sg := range s.segs {
		ph(elf.PT_LOAD, sg.flags, segOffs[i], sg.addr, uint64(len(sg.data)), sg.memsz)
	}
	if s.notesFirst {
		out.Write(notes)
	}
	for _, sg := range s.segs {
		out.Write(sg.data)
	}
	if !s.notesFirst {
		out.Write(notes)
	}
	return out.Bytes()
}

// prstatusNote is an x86-64 NT_PRSTATUS; regs is the user_regs_struct.
func prstatusNote(tid, sig int, regs [27]uint64) synthNote {
	d := make([]byte, 336)
	binary.LittleEndian.PutUint16(d[12:], uint16(sig))
	binary.LittleEndian.PutUint32(d[32:], uint32(tid))
	for i, r := range regs {
		binary.LittleEndian.PutUint64(d[112+8*i:], r)
	}
	return synthNote{"CORE", ntPrstatus, d}
}

func prpsinfoNote(pid int, fname, args string) synthNote {
	d := make([]byte, 136)
	binary.LittleEndian.PutUint32(d[24:], uint32(pid))
	copy(d[40:55], fname)
	copy(d[56:135], args)
	return synthNote{"CORE", ntPrpsinfo, d}
}

// fileNote is an NT_FILE with offsets in pages of pageSize (the kernel: 4096; gdb: 1).
func fileNote(pageSize uint64, maps ...FileMapping) synthNote {
	var b bytes.Buffer
	le := binary.LittleEndian
	_ = binary.Write(&b, le, [2]uint64{uint64(len(maps)), pageSize})
	for _, m := range maps {
		_ = binary.Write(&b, le, [3]uint64{m.Start, m.End, m.Offset / pageSize})
	}
	for _, m := range maps {
		b.WriteString(m.Path)
		b.WriteByte(0)
	}
	return synthNote{"CORE", ntFile, b.Bytes()}
}

func auxvNote(pageSize uint64) synthNote {
	d := make([]byte, 48)
	le := binary.LittleEndian
	le.PutUint64(d, 3) // AT_PHDR
	le.PutUint64(d[8:], 0x400040)
	le.PutUint64(d[16:], 6) // AT_PAGESZ
	le.PutUint64(d[24:], pageSize)
	return synthNote{"CORE", ntAuxv, d}
}

func corePattern(seed byte, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7) + byte(i>>8)
	}
	return b
}

func TestParseNotes(t *testing.T) {
	var regs [27]uint64
	for i := range regs {
		regs[i] = uint64(0x1000 + i)
	}
	arm := make([]byte, 112+34*8+8)
	binary.LittleEndian.PutUint32(arm[32:], 77)
	for i := range 34 {
		binary.LittleEndian.PutUint64(arm[112+8*i:], uint64(0x2000+i))
	}
	maps := []FileMapping{
		{Start: 0x7f0000000000, End: 0x7f0000251000, Offset: 0, Path: "/usr/lib/jvm/x/lib/server/libjvm.so"},
		{Start: 0x7f0000251000, End: 0x7f0000fa4000, Offset: 0x251000, Path: "/usr/lib/jvm/x/lib/server/libjvm.so"},
		{Start: 0x7f1000000000, End: 0x7f1000001000, Offset: 0x3000, Path: "/dev/zero (deleted)"},
	}
	for _, pageSize := range []uint64{1, 4096} {
		for _, tc := range []struct {
			machine elf.Machine
			status  synthNote
			want    CoreThread
		}{
			{elf.EM_X86_64, prstatusNote(1234, 11, regs), CoreThread{TID: 1234, Signal: 11, Regs: Regs{
				PC: 0x1000 + 16, SP: 0x1000 + 19, FP: 0x1000 + 4, GPR: regs[:]}}},
			{elf.EM_AARCH64, synthNote{"CORE", ntPrstatus, arm}, CoreThread{TID: 77, Regs: Regs{
				PC: 0x2000 + 32, SP: 0x2000 + 31, FP: 0x2000 + 29, GPR: func() []uint64 {
					r := make([]uint64, 34)
					for i := range r {
						r[i] = uint64(0x2000 + i)
					}
					return r
				}()}}},
			{elf.EM_RISCV, prstatusNote(5, 0, regs), CoreThread{TID: 5}},
		} {
			b := encodeNotes([]synthNote{
				prpsinfoNote(1234, "java", "java -cp . Sleeper"),
				tc.status,
				{"LINUX", 0x202, make([]byte, 832)}, // NT_X86_XSTATE: skipped
				auxvNote(16384),
				fileNote(pageSize, maps...),
				{"GNU", 1, []byte{1, 2, 3}},
			})
			n := notes{machine: tc.machine}
			if err := n.parse(b); err != nil {
				t.Fatal(err)
			}
			want := notes{machine: tc.machine, pid: 1234, command: "java", args: "java -cp . Sleeper",
				threads: []CoreThread{tc.want}, files: maps, auxPageSize: 16384}
			if d := cmp.Diff(want, n, cmp.AllowUnexported(notes{})); d != "" {
				t.Errorf("%v, page size %d (-want +got):\n%s", tc.machine, pageSize, d)
			}
		}
	}
	// Without NT_PRPSINFO the first thread names the process.
	n := notes{machine: elf.EM_X86_64}
	if err := n.parse(encodeNotes([]synthNote{prstatusNote(42, 0, regs), prstatusNote(43, 0, regs)})); err != nil || n.pid != 42 {
		t.Errorf("pid %d, %v; want 42", n.pid, err)
	}
}

func TestParseNotesMalformed(t *testing.T) {
	good := encodeNotes([]synthNote{fileNote(1, FileMapping{Start: 1, End: 2, Path: "/a"})})
	tooMany := slices.Clone(good)
	binary.LittleEndian.PutUint64(tooMany[12+8:], 1<<40) // count
	overflow := fileNote(1<<40, FileMapping{Start: 1, End: 2, Offset: 1 << 40, Path: "/a"})
	binary.LittleEndian.PutUint64(overflow.desc[16+16:], 1<<40) // offset in pages of 2^40 bytes
	for name, b := range map[string][]byte{
		"truncated header":   good[:8],
		"truncated desc":     good[:len(good)-4],
		"huge descsz":        append(slices.Clone(good[:4]), append([]byte{0xff, 0xff, 0xff, 0xff}, good[8:]...)...),
		"NT_FILE count":      tooMany,
		"NT_FILE offset":     encodeNotes([]synthNote{overflow}),
		"NT_FILE end<start":  encodeNotes([]synthNote{fileNote(1, FileMapping{Start: 2, End: 1, Path: "/a"})}),
		"NT_FILE no paths":   encodeNotes([]synthNote{{"CORE", ntFile, good[12+8 : 12+8+16+24]}}),
		"short NT_PRSTATUS":  encodeNotes([]synthNote{{"CORE", ntPrstatus, make([]byte, 20)}}),
		"short NT_PRPSINFO":  encodeNotes([]synthNote{{"CORE", ntPrpsinfo, make([]byte, 100)}}),
		"short NT_FILE":      encodeNotes([]synthNote{{"CORE", ntFile, make([]byte, 8)}}),
		"trailing bytes":     append(slices.Clone(good), 1, 2, 3),
		"garbage after note": append(slices.Clone(good), bytes.Repeat([]byte{0xff}, 16)...),
	} {
		n := notes{machine: elf.EM_X86_64}
		if err := n.parse(b); err == nil {
			t.Errorf("%s: no error (%+v)", name, n)
		}
	}
}

// memFiles serves mapped files from memory.
type memFiles map[string][]byte

func (m memFiles) open(name string) (io.ReaderAt, error) {
	b, ok := m[name]
	if !ok {
		return nil, fmt.Errorf("open %s: %w", name, fs.ErrNotExist)
	}
	return bytes.NewReader(b), nil
}

// sampleCore has every kind of region CoreMemory distinguishes.
func sampleCore() (synthCore, memFiles) {
	lib := corePattern(1, 0x6000)
	short := corePattern(2, 0x1800)
	files := memFiles{"/lib/a.so": lib, "/lib/short.so": short, "/lib/gone.so": corePattern(3, 0x2000)}
	return synthCore{
		segs: []synthSeg{
			{addr: 0x10000, memsz: 0x2000, data: corePattern(10, 0x2000), flags: elf.PF_R | elf.PF_W},
			// Kernel style: only the ELF header page of a text segment; the rest is in the file.
			{addr: 0x20000, memsz: 0x4000, data: corePattern(11, 0x1000), flags: elf.PF_R | elf.PF_X},
			// A written, file-backed segment that was not dumped: never read from the file.
			{addr: 0x30000, memsz: 0x1000, flags: elf.PF_R | elf.PF_W},
			// Right after the gdb-omitted mapping at 0x40000.
			{addr: 0x42000, memsz: 0x1000, data: corePattern(12, 0x1000), flags: elf.PF_R | elf.PF_W},
		},
		notes: []synthNote{
			prpsinfoNote(99, "java", "java Demo"),
			prstatusNote(99, 0, [27]uint64{16: 0x20010, 19: 0x10100, 4: 0x10200}),
			prstatusNote(100, 0, [27]uint64{16: 0x20020}),
			fileNote(4096,
				FileMapping{Start: 0x20000, End: 0x24000, Offset: 0, Path: "/lib/a.so"},
				FileMapping{Start: 0x30000, End: 0x31000, Offset: 0x5000, Path: "/lib/a.so"},
				FileMapping{Start: 0x40000, End: 0x42000, Offset: 0x2000, Path: "/lib/a.so"},
				FileMapping{Start: 0x50000, End: 0x52000, Offset: 0, Path: "/lib/gone.so (deleted)"},
				FileMapping{Start: 0x60000, End: 0x62000, Offset: 0, Path: "/lib/short.so"},
				FileMapping{Start: 0x70000, End: 0x71000, Offset: 0, Path: "/lib/missing.so"},
			),
		},
	}, files
}

func TestCoreMemory(t *testing.T) {
	sc, files := sampleCore()
	for _, notesFirst := range []bool{false, true} {
		sc.notesFirst = notesFirst
		b := sc.bytes()
		c, err := newCoreMemory(bytes.NewReader(b), int64(len(b)), files.open)
		if err != nil {
			t.Fatal(err)
		}
		lib, short := files["/lib/a.so"], files["/lib/short.so"]
		for _, tc := range []struct {
			addr uint64
			size int
			want []byte // nil: fault after len(prefix) bytes
			pre  []byte
		}{
			{addr: 0x10010, size: 16, want: sc.segs[0].data[0x10:0x20]},
			{addr: 0x11ff8, size: 16, pre: sc.segs[0].data[0x1ff8:]}, // runs into a gap
			{addr: 0x20ff8, size: 16, want: append(slices.Clone(sc.segs[1].data[0xff8:]), lib[0x1000:0x1008]...)},
			{addr: 0x23ff0, size: 16, want: lib[0x3ff0:0x4000]},
			{addr: 0x23ff0, size: 32, pre: lib[0x3ff0:0x4000]},
			{addr: 0x30000, size: 8},
			{addr: 0x41ff8, size: 16, want: append(slices.Clone(lib[0x3ff8:0x4000]), sc.segs[3].data[:8]...)},
			{addr: 0x50000, size: 8},
			{addr: 0x617f8, size: 16, pre: short[0x17f8:]}, // the file ends inside the mapping
			{addr: 0x70000, size: 8},
			{addr: 0x80000, size: 8},
			{addr: 1<<64 - 4, size: 8},
		} {
			p := make([]byte, tc.size)
			n, err := c.ReadAt(p, tc.addr)
			switch {
			case tc.want != nil && (err != nil || !bytes.Equal(p[:n], tc.want)):
				t.Errorf("read %d at %#x: %d, %v: %x, want %x", tc.size, tc.addr, n, err, p[:n], tc.want)
			case tc.want == nil && (!errors.Is(err, ErrFault) || !bytes.Equal(p[:n], tc.pre)):
				t.Errorf("read %d at %#x: %d, %v: %x, want a fault after %x", tc.size, tc.addr, n, err, p[:n], tc.pre)
			}
		}
		if n, err := c.readCore(make([]byte, 8), 0x21000); err == nil {
			t.Errorf("readCore read %d bytes of the file", n)
		}
		if got := c.PID(); got != 99 {
			t.Errorf("pid %d", got)
		}
		if th := c.Threads(); len(th) != 2 || th[0].TID != 99 || th[0].Regs.PC != 0x20010 || th[0].Regs.SP != 0x10100 || th[1].TID != 100 {
			t.Errorf("threads %+v", th)
		}
		if name, args := c.Command(); name != "java" || args != "java Demo" {
			t.Errorf("command %q %q", name, args)
		}
		if lib, ok := c.libJVM(); ok {
			t.Errorf("libjvm %+v in a core without it", lib)
		}
	}
}

// TestCoreMemoryConcurrent reads a core from several goroutines (run with -race): the mapped files
// are opened once, under a lock.
func TestCoreMemoryConcurrent(t *testing.T) {
	sc, files := sampleCore()
	b := sc.bytes()
	c, err := newCoreMemory(bytes.NewReader(b), int64(len(b)), files.open)
	if err != nil {
		t.Fatal(err)
	}
	m := Cached(c, 4)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 5))
			for range 2000 {
				addr := 0x10000 + uint64(rng.IntN(0x60000))
				if err := readDiff(m, c, addr, 1+rng.IntN(64)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := c.Close(); err != nil {
		t.Error(err)
	}
}

func TestCoreMemoryTruncated(t *testing.T) {
	sc, files := sampleCore()
	sc.notesFirst = true
	b := sc.bytes()
	// Cut the core in the middle of its first segment: kernel cores hit by RLIMIT_CORE look like this.
	cut := len(b) - len(sc.segs[3].data) - len(sc.segs[1].data) - len(sc.segs[0].data) + 0x800
	c, err := newCoreMemory(bytes.NewReader(b[:cut]), int64(cut), files.open)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Truncated() || c.wantSize != uint64(len(b)) {
		t.Errorf("truncated %v, wants %d bytes; the full core has %d", c.truncated, c.wantSize, len(b))
	}
	p := make([]byte, 16)
	if n, err := c.ReadAt(p, 0x107f8); n != 8 || !errors.Is(err, errTruncated) {
		t.Errorf("read across the cut: %d, %v", n, err)
	}
	// A read-only segment the cut lost is still served by its file.
	if _, err := c.ReadAt(p, 0x20000); err != nil || !bytes.Equal(p, files["/lib/a.so"][:16]) {
		t.Errorf("read from the file: %v", err)
	}
	// gdb writes its notes last: every cut loses them, and every prefix fails cleanly.
	sc.notesFirst = false
	b = sc.bytes()
	for n := range len(b) {
		if _, err := newCoreMemory(bytes.NewReader(b[:n]), int64(n), files.open); err == nil {
			t.Fatalf("core cut to %d of %d bytes: no error", n, len(b))
		}
	}
}

func TestOpenCoreFileErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	random := make([]byte, 1<<16)
	for i := range random {
		random[i] = byte(rand.Uint32())
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := sampleCore()
	noNotes := synthCore{segs: sc.segs}.bytes()[:64+56*5]
	binary.LittleEndian.PutUint16(noNotes[56:], 4)
	copy(noNotes[64:], noNotes[64+56:]) // drop PT_NOTE
	big := sc.bytes()
	big[elf.EI_DATA] = byte(elf.ELFDATA2MSB)
	for _, tc := range []struct{ name, path, want string }{
		{"missing", filepath.Join(dir, "nope"), "no such file"},
		{"directory", dir, "not a regular file"},
		{"empty", write("empty", nil), "not an ELF file"},
		{"random", write("random", random), "not an ELF file"},
		{"executable", exe, "not a core file"},
		{"header only", write("header", sc.bytes()[:40]), "truncated"},
		{"program headers cut", write("phdrs", sc.bytes()[:100]), "truncated"},
		{"notes cut", write("notes", sc.bytes()[:len(sc.bytes())-10]), "truncated"},
		{"big-endian", write("be", big), "little-endian"},
		{"no notes", write("nonotes", noNotes), "no notes"},
		{"no libjvm", write("nolibjvm", sc.bytes()), "no libjvm.so in the core"},
	} {
		_, err := OpenCoreFile(context.Background(), tc.path)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
		if tc.name == "no libjvm" && !errors.Is(err, ErrNotJVM) {
			t.Errorf("%s: %v does not wrap ErrNotJVM", tc.name, err)
		}
	}
}

// FuzzParseNotes: any bytes parse to notes or an error, never a panic or an unbounded allocation.
func FuzzParseNotes(f *testing.F) {
	sc, _ := sampleCore()
	f.Add(encodeNotes(sc.notes), uint16(elf.EM_X86_64))
	f.Add(encodeNotes([]synthNote{{"CORE", ntPrstatus, make([]byte, 400)}}), uint16(elf.EM_AARCH64))
	f.Add(encodeNotes([]synthNote{fileNote(1, FileMapping{Start: 1, End: 2, Path: "x"})}), uint16(0))
	f.Add(encodeNotes([]synthNote{auxvNote(4096), {"LINUX", 0x202, []byte{1}}}), uint16(elf.EM_X86_64))
	f.Fuzz(func(t *testing.T, b []byte, machine uint16) {
		n := notes{machine: elf.Machine(machine)}
		if err := n.parse(b); err != nil {
			return
		}
		if len(n.files) > len(b)/24 || len(n.threads) > len(b)/36 {
			t.Fatalf("%d files and %d threads from %d bytes", len(n.files), len(n.threads), len(b))
		}
		for _, m := range n.files {
			if m.End < m.Start {
				t.Fatalf("mapping %+v ends before it starts", m)
			}
		}
	})
}

// fuzzCore builds a core from a compact description, so that the fuzzer mutates layouts rather than
// the bytes of a whole core (minimizing an input takes time quadratic in its size). segs holds 4
// bytes per segment (address/16, size, bytes in the core, flags), maps 4 per file mapping
// (address/16, size, file offset, which file); cut bytes are cut off the end of the core.
func fuzzCore(segs, maps []byte, notesFirst bool, cut uint16) []byte {
	var sc synthCore
	sc.notesFirst = notesFirst
	for i := 0; i+4 <= len(segs) && i < 64; i += 4 {
		sc.segs = append(sc.segs, synthSeg{addr: uint64(segs[i]) * 16, memsz: uint64(segs[i+1]),
			data: corePattern(segs[i], int(segs[i+2])), flags: elf.ProgFlag(segs[i+3] & 7)})
	}
	paths := []string{"/a", "/short", "/gone (deleted)", "/missing"}
	var fm []FileMapping
	for i := 0; i+4 <= len(maps) && i < 64; i += 4 {
		start := uint64(maps[i]) * 16
		fm = append(fm, FileMapping{Start: start, End: start + uint64(maps[i+1]), Offset: uint64(maps[i+2]),
			Path: paths[maps[i+3]%4]})
	}
	sc.notes = []synthNote{fileNote(1, fm...)}
	b := sc.bytes()
	return b[:len(b)-min(int(cut), len(b))]
}

var fuzzFiles = memFiles{"/a": corePattern(1, 256), "/short": corePattern(2, 40), "/gone": corePattern(3, 256)}

// FuzzCoreMemory checks CoreMemory on any layout of segments and file mappings, overlapping, cut
// short or past their files: opening fails, or a read of n bytes returns what n reads of one byte
// return, up to the first fault, which wraps ErrFault.
func FuzzCoreMemory(f *testing.F) {
	// Like sampleCore: a full segment, a header page plus file, a written segment, a gdb-omitted
	// mapping followed by a segment, a deleted file, a short file.
	segs := []byte{0x10, 0x40, 0x40, 6, 0x20, 0x40, 0x10, 5, 0x30, 0x10, 0, 6, 0x42, 0x10, 0x10, 4}
	maps := []byte{0x20, 0x40, 0, 0, 0x30, 0x10, 0x40, 0, 0x40, 0x20, 0x20, 0, 0x50, 0x40, 0, 2, 0x60, 0x40, 0, 1}
	f.Add(segs, maps, false, uint16(0), uint16(0x208), uint16(16))
	f.Add(segs, maps, true, uint16(0x30), uint16(0x41e), uint16(64))
	f.Add(segs[:8], maps[:8], false, uint16(0), uint16(0x100), uint16(300))
	f.Fuzz(func(t *testing.T, segs, maps []byte, notesFirst bool, cut, addr, size uint16) {
		b := fuzzCore(segs, maps, notesFirst, cut)
		c, err := newCoreMemory(bytes.NewReader(b), int64(len(b)), fuzzFiles.open)
		if err != nil {
			return
		}
		a := uint64(addr)
		if addr > 0xff00 {
			a = -uint64(addr - 0xff00) // the top of the address space
		}
		p := make([]byte, size%512)
		n, err := c.ReadAt(p, a)
		if n > len(p) || (err == nil) != (n == len(p)) {
			t.Fatalf("read %d at %#x: %d, %v", len(p), a, n, err)
		}
		if err != nil && !errors.Is(err, ErrFault) {
			t.Fatalf("read %d at %#x: %v does not wrap ErrFault", len(p), a, err)
		}
		var one [1]byte
		for i := range n {
			if k, err := c.ReadAt(one[:], a+uint64(i)); k != 1 || err != nil || one[0] != p[i] {
				t.Fatalf("byte %d at %#x: %x, %v; the read of %d gave %x", i, a+uint64(i), one[0], err, len(p), p[i])
			}
		}
		if n < len(p) {
			if k, _ := c.ReadAt(one[:], a+uint64(n)); k != 0 {
				t.Fatalf("byte at %#x reads alone but not in the read of %d at %#x", a+uint64(n), len(p), a)
			}
		}
		if k, err := c.readCore(p, a); k > len(p) || (err == nil) != (k == len(p)) {
			t.Fatalf("readCore %d at %#x: %d, %v", len(p), a, k, err)
		}
	})
}

// FuzzCoreHeaders feeds any bytes to the header and note parsing of a core.
func FuzzCoreHeaders(f *testing.F) {
	f.Add(fuzzCore([]byte{1, 16, 16, 4}, []byte{1, 16, 0, 0}, false, 0))
	f.Add(fuzzCore(nil, nil, true, 0))
	f.Add(fuzzCore([]byte{1, 16, 16, 4}, nil, false, 20))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := newCoreMemory(bytes.NewReader(b), int64(len(b)), fuzzFiles.open)
		if err != nil {
			return
		}
		_, _ = c.libJVM()
		_ = c.pageSize()
		var p [16]byte
		_, _ = c.ReadAt(p[:], 0x100)
	})
}

// smallJVM keeps the cores of test JVMs small (some 400 MB instead of 2.6 GB with the default heap,
// class space and malloc arenas) and their threads stable.
var smallJVM = testutil.JVMOptions{
	JVMArgs: []string{"-Xmx32m", "-Xms8m", "-XX:+UseSerialGC", "-XX:ReservedCodeCacheSize=16m",
		"-XX:CompressedClassSpaceSize=16m", "-XX:-UseDynamicNumberOfCompilerThreads"},
	Env: []string{"MALLOC_ARENA_MAX=2"},
}

// gcore dumps the process into dir with gdb's gcore; it stops the process for a moment.
func gcore(t *testing.T, pid int, dir string) string {
	t.Helper()
	tool := testutil.MustHaveTool(t, "gcore")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, tool, "-o", filepath.Join(dir, "core"), strconv.Itoa(pid)).CombinedOutput()
	path := filepath.Join(dir, "core."+strconv.Itoa(pid))
	if err != nil {
		os.Remove(path)
		t.Fatalf("gcore %d: %v\n%s", pid, err, out)
	}
	t.Cleanup(func() { os.Remove(path) }) // big: do not wait for TempDir's cleanup
	return path
}

func taskTIDs(t *testing.T, pid int) []int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// checkCore compares the JVM read from a core with the live one.
func checkCore(t *testing.T, live, core *JVM, pid int, before, after []int) {
	t.Helper()
	if d := cmp.Diff(live.Table, core.Table, cmpopts.IgnoreUnexported(Table{})); d != "" {
		t.Errorf("tables differ (-live +core):\n%s", d)
	}
	lv, err1 := live.Version()
	cv, err2 := core.Version()
	if err1 != nil || err2 != nil || lv != cv {
		t.Errorf("Version: live %q, %v; core %q, %v", lv, err1, cv, err2)
	}
	if core.PID != 0 || core.Core().PID() != pid || core.LibJVM != live.LibJVM || core.Bias != live.Bias {
		t.Errorf("core: PID %d, pid %d, libjvm %s at %#x; live: pid %d, %s at %#x",
			core.PID, core.Core().PID(), core.LibJVM, core.Bias, pid, live.LibJVM, live.Bias)
	}
	if live.CoreThreads() != nil || live.Core() != nil {
		t.Error("a live JVM has a core")
	}
	threads := core.CoreThreads()
	var got []int
	for _, th := range threads {
		got = append(got, th.TID)
		// The registers are right if the thread's pc is code and its sp a stack in the core.
		var b [8]byte
		if _, err := core.Mem.ReadAt(b[:], th.Regs.PC); err != nil || len(th.Regs.GPR) != 27 {
			t.Errorf("thread %d: pc %#x: %v", th.TID, th.Regs.PC, err)
		}
		if _, err := core.Mem.ReadAt(b[:], th.Regs.SP); err != nil {
			t.Errorf("thread %d: sp %#x: %v", th.TID, th.Regs.SP, err)
		}
	}
	for _, tid := range before {
		if slices.Contains(after, tid) && !slices.Contains(got, tid) {
			t.Errorf("thread %d, alive before and after gcore, is not in the core", tid)
		}
	}
	for _, tid := range got {
		if !slices.Contains(before, tid) && !slices.Contains(after, tid) {
			t.Errorf("thread %d of the core was never seen in /proc/%d/task", tid, pid)
		}
	}
	if !slices.Contains(got, pid) || len(got) < 5 {
		t.Errorf("core threads %v: want the main thread %d and the JVM's own", got, pid)
	}
}

func TestOpenCore(t *testing.T) {
	testutil.MustHaveTool(t, "gcore")
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		ctx := context.Background()
		// A JDK of a root filesystem runs with that root's /usr: the core names its files as the JVM saw them.
		coreOpts := CoreOptions{Root: jdk.Root}
		j := testutil.StartJVM(t, jdk, smallJVM)
		live, err := Open(ctx, j.PID)
		if err != nil {
			t.Fatal(err)
		}
		defer live.Close()
		text, ok := live.Symbol("JNI_CreateJavaVM")
		if !ok {
			t.Fatal("no JNI_CreateJavaVM in libjvm")
		}

		t.Run("default", func(t *testing.T) {
			// HotSpot sets its coredump_filter to 0x3f, which makes gcore dump libjvm whole.
			before, liveThreads := taskTIDs(t, j.PID), javaThreads(t, live)
			path := gcore(t, j.PID, t.TempDir())
			after := taskTIDs(t, j.PID)
			core, err := OpenCore(ctx, path, coreOpts)
			if err != nil {
				t.Fatal(err)
			}
			defer core.Close()
			checkCore(t, live, core, j.PID, before, after)
			checkThreads(t, liveThreads, javaThreads(t, live), javaThreads(t, core))
			if _, err := core.Core().readCore(make([]byte, 16), text); err != nil {
				t.Errorf("libjvm's text is not in the core: %v", err)
			}

			// Root: the paths resolve under it, and a libjvm.so of another build is refused.
			root := t.TempDir()
			top := "/" + strings.Split(strings.TrimPrefix(live.LibJVM, "/"), "/")[0] // "/usr", or "/var" for an extracted JDK
			if err := os.Symlink(filepath.Join(jdk.Root, top), filepath.Join(root, top)); err != nil {
				t.Fatal(err)
			}
			if rc, err := OpenCore(ctx, path, CoreOptions{Root: root}); err != nil {
				t.Errorf("Root %s: %v", root, err)
			} else {
				rc.Close()
			}
			if _, err := OpenCore(ctx, path, CoreOptions{Root: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "CoreOptions.Root") {
				t.Errorf("empty root: %v", err)
			}
			for _, other := range testutil.JDKs(t) {
				if other.Home == jdk.Home {
					continue
				}
				fake := t.TempDir()
				lib := filepath.Join(fake, live.LibJVM)
				if err := os.MkdirAll(filepath.Dir(lib), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(filepath.Join(other.Home, "lib/server/libjvm.so"), lib); err != nil {
					t.Fatal(err)
				}
				if _, err := OpenCore(ctx, path, CoreOptions{Root: fake}); err == nil || !strings.Contains(err.Error(), "is not the libjvm.so the JVM ran") {
					t.Errorf("libjvm.so of %s: %v", other, err)
				}
			}

			// Truncated copies fail with an error, whatever the cut.
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range []int64{0, 63, 64 + 56*3, st.Size() / 2, st.Size() - 1} {
				cut := cutCopy(t, path, n)
				cj, err := OpenCore(ctx, cut, coreOpts)
				os.Remove(cut)
				switch {
				case err == nil && n == st.Size()-1 && cj.Core().Truncated():
					// Only gdb's section headers, which nothing reads, are cut.
					cj.Close()
				case err == nil:
					cj.Close()
					t.Errorf("core cut to %d of %d bytes: no error", n, st.Size())
				default:
					t.Logf("cut to %d bytes: %v", n, err)
				}
			}
		})

		t.Run("filtered", func(t *testing.T) {
			// With the kernel's default filter gcore leaves out the file mappings nobody wrote to:
			// libjvm's text and read-only data (where VMStructs' names are) come from the file.
			if err := os.WriteFile(fmt.Sprintf("/proc/%d/coredump_filter", j.PID), []byte("0x33"), 0); err != nil {
				t.Fatal(err)
			}
			before, liveThreads := taskTIDs(t, j.PID), javaThreads(t, live)
			path := gcore(t, j.PID, t.TempDir())
			after := taskTIDs(t, j.PID)
			core, err := OpenCore(ctx, path, coreOpts)
			if err != nil {
				t.Fatal(err)
			}
			defer core.Close()
			checkCore(t, live, core, j.PID, before, after)
			checkThreads(t, liveThreads, javaThreads(t, live), javaThreads(t, core))
			if _, err := core.Core().readCore(make([]byte, 16), text); err == nil {
				t.Error("libjvm's text is in the filtered core: the file fallback was not tested")
			}
		})

		// Last: the JVM dies. The kernel's cores differ from gdb's: notes first, a PT_LOAD for every
		// mapping (p_filesz 0 where the filter left it out, one page for an ELF header), NT_FILE
		// offsets in pages.
		t.Run("kernel", func(t *testing.T) {
			testutil.MustHaveTool(t, "prlimit")
			pattern, err := os.ReadFile("/proc/sys/kernel/core_pattern")
			if err != nil {
				t.Fatal(err)
			}
			name := strings.TrimSpace(string(pattern))
			if strings.HasPrefix(name, "|") || strings.Contains(name, "/") || strings.Contains(name, "%") {
				testutil.Skipf(t, "the kernel's core_pattern %q does not write a core into the working directory", name)
			}
			if usesPID, _ := os.ReadFile("/proc/sys/kernel/core_uses_pid"); strings.TrimSpace(string(usesPID)) == "1" {
				name += "." + strconv.Itoa(j.PID)
			}
			path := filepath.Join(j.Dir, name)
			t.Cleanup(func() { os.Remove(path) })
			if out, err := exec.Command("prlimit", "--pid", strconv.Itoa(j.PID), "--core=unlimited").CombinedOutput(); err != nil {
				t.Fatalf("prlimit: %v\n%s", err, out)
			}
			before := javaThreads(t, live)
			// HotSpot has no handler for SIGABRT: the kernel dumps the JVM, which was started by this
			// test (and is still running, as Open just read it).
			if err := unix.Kill(j.PID, unix.SIGABRT); err != nil {
				t.Fatal(err)
			}
			if err := j.Wait(2 * time.Minute); err == nil || !strings.Contains(err.Error(), "core dumped") {
				t.Fatalf("the JVM did not dump core: %v", err)
			}
			core, err := OpenCore(ctx, path, coreOpts)
			if err != nil {
				t.Fatal(err)
			}
			defer core.Close()
			c := core.Core()
			if d := cmp.Diff(live.Table, core.Table, cmpopts.IgnoreUnexported(Table{})); d != "" {
				t.Errorf("tables differ (-live +core):\n%s", d)
			}
			if d := cmp.Diff(before, javaThreads(t, core)); d != "" {
				t.Errorf("Threads() (-live +core):\n%s", d)
			}
			if c.PID() != j.PID || c.Truncated() || c.pageSize() != uint64(os.Getpagesize()) {
				t.Errorf("pid %d, truncated %v, page size %d", c.PID(), c.Truncated(), c.pageSize())
			}
			if th := core.CoreThreads(); len(th) == 0 || th[0].Signal != int(unix.SIGABRT) {
				t.Errorf("the first thread should have the signal: %+v", th)
			}
			if _, err := c.readCore(make([]byte, 16), text); err == nil {
				t.Error("libjvm's text is in the filtered core: the file fallback was not tested")
			}
		})
	})
}

// threadSummary is what a JVM's Java threads have in common, live and in a core: names, tids, Java ids
// and addresses (a live JVM also has HostTID; states may change).
type threadSummary struct {
	Name       string
	TID        int
	ID         int64
	JavaThread uint64
	Daemon     bool
}

func javaThreads(t *testing.T, j *JVM) []threadSummary {
	t.Helper()
	threads, err := j.Threads()
	if err != nil {
		t.Fatalf("Threads: %v", err)
	}
	var out []threadSummary
	for _, th := range threads {
		out = append(out, threadSummary{th.Name, th.TID, th.ID, th.JavaThread, th.Daemon})
	}
	slices.SortFunc(out, func(a, b threadSummary) int { return a.TID - b.TID })
	return out
}

// checkThreads compares the Java threads of a core with those of the live JVM just before and after
// the dump, which must agree: the test JVMs' threads are stable.
func checkThreads(t *testing.T, before, after, core []threadSummary) {
	t.Helper()
	if d := cmp.Diff(before, after); d != "" {
		t.Fatalf("the live JVM's threads changed during gcore (-before +after):\n%s", d)
	}
	if d := cmp.Diff(before, core); d != "" {
		t.Errorf("Threads() (-live +core):\n%s", d)
	}
	if !slices.ContainsFunc(core, func(s threadSummary) bool { return s.Name == "jvmkit-worker" }) {
		t.Errorf("no jvmkit-worker among the core's threads %v", core)
	}
}

// cutCopy copies the first n bytes of a file next to it.
func cutCopy(t *testing.T, path string, n int64) string {
	t.Helper()
	src, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.CreateTemp(filepath.Dir(path), "cut-*")
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	if _, err := io.CopyN(dst, src, n); err != nil {
		os.Remove(dst.Name())
		t.Fatal(err)
	}
	return dst.Name()
}

func TestOpenCoreNotJVM(t *testing.T) {
	p := testutil.StartProcess(t, "sleep", "600")
	path := gcore(t, p.Process.Pid, t.TempDir())
	_, err := OpenCoreFile(context.Background(), path)
	if !errors.Is(err, ErrNotJVM) || !strings.Contains(err.Error(), "no libjvm.so in the core") {
		t.Errorf("core of sleep: %v", err)
	}
}
