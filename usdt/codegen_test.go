package usdt

import (
	"debug/elf"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata/codegen.golden")

func mustArgs(t *testing.T, m elf.Machine, s string) []Arg {
	t.Helper()
	args, err := ParseArgs(m, s)
	if err != nil {
		t.Fatal(err)
	}
	return args
}

// TestProgramGolden pins the generated programs of two synthetic sites, one per machine, with every
// argument form; regenerate with -update after a deliberate change (the kernel tests load them for real).
func TestProgramGolden(t *testing.T) {
	x86 := &Probe{Provider: "p", Name: "x86", Machine: elf.EM_X86_64, PC: 0x1000, FileOffset: 0x1000,
		Args: mustArgs(t, elf.EM_X86_64, "8@%rdi -4@%ecx 1@%ah -4@$-1 1@$-56 -8@-144(%rbp) -4@4(%rdx,%rsi,4) -8@glob+16(%rip) 4f@%eax 8@(,%rax,8)")}
	x86.Args[7].SymbolAddr = 0x4010
	arm := &Probe{Provider: "p", Name: "arm64", Machine: elf.EM_AARCH64, PC: 0x2000, FileOffset: 0x2000,
		Args: mustArgs(t, elf.EM_AARCH64, "8@x0 -4@w1 8@[sp, 16] -2@[x29, -8] 8@5")}
	var b strings.Builder
	for _, s := range []progSpec{
		{probe: x86, site: 3, strings: []StringArg{{Ptr: 0, Len: 1}, {Ptr: 9, Len: -1}}, stringSize: 64, pid: 1234},
		{probe: arm, site: 0, stringSize: 256},
	} {
		insns, err := s.program()
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "# %s %v, record %d bytes\n%v\n", s.probe, s.probe.Machine, s.recordSize(), insns)
	}
	golden := filepath.Join("testdata", "codegen.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), b.String()); diff != "" {
		t.Errorf("programs differ from %s (-want +got; -update rewrites it):\n%s", golden, diff)
	}
}

// TestProgramGoldenStack pins the programs with the optional sections and sampling: x86-64 with registers,
// a 2 KiB stack copy and one firing in 10, arm64 with registers only (testdata/codegen-stack.golden).
func TestProgramGoldenStack(t *testing.T) {
	x86 := &Probe{Provider: "p", Name: "x86", Machine: elf.EM_X86_64, PC: 0x1000, FileOffset: 0x1000,
		Args: mustArgs(t, elf.EM_X86_64, "8@%rdi -4@%esi")}
	arm := &Probe{Provider: "p", Name: "arm64", Machine: elf.EM_AARCH64, PC: 0x2000, FileOffset: 0x2000,
		Args: mustArgs(t, elf.EM_AARCH64, "8@x0")}
	var b strings.Builder
	for _, s := range []progSpec{
		{probe: x86, site: 1, strings: []StringArg{{Ptr: 0, Len: 1}}, stringSize: 16, pid: 1234, regs: true, stackSize: 2 << 10, sample: 10},
		{probe: arm, site: 0, stringSize: 8, regs: true},
	} {
		insns, err := s.program()
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "# %s %v, record %d bytes (%d without the stack)\n%v\n", s.probe, s.probe.Machine, s.recordSize(), s.fixedSize(), insns)
	}
	golden := filepath.Join("testdata", "codegen-stack.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), b.String()); diff != "" {
		t.Errorf("programs differ from %s (-want +got; -update rewrites it):\n%s", golden, diff)
	}
}

