package vmstructs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
)

// Memory reads the target's address space: a live process, a core file or recorded bytes. ReadAt
// reads len(p) bytes at addr; a short read returns the bytes read and an error.
type Memory interface {
	ReadAt(p []byte, addr uint64) (int, error)
}

// ErrFault is wrapped by reads of unmapped or unavailable memory.
var ErrFault = errors.New("memory not readable")

// FaultError is a read that could not be completed.
type FaultError struct {
	Addr uint64
	Len  int
	Err  error
}

func (e *FaultError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("read %d bytes at %#x: %v", e.Len, e.Addr, e.Err)
	}
	return fmt.Sprintf("read %d bytes at %#x: not mapped", e.Len, e.Addr)
}

func (e *FaultError) Unwrap() []error { return []error{ErrFault, e.Err} }

// Bytes is memory made of recorded regions (fixtures, tests, fuzzing). Regions may not overlap.
type Bytes struct {
	regions []region
}

type region struct {
	addr uint64
	data []byte
}

// Add records data at addr.
func (b *Bytes) Add(addr uint64, data []byte) {
	b.regions = append(b.regions, region{addr, data})
	sort.Slice(b.regions, func(i, k int) bool { return b.regions[i].addr < b.regions[k].addr })
}

// ReadAt implements Memory.
func (b *Bytes) ReadAt(p []byte, addr uint64) (int, error) {
	n := 0
	for n < len(p) {
		a := addr + uint64(n)
		i := sort.Search(len(b.regions), func(i int) bool { return b.regions[i].addr > a }) - 1
		if i < 0 || a-b.regions[i].addr >= uint64(len(b.regions[i].data)) {
			return n, &FaultError{Addr: addr, Len: len(p)}
		}
		n += copy(p[n:], b.regions[i].data[a-b.regions[i].addr:])
	}
	return n, nil
}

// reader adds typed, little-endian reads to a Memory (x86-64 and arm64 are both little-endian).
type reader struct {
	m Memory
}

func (r reader) bytes(addr uint64, n int) ([]byte, error) {
	if n < 0 || n > maxRead {
		return nil, fmt.Errorf("read of %d bytes at %#x: too large", n, addr)
	}
	b := make([]byte, n)
	if _, err := r.m.ReadAt(b, addr); err != nil {
		return nil, err
	}
	return b, nil
}

// maxRead caps every single read: the tables are untrusted input.
const maxRead = 64 << 20

func (r reader) u8(addr uint64) (uint8, error) {
	var b [1]byte
	_, err := r.m.ReadAt(b[:], addr)
	return b[0], err
}

func (r reader) u16(addr uint64) (uint16, error) {
	var b [2]byte
	_, err := r.m.ReadAt(b[:], addr)
	return binary.LittleEndian.Uint16(b[:]), err
}

func (r reader) u32(addr uint64) (uint32, error) {
	var b [4]byte
	_, err := r.m.ReadAt(b[:], addr)
	return binary.LittleEndian.Uint32(b[:]), err
}

func (r reader) u64(addr uint64) (uint64, error) {
	var b [8]byte
	_, err := r.m.ReadAt(b[:], addr)
	return binary.LittleEndian.Uint64(b[:]), err
}

// uint reads an unsigned integer of size bytes (1, 2, 4 or 8).
func (r reader) uint(addr, size uint64) (uint64, error) {
	switch size {
	case 1:
		v, err := r.u8(addr)
		return uint64(v), err
	case 2:
		v, err := r.u16(addr)
		return uint64(v), err
	case 4:
		v, err := r.u32(addr)
		return uint64(v), err
	case 8:
		return r.u64(addr)
	}
	return 0, fmt.Errorf("read at %#x: unsupported width %d", addr, size)
}

// int reads a signed integer of size bytes.
func (r reader) int(addr, size uint64) (int64, error) {
	v, err := r.uint(addr, size)
	if err != nil {
		return 0, err
	}
	return signExtend(v, size), nil
}

// cstring reads a NUL-terminated string of at most max bytes.
func (r reader) cstring(addr uint64, max int) (string, error) {
	if addr == 0 {
		return "", fmt.Errorf("read string: null pointer")
	}
	var out []byte
	var chunk [64]byte
	for len(out) < max {
		n, err := r.m.ReadAt(chunk[:], addr+uint64(len(out)))
		for i := range n {
			if chunk[i] == 0 {
				return string(append(out, chunk[:i]...)), nil
			}
		}
		out = append(out, chunk[:n]...)
		if err != nil {
			// The string may end right before an unmapped page: retry byte by byte.
			if n == 0 {
				var one [1]byte
				if _, err := r.m.ReadAt(one[:], addr+uint64(len(out))); err != nil {
					return "", err
				}
				if one[0] == 0 {
					return string(out), nil
				}
				out = append(out, one[0])
			}
		}
	}
	return "", fmt.Errorf("read string at %#x: longer than %d bytes", addr, max)
}

// The decoders below work on bytes already read (one read of a whole object or table entry instead of
// one per field). They never panic: what b does not hold decodes as absent.

// decodeLE decodes a little-endian unsigned integer of size bytes (1 to 8) at off, if b holds it.
func decodeLE(b []byte, off, size uint64) (uint64, bool) {
	if size == 0 || size > 8 || off+size > uint64(len(b)) || off+size < off {
		return 0, false
	}
	var v uint64
	for i := size; i > 0; i-- {
		v = v<<8 | uint64(b[off+i-1])
	}
	return v, true
}

// leUint is decodeLE with 0 for what b does not hold.
func leUint(b []byte, off, size uint64) uint64 {
	v, _ := decodeLE(b, off, size)
	return v
}

// signExtend turns the low size bytes of v into a signed integer.
func signExtend(v, size uint64) int64 {
	shift := 64 - 8*size
	return int64(v<<shift) >> shift
}

// fieldIn decodes field f of an object that starts at base in b.
func fieldIn(b []byte, base uint64, f F) (uint64, bool) {
	if !f.OK {
		return 0, false
	}
	return decodeLE(b, base+f.Offset, f.readSize())
}

// intFieldIn is fieldIn for signed fields.
func intFieldIn(b []byte, base uint64, f F) (int64, bool) {
	v, ok := fieldIn(b, base, f)
	if !ok {
		return 0, false
	}
	return signExtend(v, f.readSize()), true
}

// window reads [lo, hi) of memory in chunks, forward: it keeps the last chunk read. With chunk 0 it
// reads exactly what is asked.
type window struct {
	m      Memory
	lo, hi uint64
	chunk  uint64
	base   uint64
	data   []byte // valid until the next get
	buf    []byte
}

func (w *window) get(addr, n uint64) ([]byte, error) {
	if addr < w.lo || addr > w.hi || n > w.hi-addr {
		return nil, &FaultError{Addr: addr, Len: int(min(n, maxRead))}
	}
	if addr >= w.base && addr+n <= w.base+uint64(len(w.data)) {
		return w.data[addr-w.base : addr-w.base+n], nil
	}
	size := min(max(n, w.chunk), w.hi-addr)
	if size > maxRead {
		return nil, &FaultError{Addr: addr, Len: maxRead}
	}
	if uint64(cap(w.buf)) < size {
		w.buf = make([]byte, size)
	}
	buf := w.buf[:size]
	w.base, w.data = 0, nil
	got, err := w.m.ReadAt(buf, addr)
	if uint64(got) < n {
		if err == nil {
			err = &FaultError{Addr: addr, Len: int(n)}
		}
		return nil, err
	}
	w.base, w.data = addr, buf[:got]
	return w.data[:n], nil
}
