package vmstructs

import (
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"unicode/utf16"
)

// Reading Java objects out of the heap. VMStructs describes HotSpot's C++ objects, not Java classes:
// the offsets of the few Java fields the VM itself uses (java.lang.Thread.name, java.lang.String.value,
// ...) live in static ints of libjvm (java_lang_Thread::_name_offset, ...) that are found only through
// the ELF symbol table (.symtab), and whether a reference field holds a 32-bit narrow oop is a JVM
// flag. javaHeap gathers what is needed to follow references and decode strings, for any Memory (a live
// process or a core file).

// ErrBadOop is wrapped by reads that found something that is not a plausible object: a stale or
// freed reference (the heap moves under a reader that does not stop the JVM), or damaged memory.
var ErrBadOop = errors.New("not a valid Java object")

// Limits for untrusted heap contents.
const (
	maxJavaString   = 64 << 10 // bytes of a String's value array that are decoded
	maxJavaFieldOff = 1 << 12  // a Java field offset beyond this is not believed
)

// javaHeap follows Java references and reads Java objects.
type javaHeap struct {
	j *JVM
	// narrow: reference fields in objects hold 32-bit narrow oops (UseCompressedOops), decoded as
	// base + narrow<<shift. Native roots (OopStorage slots, OopHandles) always hold full oops.
	narrow bool
	base   uint64
	shift  uint
	// zgen: generational ZGC (JDK 21+): every stored reference, fields and roots, is a colored
	// zpointer that must be uncolored before it can be dereferenced.
	zgen bool
	// arrays: where a typeArrayOop's length and its first byte are.
	lengthOff, byteBase uint64
}

// javaHeap works out the reference encoding and the array layout. It needs the UseCompressedOops flag
// (symbol or JVMFlag table), CompressedOops::{_base,_shift} from VMStructs when it is set, and
// sizeof(arrayOopDesc).
func (j *JVM) javaHeap() (*javaHeap, error) {
	h := &javaHeap{j: j}
	r := j.resolver()
	arr := r.typeSize("arrayOopDesc")
	flags, err := j.vmBoolFlags("UseCompressedOops", "UseCompressedClassPointers", "UseCompactObjectHeaders", "UseZGC", "ZGenerational")
	if err != nil {
		return nil, fmt.Errorf("vmstructs: heap references: %w", err)
	}
	narrow, ok := flags["UseCompressedOops"]
	if !ok {
		return nil, fmt.Errorf("vmstructs: heap references: flag UseCompressedOops not found")
	}
	h.narrow = narrow
	if narrow {
		// JDK 11 exports the members of Universe::_narrow_oop, JDK 17 and 21 those of
		// CompressedOops::_narrow_oop, JDK 25 the flattened statics.
		base := r.field("CompressedOops|Universe", "_narrow_oop._base|_base")
		shift := r.field("CompressedOops|Universe", "_narrow_oop._shift|_shift")
		if err := r.err("heap references"); err != nil {
			return nil, err
		}
		b, err := j.static(base)
		if err != nil {
			return nil, fmt.Errorf("vmstructs: read CompressedOops base: %w", err)
		}
		s, err := j.static(shift)
		if err != nil {
			return nil, fmt.Errorf("vmstructs: read CompressedOops shift: %w", err)
		}
		if s > 8 {
			return nil, fmt.Errorf("vmstructs: compressed oop shift %d is implausible", s)
		}
		h.base, h.shift = b, uint(s)
	}
	if err := r.err("heap references"); err != nil {
		return nil, err
	}
	if flags["UseZGC"] {
		// Non-generational ZGC (JDK 15-23) multi-maps the heap: a colored pointer is itself readable.
		// Generational ZGC (JDK 21+: the only ZGC from 24 on) shifts the address left of its color
		// bits; it is the one whose VMStructs globals describe zpointers.
		_, gen := j.lookupField("ZGlobalsForVMStructs", "_ZPointerLoadShift")
		if g, ok := flags["ZGenerational"]; ok {
			gen = gen && g
		}
		h.zgen = gen
	}
	// arrayOopDesc::length_offset_in_bytes: right after the 8-byte mark word with compact object
	// headers (JDK 24+), in the klass gap with compressed class pointers, else after the header.
	ccp, ok := flags["UseCompressedClassPointers"]
	if !ok {
		ccp = true // a JVM without the flag has no other mode
	}
	switch {
	case flags["UseCompactObjectHeaders"]:
		h.lengthOff = 8
	case ccp:
		h.lengthOff = arr - 4
	default:
		h.lengthOff = arr
	}
	// Elements follow the length; before JDK 22 (JDK-8139457) the header was padded to a heap word.
	h.byteBase = h.lengthOff + 4
	if major, err := j.vmMajor("version"); err == nil && major < 22 {
		h.byteBase = (h.byteBase + 7) &^ 7
	}
	return h, nil
}

