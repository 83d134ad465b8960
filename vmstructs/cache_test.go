package vmstructs

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
)

// countingMemory counts the reads that reach it.
type countingMemory struct {
	Memory
	mu    sync.Mutex
	reads int
}

func (c *countingMemory) ReadAt(p []byte, addr uint64) (int, error) {
	c.mu.Lock()
	c.reads++
	c.mu.Unlock()
	return c.Memory.ReadAt(p, addr)
}

// sampleRegions lays out regions that start and end inside pages, next to each other and apart.
func sampleRegions(seed uint64) *Bytes {
	rng := rand.New(rand.NewPCG(seed, 1))
	var b Bytes
	addr := uint64(0x10000)
	for range 8 {
		data := make([]byte, 1+rng.IntN(3*lruPageSize))
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		b.Add(addr, data)
		addr += uint64(len(data))
		if rng.IntN(2) == 0 {
			addr += uint64(rng.IntN(2 * lruPageSize))
		}
	}
	return &b
}

// readDiff compares a read through the cache with one straight from the memory.
func readDiff(c, m Memory, addr uint64, size int) error {
	got, want := make([]byte, size), make([]byte, size)
	gn, gerr := c.ReadAt(got, addr)
	wn, werr := m.ReadAt(want, addr)
	if gn != wn || (gerr == nil) != (werr == nil) || !bytes.Equal(got[:gn], want[:wn]) {
		return fmt.Errorf("read %d at %#x: cached %d, %w; direct %d, %w", size, addr, gn, gerr, wn, werr)
	}
	if gerr != nil && !errors.Is(gerr, ErrFault) {
		return fmt.Errorf("read %d at %#x: %w does not wrap ErrFault", size, addr, gerr)
	}
	return nil
}

func sameRead(t *testing.T, c, m Memory, addr uint64, size int) {
	t.Helper()
	if err := readDiff(c, m, addr, size); err != nil {
		t.Fatal(err)
	}
}

func TestCached(t *testing.T) {
	m := sampleRegions(1)
	c := Cached(m, 3)
	rng := rand.New(rand.NewPCG(2, 2))
	for range 20000 {
		addr := 0x10000 - 64 + uint64(rng.IntN(30*lruPageSize))
		size := rng.IntN(3 * lruPageSize)
		if rng.IntN(4) == 0 {
			size = 1 << rng.IntN(4)
		}
		sameRead(t, c, m, addr, size)
	}
	// The edges of the address space.
	for _, addr := range []uint64{0, 1<<64 - lruPageSize, 1<<64 - 3} {
		sameRead(t, c, m, addr, 8)
	}
	sameRead(t, c, m, 0x10000, lruBypass) // bypasses the cache
}

func TestCachedHitsAndBound(t *testing.T) {
	var b Bytes
	b.Add(0, make([]byte, 64*lruPageSize))
	m := &countingMemory{Memory: &b}
	c := Cached(m, 4)
	var u [8]byte
	for range 100 {
		for i := range 4 {
			if _, err := c.ReadAt(u[:], uint64(i*lruPageSize+8)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if m.reads != 4 {
		t.Errorf("4 pages read 100 times: %d reads reached the memory, want 4", m.reads)
	}
	// A fifth page evicts the least recently used one (page 0).
	m.reads = 0
	for _, i := range []int{4, 1, 2, 3, 0} {
		if _, err := c.ReadAt(u[:], uint64(i*lruPageSize)); err != nil {
			t.Fatal(err)
		}
	}
	if m.reads != 2 {
		t.Errorf("after an eviction: %d reads, want 2 (page 4, then page 0 again)", m.reads)
	}
	if pc := c.(*lruCache); pc.lru.Len() != 4 || len(pc.pages) != 4 {
		t.Errorf("cache holds %d pages (%d indexed), want at most 4", pc.lru.Len(), len(pc.pages))
	}
	if Cached(m, 0) != Memory(m) {
		t.Error("Cached(m, 0) is not m")
	}
}

func TestCachedConcurrent(t *testing.T) {
	m := sampleRegions(3)
	c := Cached(m, 2)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 4))
			for range 2000 {
				addr := 0x10000 + uint64(rng.IntN(20*lruPageSize))
				if err := readDiff(c, m, addr, 1+rng.IntN(64)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// FuzzCached checks that reads through the cache return what the memory returns, for any layout of
// regions and any sequence of reads.
func FuzzCached(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8}, []byte{0, 0, 1, 0, 0, 255, 0, 0, 0, 16, 0, 0, 0, 0, 0, 0, 0, 0, 8, 0})
	f.Add(bytes.Repeat([]byte{0xAB}, 10000), []byte{0xff, 0x0f, 0, 0, 0, 0, 0, 0, 0, 0x20})
	f.Fuzz(func(t *testing.T, layout, reads []byte) {
		// layout: regions of (gap u16, length u16) over a pattern; reads: (addr u64, size u16).
		var m Bytes
		addr := uint64(0x1000)
		for i := 0; i+4 <= len(layout) && i < 64; i += 4 {
			addr += uint64(binary.LittleEndian.Uint16(layout[i:]))
			n := int(binary.LittleEndian.Uint16(layout[i+2:]))%(3*lruPageSize) + 1
			data := make([]byte, n)
			for k := range data {
				data[k] = byte(addr) + byte(k)
			}
			m.Add(addr, data)
			addr += uint64(n)
		}
		c := Cached(&m, 2)
		for i := 0; i+10 <= len(reads) && i < 200; i += 10 {
			a := binary.LittleEndian.Uint64(reads[i:])
			if reads[i+9]&1 == 0 {
				a = 0x1000 + a%(addr-0x1000+lruPageSize) // mostly near the regions
			}
			sameRead(t, c, &m, a, int(binary.LittleEndian.Uint16(reads[i+8:]))%(3*lruPageSize))
		}
	})
}
