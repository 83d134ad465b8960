package vmstructs

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Walking the objects of a TLAB from a copy of its bytes. A thread allocates in its TLAB one object after
// the other, each starting with its header (a mark word, then the Klass*, 32-bit and compressed with
// UseCompressedClassPointers), so a copy of a TLAB's used part is a sequence of objects whose sizes
// their classes' layout helpers give (an array's with its length).

// ObjectLayout is what WalkObjects needs of a JVM's object headers.
type ObjectLayout struct {
	// Narrow: the Klass* is a 32-bit narrow pointer at offset 8, decoded as Base + narrow<<Shift;
	// otherwise a full pointer at offset 8.
	Narrow bool
	Base   uint64
	Shift  uint
	// LengthOffset is where an array's 32-bit length is.
	LengthOffset uint64
	// Align is the objects' alignment in bytes (-XX:ObjectAlignmentInBytes; 0 is 8).
	Align uint64
}

// ErrObjectLayout is wrapped when a JVM's objects cannot be walked from outside: compact object
// headers (JDK 24+, -XX:+UseCompactObjectHeaders: the class is in the mark word, which locking can
// displace), or the compressed class pointers' encoding is not exported.
var ErrObjectLayout = errors.New("objects cannot be walked from outside")

// ObjectLayout reads the object header layout of this JVM.
func (j *JVM) ObjectLayout() (ObjectLayout, error) {
	flags, err := j.vmBoolFlags("UseCompressedClassPointers", "UseCompactObjectHeaders")
	if err != nil {
		return ObjectLayout{}, err
	}
	if flags["UseCompactObjectHeaders"] {
		return ObjectLayout{}, fmt.Errorf("vmstructs: %w: compact object headers", ErrObjectLayout)
	}
	h, err := j.javaHeap()
	if err != nil {
		return ObjectLayout{}, err
	}
	l := ObjectLayout{LengthOffset: h.lengthOff, Align: 8}
	if f, err := j.Flag("ObjectAlignmentInBytes"); err == nil {
		switch {
		case f.Int != nil:
			l.Align = uint64(*f.Int)
		case f.Uint != nil:
			l.Align = *f.Uint
		}
	}
	if l.Align < 8 || l.Align > 256 || l.Align&(l.Align-1) != 0 {
		return ObjectLayout{}, fmt.Errorf("vmstructs: object alignment %d is implausible", l.Align)
	}
	if ccp, ok := flags["UseCompressedClassPointers"]; ok && !ccp {
		return l, nil // a JVM without the flag has no other mode
	}
	r := j.resolver()
	// JDK 11 exports the members of Universe::_narrow_klass, JDK 17 those of
	// CompressedKlassPointers::_narrow_klass, JDK 21 and later the flattened statics.
	base := r.field("CompressedKlassPointers|Universe", "_narrow_klass._base|_base")
	shift := r.field("CompressedKlassPointers|Universe", "_narrow_klass._shift|_shift")
	if err := r.err("compressed class pointers"); err != nil {
		return ObjectLayout{}, fmt.Errorf("%w (%w)", err, ErrObjectLayout)
	}
	b, err := j.static(base)
	if err != nil {
		return ObjectLayout{}, fmt.Errorf("vmstructs: read the compressed class pointers' base: %w", err)
	}
	s, err := j.static(shift)
	if err != nil {
		return ObjectLayout{}, fmt.Errorf("vmstructs: read the compressed class pointers' shift: %w", err)
	}
	if s > 32 {
		return ObjectLayout{}, fmt.Errorf("vmstructs: compressed class pointer shift %d is implausible", s)
	}
	l.Narrow, l.Base, l.Shift = true, b, uint(s)
	return l, nil
}

// CollectionCounter returns the address of CollectedHeap::_total_collections, a 32-bit count that
// Serial, Parallel and G1 increment at the start of every collection, before any object moves or any
// memory is freed. ZGC and Shenandoah move objects outside those collections: for them it returns an
// error wrapping ErrObjectLayout.
func (j *JVM) CollectionCounter() (uint64, error) {
	flags, err := j.vmBoolFlags("UseZGC", "UseShenandoahGC")
	if err != nil {
		return 0, err
	}
	if flags["UseZGC"] || flags["UseShenandoahGC"] {
		return 0, fmt.Errorf("vmstructs: %w: a concurrent collector moves objects between its collections", ErrObjectLayout)
	}
	r := j.resolver()
	heap := r.field("Universe", "_collectedHeap")
	total := r.field("CollectedHeap", "_total_collections")
	if err := r.err("collection count"); err != nil {
		return 0, err
	}
	if total.readSize() != 4 {
		return 0, fmt.Errorf("vmstructs: CollectedHeap::_total_collections of %d bytes, want 4", total.Size)
	}
	obj, err := j.static(heap)
	if err != nil {
		return 0, fmt.Errorf("vmstructs: Universe::_collectedHeap: %w", err)
	}
	if obj == 0 {
		return 0, fmt.Errorf("vmstructs: the heap is not initialized yet")
	}
	return obj + total.Offset, nil
}