// TestDecodeStack decodes records with registers and a stack copy, shorter than the largest.
func TestDecodeStack(t *testing.T) {
	p := &Probe{Provider: "p", Name: "n", Machine: elf.EM_X86_64, Args: mustArgs(t, elf.EM_X86_64, "8@%rdi")}
	s := progSpec{probe: p, site: 0, stringSize: 8, regs: true, stackSize: 2048}
	ne := binary.NativeEndian
	rec := make([]byte, s.fixedSize()+24)
	ne.PutUint64(rec[recPIDTGID:], 5<<32|6)
	rec[recNArgs] = 1
	ne.PutUint32(rec[recFlags:], flagRegs|flagStack)
	regs := recHeader + 8
	for i := range 21 {
		ne.PutUint64(rec[regs+8*i:], uint64(100+i))
	}
	stack := regs + 8*21
	ne.PutUint32(rec[stack:], 24)
	copy(rec[stack+stackHeader:], "0123456789abcdefghijklmn")
	e, err := s.decode(rec)
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Regs) != 21 || e.Regs[20] != 120 || e.StackAddr != 119 || string(e.Stack) != "0123456789abcdefghijklmn" {
		t.Errorf("decoded %+v", e)
	}
	ne.PutUint32(rec[stack:], 25) // more than the record holds
	if _, err := s.decode(rec); err == nil {
		t.Error("record with a stack longer than itself decoded")
	}
	ne.PutUint32(rec[stack:], 24)
	ne.PutUint32(rec[recFlags:], flagRegs)
	if _, err := s.decode(rec); err == nil {
		t.Error("record without the stack flag decoded")
	}
}

// A weighed record (Options.Weight: HotSpot's sampled allocations with stacks) assembles with every part of
// the weight, and its weight section sits between the strings and the registers.
func TestDecodeWeight(t *testing.T) {
	p := &Probe{Provider: "p", Name: "n", Machine: elf.EM_X86_64, Args: mustArgs(t, elf.EM_X86_64, "8@%rdi -4@%esi 8@%rdx 8@%rcx")}
	epoch, direct, top := int32(16), int32(8), int32(24)
	w := &ThreadWeight{Add: []int32{8, 24}, Sub: []int32{16}, Epoch: &epoch, Direct: &direct, Top: &top, Size: 3, Max: 1 << 30}
	s := progSpec{probe: p, site: 0, stringSize: 8, strings: []StringArg{{Ptr: 0, Len: 1}}, stackSize: 2048, weight: w}
	insns, err := s.program()
	if err != nil {
		t.Fatal(err)
	}
	if err := insns.Marshal(io.Discard, binary.LittleEndian); err != nil {
		t.Fatal(err)
	}
	ne := binary.NativeEndian
	rec := make([]byte, s.fixedSize()+8)
	rec[recNArgs], rec[recNStrings] = 4, 1
	ne.PutUint32(rec[recFlags:], flagWeight|flagRegs|flagStack)
	weight := recHeader + 8*4 + strHeader + 8
	for _, c := range []struct {
		weight, unweighted uint64
		want               bool
	}{{8192, 0, true}, {0, 1, false}} {
		ne.PutUint64(rec[weight:], c.weight)
		ne.PutUint64(rec[weight+8:], c.unweighted)
		ne.PutUint64(rec[weight+weightSection+8*19:], 0x7000) // sp
		e, err := s.decode(rec)
		if err != nil {
			t.Fatal(err)
		}
		if e.Weight != c.weight || e.Weighted != c.want || e.StackAddr != 0x7000 {
			t.Errorf("weight %d, weighted %v, sp %#x: want %d, %v, 0x7000", e.Weight, e.Weighted, e.StackAddr, c.weight, c.want)
		}
	}
	ne.PutUint32(rec[recFlags:], flagRegs|flagStack)
	if _, err := s.decode(rec); err == nil {
		t.Error("record without the weight flag decoded")
	}
	bad := s
	bad.weight = &ThreadWeight{Add: []int32{8}, Epoch: &epoch, Top: &top, Size: 4}
	if _, err := bad.program(); err == nil {
		t.Error("size argument 4 of 4 accepted")
	}
}

