package jvmti

import (
	"encoding/binary"
	"math"
	"testing"
)

func record(size uint64, sig string) []byte {
	b := binary.NativeEndian.AppendUint64(nil, size)
	b = binary.NativeEndian.AppendUint32(b, uint32(len(sig)))
	return append(b, sig...)
}

func TestHeapProfileParse(t *testing.T) {
	var data []byte
	for range 3 {
		data = append(data, record(32, "LAlloc$AllocA;")...)
	}
	data = append(data, record(1<<20, "[B")...)
	p := &HeapProfile{Interval: 4096}
	if err := p.parse(data); err != nil {
		t.Fatal(err)
	}
	a, b := p.Classes["Alloc$AllocA"], p.Classes["byte[]"]
	if p.Samples != 4 || a == nil || b == nil || a.Samples != 3 || a.SampledBytes != 96 || b.Samples != 1 {
		t.Fatalf("parsed %+v: %+v %+v", p, a, b)
	}
	// A 32-byte object is sampled with probability 1-exp(-32/4096): each sample stands for ~128 of them.
	if want := 3 * 32 / -math.Expm1(-32.0/4096); math.Abs(a.Bytes-want) > 1e-6 || math.Abs(a.Objects-want/32) > 1e-9 {
		t.Errorf("AllocA %+v, want %.1f bytes", a, want)
	}
	// An object far above the interval is sampled every time: it weighs its own size.
	if math.Abs(b.Bytes-(1<<20)) > 1 || math.Abs(b.Objects-1) > 1e-9 {
		t.Errorf("byte[] %+v", b)
	}
	for _, bad := range [][]byte{data[:5], data[:len(data)-1], record(0, "[B"), record(8, ""), append(record(8, "[B"), 1, 2)} {
		if err := (&HeapProfile{Interval: 4096}).parse(bad); err == nil {
			t.Errorf("parse(%x): no error", bad)
		}
	}
}

func FuzzHeapProfileParse(f *testing.F) {
	f.Add(append(record(32, "LAlloc$AllocA;"), record(56, "[B")...), 4096)
	f.Add(record(1<<30, "[Ljava/lang/Object;"), 1)
	f.Add([]byte{1, 2, 3}, 512<<10)
	f.Fuzz(func(t *testing.T, data []byte, interval int) {
		if interval <= 0 {
			return
		}
		p := &HeapProfile{Interval: interval}
		if p.parse(data) != nil {
			return
		}
		n := 0
		for name, c := range p.Classes {
			n += c.Samples
			if name == "" || c.Bytes < float64(c.SampledBytes)-1e-6*float64(c.SampledBytes) || c.Objects < float64(c.Samples)*(1-1e-9) {
				t.Errorf("class %q: %+v", name, c)
			}
		}
		if n != p.Samples {
			t.Errorf("%d samples, classes hold %d", p.Samples, n)
		}
	})
}
