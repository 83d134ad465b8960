package vmstructs

import (
	"encoding/binary"
	"errors"
	"testing"
)

// tlabClasses are the classes of the walks below: two instance classes, a byte[] and an int[] (header 16,
// elements of 1 and 4 bytes), as layout helpers.
var tlabClasses = map[uint64]int32{
	0x800010: 32,                           // an instance of 32 bytes
	0x800020: 16 | 1,                       // 16 bytes, slow-path bit set
	0x800030: -1<<30 | 16<<16 | 8<<8,       // byte[]: tag, header size 16, element type, log2 size 0
	0x800040: -1<<30 | 16<<16 | 10<<8 | 2,  // int[]
	0x800050: -1<<30 | 16<<16 | 12<<8 | 99, // a broken element size
}

// putObject appends an object of class k (narrow, base 0x800000, shift 0) of size bytes, with an array's
// length at offset 12.
func putObject(b []byte, k uint64, size int, length uint32) []byte {
	o := make([]byte, size)
	binary.LittleEndian.PutUint64(o, 1) // the mark word
	binary.LittleEndian.PutUint32(o[8:], uint32(k-0x800000))
	if size >= 16 {
		binary.LittleEndian.PutUint32(o[12:], length)
	}
	return append(b, o...)
}

func walk(l ObjectLayout, data []byte) (map[uint64]uint64, uint64, error) {
	got := map[uint64]uint64{}
	end, err := l.WalkObjects(data, func(k uint64) (int32, bool) {
		lh, ok := tlabClasses[k]
		return lh, ok
	}, func(k, n uint64) { got[k] += n })
	return got, end, err
}

func TestWalkObjects(t *testing.T) {
	l := ObjectLayout{Narrow: true, Base: 0x800000, LengthOffset: 12}
	var data []byte
	data = putObject(data, 0x800010, 32, 0)
	data = putObject(data, 0x800030, 24, 5) // byte[5]: 16 + 5, aligned to 24
	data = putObject(data, 0x800020, 16, 0)
	data = putObject(data, 0x800040, 32, 4) // int[4]: 16 + 16
	data = putObject(data, 0x800010, 32, 0)
	got, end, err := walk(l, data)
	if err != nil || end != uint64(len(data)) {
		t.Fatalf("walk: end %d of %d, %v", end, len(data), err)
	}
	want := map[uint64]uint64{0x800010: 64, 0x800030: 24, 0x800020: 16, 0x800040: 32}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("class %#x: %d bytes, want %d (all: %v)", k, got[k], n, got)
		}
	}
	// A copy cut inside the last object counts the bytes it holds and ends beyond the copy.
	got, end, err = walk(l, data[:len(data)-8])
	if err != nil || end != uint64(len(data)) || got[0x800010] != 56 {
		t.Errorf("cut copy: end %d, %v, %v", end, got, err)
	}
	// A copy cut inside a header ends at that object.
	if _, end, err = walk(l, data[:len(data)-28]); err != nil || end != uint64(len(data)-32) {
		t.Errorf("cut header: end %d, want %d, %v", end, len(data)-32, err)
	}
	// Unknown classes and impossible sizes stop the walk where they are.
	bad := putObject(append([]byte(nil), data[:32]...), 0x800099, 16, 0)
	if _, end, err = walk(l, bad); !errors.Is(err, ErrWalk) || end != 32 {
		t.Errorf("unknown class: end %d, %v", end, err)
	}
	bad = putObject(append([]byte(nil), data[:32]...), 0x800050, 32, 1)
	if _, _, err = walk(l, bad); !errors.Is(err, ErrWalk) {
		t.Errorf("broken element size: %v", err)
	}
	// With 16-byte alignment an array of 24 bytes takes 32.
	aligned := ObjectLayout{Narrow: true, Base: 0x800000, LengthOffset: 12, Align: 16}
	var a16 []byte
	a16 = putObject(a16, 0x800030, 32, 5)
	a16 = putObject(a16, 0x800010, 32, 0)
	if got, end, err := walk(aligned, a16); err != nil || end != 64 || got[0x800030] != 32 || got[0x800010] != 32 {
		t.Errorf("16-byte alignment: %v, end %d, %v", got, end, err)
	}
	// Full class pointers: the Klass* at offset 8, an array's length at 16.
	full := ObjectLayout{LengthOffset: 16}
	o := make([]byte, 40)
	binary.LittleEndian.PutUint64(o[8:], 0x800030)
	binary.LittleEndian.PutUint32(o[16:], 9) // byte[9]: 24 + 9 → 40 with a 24-byte header
	tlabClasses[0x800060] = -1<<30 | 24<<16 | 8<<8
	defer delete(tlabClasses, 0x800060)
	binary.LittleEndian.PutUint64(o[8:], 0x800060)
	if got, end, err := walk(full, o); err != nil || end != 40 || got[0x800060] != 40 {
		t.Errorf("full class pointers: %v, end %d, %v", got, end, err)
	}
}

// FuzzWalkObjects: any bytes walk without a panic, never past what they hold, and every byte visited
// once at most.
func FuzzWalkObjects(f *testing.F) {
	var seed []byte
	seed = putObject(seed, 0x800010, 32, 0)
	seed = putObject(seed, 0x800030, 24, 5)
	seed = putObject(seed, 0x800040, 32, 4)
	f.Add(seed, true)
	f.Add(seed[:20], true)
	f.Add(make([]byte, 64), false)
	f.Fuzz(func(t *testing.T, data []byte, narrow bool) {
		l := ObjectLayout{Narrow: narrow, Base: 0x800000, LengthOffset: 12, Align: 8 << (len(data) % 2)}
		if !narrow {
			l.LengthOffset = 16
		}
		got, end, err := walk(l, data)
		var sum uint64
		for _, n := range got {
			sum += n
		}
		if sum > uint64(len(data)) {
			t.Fatalf("visited %d bytes of %d", sum, len(data))
		}
		if err == nil && end < uint64(len(data)) && uint64(len(data))-end >= 20 { // a header with an array length is 20 bytes at most
			t.Fatalf("walk ended at %d of %d without a reason", end, len(data))
		}
	})
}