func TestProgramErrors(t *testing.T) {
	many := &Probe{Provider: "p", Name: "n", Machine: elf.EM_X86_64, Args: make([]Arg, MaxArgs+1)}
	i386 := &Probe{Provider: "p", Name: "n", Machine: elf.EM_386}
	two := &Probe{Provider: "p", Name: "n", Machine: elf.EM_X86_64, Args: mustArgs(t, elf.EM_X86_64, "8@%rdi 4@%esi")}
	for _, tc := range []struct {
		s    progSpec
		want string
	}{
		{progSpec{probe: many, stringSize: 8}, "more than 12"},
		{progSpec{probe: i386, stringSize: 8}, "not supported"},
		{progSpec{probe: two, stringSize: 8, strings: []StringArg{{Ptr: 1, Len: 1}}}, "no string"},
		{progSpec{probe: two, stringSize: 8, strings: []StringArg{{Ptr: 2, Len: -1}}}, "no string"},
		{progSpec{probe: two, stringSize: 12}, "string size"},
	} {
		if _, err := tc.s.program(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error about %q", tc.s, err, tc.want)
		}
	}
}

func TestDecode(t *testing.T) {
	p := &Probe{Provider: "p", Name: "n", Machine: elf.EM_X86_64, Args: mustArgs(t, elf.EM_X86_64, "8@%rdi -4@%esi 8@%rdx -8@(%rax)")}
	s := progSpec{probe: p, site: 2, stringSize: 8, strings: []StringArg{{Ptr: 0, Len: 1}, {Ptr: 2, Len: -1}, {Ptr: 0, Len: 3}}}
	rec := make([]byte, s.recordSize())
	ne := binary.NativeEndian
	ne.PutUint64(rec[recTime:], 123456789)
	ne.PutUint64(rec[recPIDTGID:], 77<<32|78)
	ne.PutUint32(rec[recSite:], 2)
	ne.PutUint16(rec[recFaults:], 1<<3)
	rec[recNArgs], rec[recNStrings] = 4, 3
	for i, v := range []uint64{0x1000, 20, 0x2000, 0} {
		ne.PutUint64(rec[recHeader+8*i:], v)
	}
	str := recHeader + 8*4
	slot := func(k, n int, data string) {
		off := str + k*(strHeader+8)
		ne.PutUint32(rec[off:], uint32(int32(n)))
		ne.PutUint32(rec[off+4:], uint32(s.strings[k].Ptr))
		copy(rec[off+strHeader:], data)
	}
	slot(0, 8, "abcdefgh")       // length 20, 8 copied: truncated
	slot(1, 4, "xyz\x00")        // a C string of 3 bytes
	slot(2, -14, "\x00\x00\x00") // -EFAULT
	e, err := s.decode(rec)
	if err != nil {
		t.Fatal(err)
	}
	want := Event{Site: 2, Probe: p, Time: 123456789, PID: 77, TID: 78, Faults: 8,
		Args: []uint64{0x1000, 20, 0x2000, 0},
		Strings: []String{
			{Arg: 0, Data: []byte("abcdefgh"), Truncated: true},
			{Arg: 2, Data: []byte("xyz")},
			{Arg: 0, Fault: true},
		}}
	if diff := cmp.Diff(want, e); diff != "" {
		t.Errorf("decode (-want +got):\n%s", diff)
	}
	if _, err := s.decode(rec[:len(rec)-1]); err == nil {
		t.Error("short record decoded")
	}
	rec[recFlags] = 1
	if _, err := s.decode(rec); err == nil {
		t.Error("record with unknown flags decoded")
	}
}

func TestDecodeValue(t *testing.T) {
	for _, tc := range []struct {
		spec string
		raw  uint64
		want any
	}{
		{"-4@%eax", 0xffffffffffffffff, int64(-1)},
		{"4@%eax", 0xffffffff, uint64(0xffffffff)},
		{"4f@%eax", 0x40900000, float32(4.5)},
		{"8f@%rdx", 0xc01b000000000000, float64(-6.75)},
	} {
		a, err := ParseArg(elf.EM_X86_64, tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		if got := a.Decode(tc.raw); got != tc.want {
			t.Errorf("%s Decode(%#x) = %v (%T), want %v (%T)", tc.spec, tc.raw, got, got, tc.want, tc.want)
		}
	}
}