// vmBoolFlags reads bool JVM flags: through their global variables when .symtab names them (one
// read each), else through the JVMFlag table with Flag. Flags this JVM does not have are absent from
// the result; so are all that need the table when it cannot be read but a symbol found another.
func (j *JVM) vmBoolFlags(names ...string) (map[string]bool, error) {
	out := make(map[string]bool, len(names))
	var tableErr error
	for _, n := range names {
		if a, ok := j.Symbol(n); ok {
			v, err := j.r.u8(a)
			if err != nil {
				return nil, fmt.Errorf("vmstructs: read flag %s: %w", n, err)
			}
			out[n] = v != 0
			continue
		}
		if tableErr != nil {
			continue
		}
		f, err := j.Flag(n)
		switch {
		case errors.Is(err, ErrNoSuchFlag):
		case err != nil && f.Name == "":
			tableErr = err // the table itself, not this flag's value
		case err != nil:
			return nil, err
		case f.Bool != nil:
			out[n] = *f.Bool
		}
	}
	if tableErr != nil && len(out) == 0 {
		return nil, tableErr
	}
	return out, nil
}

// javaOffset reads one of HotSpot's static Java field offsets, e.g. javaOffset("java_lang_Thread",
// "_name_offset"); members may list aliases ("_value_offset|value_offset"). They are C++ static
// members, found by their mangled names in .symtab; a stripped libjvm does not have them.
func (j *JVM) javaOffset(class, members string) (uint64, bool) {
	var a uint64
	ok := false
	for m := range strings.SplitSeq(members, "|") {
		if a, ok = j.Symbol(mangleStatic(class, m)); ok {
			break
		}
	}
	if !ok {
		return 0, false
	}
	v, err := j.r.u32(a)
	off := int32(v)
	if err != nil || off <= 0 || off > maxJavaFieldOff {
		return 0, false
	}
	return uint64(off), true
}

// mangleStatic is the Itanium C++ ABI name of a static data member Class::member.
func mangleStatic(class, member string) string {
	return "_ZN" + strconv.Itoa(len(class)) + class + strconv.Itoa(len(member)) + member + "E"
}

// plausibleOop checks that a decoded reference can be an object address.
func plausibleOop(a uint64) error {
	if a == 0 {
		return nil
	}
	if a&7 != 0 || a < 1<<12 || a >= 1<<57 {
		return fmt.Errorf("reference %#x: %w", a, ErrBadOop)
	}
	return nil
}

// uncolor turns a stored reference into an address. Generational ZGC on x86-64 stores
// zaddress<<shift | metadata, where the one set bit of the 4 remapped bits (12-15) tells the shift
// (zAddress.hpp, ZPointerLoadShiftTable); anything else stores the address itself. On aarch64 the
// remapped bits are inverted (three set) and the layout differs: such pointers are rejected, not
// guessed at.
func (h *javaHeap) uncolor(v uint64) (uint64, error) {
	if !h.zgen {
		return v, plausibleOop(v)
	}
	remap := (v >> 12) & 0xf
	if remap == 0 {
		if v>>16 == 0 {
			return 0, nil // null, possibly with color bits
		}
		return 0, fmt.Errorf("zpointer %#x: no remapped bit: %w", v, ErrBadOop)
	}
	if bits.OnesCount64(remap) != 1 {
		return 0, fmt.Errorf("zpointer %#x: several remapped bits: %w", v, ErrBadOop)
	}
	a := v >> (12 + 1 + uint(bits.TrailingZeros64(remap)))
	return a, plausibleOop(a)
}

// root reads a native root: an oop stored in VM memory (an OopStorage slot), always full width.
func (h *javaHeap) root(slot uint64) (uint64, error) {
	v, err := h.j.r.u64(slot)
	if err != nil {
		return 0, err
	}
	return h.uncolor(v)
}

