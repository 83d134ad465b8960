package usdt

import (
	"debug/elf"
	"encoding/binary"
	"io"
	"testing"

	"github.com/cilium/ebpf/asm"
)

func testProbe(t *testing.T, args string) *Probe {
	t.Helper()
	a, err := ParseArgs(elf.EM_X86_64, args)
	if err != nil {
		t.Fatal(err)
	}
	return &Probe{Provider: "p", Name: "n", Machine: elf.EM_X86_64, ArgString: args, Args: a, FileOffset: 1}
}

func TestAggregateProgram(t *testing.T) {
	p := testProbe(t, "-8@%rax 8@%rdx -4@%ecx -4@%ebx")
	s := aggSpec{probe: p, opts: AggregateOptions{PID: 7, Key: []int{1, 2}, Sum: []int{3}, String: &StringArg{Ptr: 1, Len: 2}, StringSize: 256, MaxKeys: 10}}
	insns, err := s.program()
	if err != nil {
		t.Fatal(err)
	}
	for _, ins := range insns {
		if ins.OpCode == asm.InvalidOpCode {
			t.Fatalf("invalid instruction in\n%v", insns)
		}
	}
	if err := insns.Marshal(io.Discard, binary.LittleEndian); err != nil {
		t.Fatal(err)
	}
	// An entry as the program writes it decodes to the bucket.
	o := s.opts
	key := make([]byte, o.keySize())
	val := make([]byte, o.valueSize())
	ne := binary.NativeEndian
	ne.PutUint64(key[8:], 0x1000)
	ne.PutUint64(key[16:], 2)
	ne.PutUint64(val, 3)
	ne.PutUint64(val[8:], 1)
	ne.PutUint64(val[16:], 112)
	ne.PutUint32(val[24:], 2)
	copy(val[32:], "[B")
	b, err := decodeBucket(&o, []aggSpec{s}, key, val)
	if err != nil {
		t.Fatal(err)
	}
	if b.Count != 3 || b.OutOfRange != 1 || b.Sums[0] != 112 || string(b.String.Data) != "[B" || b.Key[0] != 0x1000 || b.String.Truncated {
		t.Errorf("bucket %+v", b)
	}
	if _, err := decodeBucket(&o, []aggSpec{s}, key[:8], val); err == nil {
		t.Error("short key decoded")
	}
	bad := s
	bad.opts.Key = []int{9}
	if _, err := bad.program(); err == nil {
		t.Error("key argument 9 of 4 accepted")
	}
	// A weight with every part (HotSpot's sampled allocations) assembles; its size argument must exist.
	epoch, direct, top := int32(16), int32(8), int32(24)
	weighted := s
	weighted.opts.Weight = &ThreadWeight{Add: []int32{8, 24}, Sub: []int32{16}, Epoch: &epoch, Direct: &direct, Top: &top, Size: 3, Max: 1 << 30}
	insns, err = weighted.program()
	if err != nil {
		t.Fatal(err)
	}
	if err := insns.Marshal(io.Discard, binary.LittleEndian); err != nil {
		t.Fatal(err)
	}
	weighted.opts.Weight = &ThreadWeight{Add: []int32{8}, Epoch: &epoch, Top: &top, Size: 4}
	if _, err := weighted.program(); err == nil {
		t.Error("size argument 4 of 4 accepted")
	}
	// With TLAB windows, it assembles too, and a window record decodes.
	win := weighted
	win.opts.Weight = &ThreadWeight{Add: []int32{8, 24}, Sub: []int32{16}, Epoch: &epoch, Direct: &direct, Top: &top, Size: 3,
		Window: &BufferWindow{Bytes: 4096, Stable: 0x7000, Handle: func(Window) {}}}
	if insns, err = win.program(); err != nil {
		t.Fatal(err)
	}
	if err := insns.Marshal(io.Discard, binary.LittleEndian); err != nil {
		t.Fatal(err)
	}
	rec := make([]byte, windowHeader+16+4096)
	ne.PutUint32(rec[4:], 24)
	ne.PutUint64(rec[8:], 8192)
	ne.PutUint64(rec[16:], 0xa000)
	ne.PutUint64(rec[24:], 8000)
	ne.PutUint64(rec[32:], 0x1000)
	ne.PutUint64(rec[40:], 2)
	w, err := decodeWindow(&win.opts, 1, rec)
	if err != nil || w.Weight != 8192 || w.Start != 0xa000 || w.Used != 8000 || len(w.Data) != 24 || w.Key[0] != 0x1000 {
		t.Errorf("window %+v, %v", w, err)
	}
	ne.PutUint32(rec[4:], 5000)
	if _, err := decodeWindow(&win.opts, 1, rec); err == nil {
		t.Error("a window of more bytes than its record decoded")
	}
	// Windows need the whole sampled weight, and the trace refuses them.
	if _, err := (&ThreadWeight{Add: []int32{8}, Window: &BufferWindow{Bytes: 8, Stable: 1, Handle: func(Window) {}}}).withDefaults("x"); err == nil {
		t.Error("a window without Epoch, Direct and Top accepted")
	}
	if _, err := (&Options{Weight: win.opts.Weight}).withDefaults(); err == nil {
		t.Error("a trace with a window accepted")
	}
}