// KlassInfo is a class as WalkObjects needs it: its name in the JVM's internal form (java/lang/String,
// [I), as the allocation probes pass it, and its layout helper (see LoadedClass).
type KlassInfo struct {
	Name         string
	LayoutHelper int32
}

// Klass reads the name and layout helper of the Klass at k.
func (j *JVM) Klass(k uint64) (KlassInfo, error) {
	l, err := j.methodNameLayout()
	if err != nil {
		return KlassInfo{}, err
	}
	r := j.resolver()
	lh := r.field("Klass", "_layout_helper")
	if err := r.err("classes"); err != nil {
		return KlassInfo{}, err
	}
	if k == 0 || k%8 != 0 {
		return KlassInfo{}, fmt.Errorf("vmstructs: bad Klass* %#x", k)
	}
	h, err := j.getInt(k, lh)
	if err != nil {
		return KlassInfo{}, fmt.Errorf("vmstructs: class %#x: %w", k, err)
	}
	sym, err := j.get(k, l.klassName)
	if err != nil {
		return KlassInfo{}, fmt.Errorf("vmstructs: class %#x: %w", k, err)
	}
	name, err := j.newNamer(j.Mem).symbol(sym)
	if err != nil {
		return KlassInfo{}, fmt.Errorf("vmstructs: class %#x name: %w", k, err)
	}
	return KlassInfo{Name: name, LayoutHelper: int32(h)}, nil
}

// ErrWalk is wrapped by WalkObjects' errors: the bytes are not a sequence of objects of known classes.
var ErrWalk = errors.New("not a sequence of objects")

// minObject is the smallest object: a header, padded to 8 bytes.
const minObject = 16

// WalkObjects walks the objects laid out from the start of data, a copy of a heap range that starts at
// an object (a TLAB's start): for each object whose header is in data it calls visit with its Klass*
// and the bytes of it that data holds. klass gives a Klass*'s layout helper, false for a class it does
// not know or whose instances vary in size (java.lang.Class). It returns where the walk ended: the end
// of the last object (beyond len(data) when the copy cuts it short), or the start of an object whose
// header data cuts; and an error wrapping ErrWalk where the walk meets something that is not an object
// of a known class, with the offset of that thing.
func (l ObjectLayout) WalkObjects(data []byte, klass func(k uint64) (int32, bool), visit func(k, bytes uint64)) (uint64, error) {
	hdr := uint64(16)
	if l.Narrow {
		hdr = 12
	}
	align := max(l.Align, 8)
	n := uint64(len(data))
	off := uint64(0)
	for off < n {
		if n-off < hdr {
			return off, nil
		}
		var k uint64
		if l.Narrow {
			k = l.Base + uint64(binary.LittleEndian.Uint32(data[off+8:]))<<l.Shift
		} else {
			k = binary.LittleEndian.Uint64(data[off+8:])
		}
		lh, ok := klass(k)
		if !ok {
			return off, fmt.Errorf("%w: class %#x at byte %d not known", ErrWalk, k, off)
		}
		var size uint64
		switch {
		case lh > 0:
			size = uint64(lh) &^ 7
		case lh < 0:
			if off+l.LengthOffset+4 > n {
				return off, nil
			}
			length := uint64(binary.LittleEndian.Uint32(data[off+l.LengthOffset:]))
			hsize := uint64(lh>>16) & 0xff
			l2 := uint(lh) & 0x3f
			if length > 1<<31 || l2 > 3 {
				return off, fmt.Errorf("%w: array of %d elements of 2^%d bytes at byte %d", ErrWalk, length, l2, off)
			}
			size = (hsize + length<<l2 + align - 1) &^ (align - 1)
		}
		if size < minObject {
			return off, fmt.Errorf("%w: class %#x (layout helper %#x) at byte %d gives %d bytes", ErrWalk, k, uint32(lh), off, size)
		}
		visit(k, min(size, n-off))
		off += size
	}
	return off, nil
}