// refSize is the width of a reference field in an object.
func (h *javaHeap) refSize() uint64 {
	if h.narrow {
		return 4
	}
	return 8
}

// decodeRef turns the raw contents of a reference field into an address.
func (h *javaHeap) decodeRef(v uint64) (uint64, error) {
	if !h.narrow {
		return h.uncolor(v)
	}
	if v == 0 {
		return 0, nil
	}
	a := h.base + (v&0xffffffff)<<h.shift
	return a, plausibleOop(a)
}

// object is the start of a Java object, read in one piece: the fields a reader needs lie within
// its first bytes, and one read is cheaper than one per field.
type object struct {
	h *javaHeap
	b []byte
}

// object reads the first n bytes of the object at a.
func (h *javaHeap) object(a, n uint64) (object, error) {
	b, err := h.j.r.bytes(a, int(n))
	return object{h, b}, err
}

func (o object) uint(off, size uint64) (uint64, bool) {
	if off+size > uint64(len(o.b)) || off+size < off {
		return 0, false
	}
	return leUint(o.b, off, size), true
}

func (o object) ref(off uint64) (uint64, error) {
	v, ok := o.uint(off, o.h.refSize())
	if !ok {
		return 0, fmt.Errorf("field at %d outside the object: %w", off, ErrBadOop)
	}
	return o.h.decodeRef(v)
}

// byteArray reads up to limit bytes of a byte[]; truncated reports that it is longer.
func (h *javaHeap) byteArray(a uint64, limit int) (data []byte, truncated bool, err error) {
	n, err := h.j.r.u32(a + h.lengthOff)
	if err != nil {
		return nil, false, err
	}
	if int32(n) < 0 {
		return nil, false, fmt.Errorf("array %#x: length %d: %w", a, int32(n), ErrBadOop)
	}
	l := int(n)
	if l > limit {
		l, truncated = limit, true
	}
	if l == 0 {
		return nil, truncated, nil
	}
	data, err = h.j.r.bytes(a+h.byteBase, l)
	return data, truncated, err
}

// stringLayout holds java.lang.String's field offsets (JDK 9+: byte[] value plus a coder).
type stringLayout struct {
	value, coder uint64
}

func (j *JVM) stringLayout() (stringLayout, bool) {
	// JDK 11 names them without the leading underscore.
	v, ok1 := j.javaOffset("java_lang_String", "_value_offset|value_offset")
	c, ok2 := j.javaOffset("java_lang_String", "_coder_offset|coder_offset")
	return stringLayout{v, c}, ok1 && ok2
}

// javaString decodes the java.lang.String at s, reading at most maxJavaString bytes of it.
func (h *javaHeap) javaString(s uint64, l stringLayout) (str string, truncated bool, err error) {
	if s == 0 {
		return "", false, fmt.Errorf("null string: %w", ErrBadOop)
	}
	o, err := h.object(s, max(l.coder+1, l.value+h.refSize()))
	if err != nil {
		return "", false, err
	}
	c, _ := o.uint(l.coder, 1)
	coder := byte(c)
	v, err := o.ref(l.value)
	if err != nil {
		return "", false, err
	}
	if v == 0 {
		return "", false, fmt.Errorf("string object %#x has no value: %w", s, ErrBadOop)
	}
	data, truncated, err := h.byteArray(v, maxJavaString)
	if err != nil {
		return "", false, err
	}
	str, err = decodeJavaString(data, coder)
	return str, truncated, err
}

// decodeJavaString decodes the bytes of a compact String: coder 0 is Latin-1, coder 1 UTF-16 in the
// JVM's byte order (little-endian on x86-64 and arm64). Unpaired surrogates become U+FFFD.
func decodeJavaString(data []byte, coder byte) (string, error) {
	switch coder {
	case 0:
		r := make([]rune, len(data))
		for i, b := range data {
			r[i] = rune(b)
		}
		return string(r), nil
	case 1:
		u := make([]uint16, len(data)/2)
		for i := range u {
			u[i] = uint16(data[2*i]) | uint16(data[2*i+1])<<8
		}
		return string(utf16.Decode(u)), nil
	}
	return "", fmt.Errorf("string coder %d: %w", coder, ErrBadOop)
}
