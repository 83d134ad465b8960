package hsperf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
)

var (
	// ErrCorrupt is wrapped by every error about a damaged or truncated hsperfdata image.
	ErrCorrupt = errors.New("hsperf: corrupt hsperfdata")
	// ErrVersion is wrapped when the prologue is intact but announces a format other than 2.x.
	ErrVersion = errors.New("hsperf: unsupported hsperfdata version")
	// ErrNotAccessible is wrapped by ReadFile when the JVM never marked the file accessible.
	ErrNotAccessible = errors.New("not marked accessible by the JVM, which may still be starting")
)

// Layout constants from perfMemory.hpp (PerfDataPrologue, PerfDataEntry).
const (
	magic           = 0xcafec0c0
	prologueSize    = 32
	entryHeaderSize = 20
	supportedMajor  = 2
	flagSupported   = 0x01
)

// Type codes are JNI field descriptors, as written by HotSpot's type2char.
const (
	TypeLong byte = 'J' // scalar int64 counter
	TypeByte byte = 'B' // byte vector; HotSpot uses it only for strings
)

// Units is the data_units attribute of a counter (sun.jvmstat.monitor.Units).
type Units byte

// Units values.
const (
	UnitsNone   Units = 1
	UnitsBytes  Units = 2
	UnitsTicks  Units = 3 // divide by sun.os.hrt.frequency for seconds
	UnitsEvents Units = 4
	UnitsString Units = 5
	UnitsHertz  Units = 6
)

// String returns the name jvmstat uses for u ("Ticks"), or "Units(n)" for an unknown value.
func (u Units) String() string {
	switch u {
	case UnitsNone:
		return "None"
	case UnitsBytes:
		return "Bytes"
	case UnitsTicks:
		return "Ticks"
	case UnitsEvents:
		return "Events"
	case UnitsString:
		return "String"
	case UnitsHertz:
		return "Hertz"
	}
	return "Units(" + strconv.Itoa(int(u)) + ")"
}

// Variability is the data_variability attribute of a counter (sun.jvmstat.monitor.Variability).
type Variability byte

// Variability values.
const (
	Constant  Variability = 1
	Monotonic Variability = 2
	Variable  Variability = 3
)

// String returns the name jvmstat uses for v ("Constant"), or "Variability(n)" for an unknown value.
func (v Variability) String() string {
	switch v {
	case Constant:
		return "Constant"
	case Monotonic:
		return "Monotonic"
	case Variable:
		return "Variable"
	}
	return "Variability(" + strconv.Itoa(int(v)) + ")"
}

// Data is a decoded hsperfdata image.
type Data struct {
	Major, Minor int
	BigEndian    bool // byte_order 0; HotSpot writes native order, so only big-endian hosts produce it
	Accessible   bool // prologue 'accessible' byte; 0 while the JVM is still initializing the file
	Used         int  // prologue 'used': bytes allocated, prologue included
	Overflow     int  // bytes of counters that did not fit and live only in the JVM's C heap
	ModTimeStamp int64
	NumEntries   int // prologue 'num_entries'
	Size         int // length of the image; jcmd reports it as sun.perfdata.size
	Entries      []Entry
}

// Entry is one counter.
type Entry struct {
	Name         string
	Type         byte // raw data_type: TypeLong, TypeByte, or something this package does not decode
	Units        Units
	Variability  Variability
	Supported    bool // flags bit 0
	VectorLength int  // 0 for scalars; the capacity of a string counter, terminating NUL included
	Long         int64
	// Bytes is the value of a vector counter. For string counters (UnitsString) it ends before the
	// first NUL; other vectors are kept whole. For a counter of a type this package does not
	// decode it holds the raw bytes from data_offset to the end of the entry.
	Bytes []byte
}

func (e Entry) isLong() bool   { return e.Type == TypeLong && e.VectorLength == 0 }
func (e Entry) isString() bool { return e.Type == TypeByte && e.VectorLength > 0 }

// String returns the value the way jcmd PerfCounter.print shows it: numbers in decimal, strings
// between double quotes with nothing escaped.
func (e Entry) String() string {
	switch {
	case e.isLong():
		return strconv.FormatInt(e.Long, 10)
	case e.isString():
		return `"` + string(cutNUL(e.Bytes)) + `"`
	}
	// jcmd aborts the whole listing on such an entry; show something rather than nothing.
	return fmt.Sprintf("<unsupported type %q vector length %d>", e.Type, e.VectorLength)
}

// FormatError describes why an image could not be decoded (completely). It wraps ErrCorrupt or
// ErrVersion.
type FormatError struct {
	Path   string // set by ReadFile
	Entry  int    // index of the damaged entry, -1 for the prologue
	Offset int    // byte offset of the damaged entry or field
	Reason string
	Err    error
}

// Error returns "hsperf: [path: ][entry N at 0xOFF: ]reason".
func (e *FormatError) Error() string {
	s := "hsperf: "
	if e.Path != "" {
		s += e.Path + ": "
	}
	if e.Entry >= 0 {
		s += fmt.Sprintf("entry %d at %#x: ", e.Entry, e.Offset)
	}
	return s + e.Reason
}

// Unwrap returns ErrCorrupt or ErrVersion.
func (e *FormatError) Unwrap() error { return e.Err }

func corrupt(entry, off int, format string, args ...any) *FormatError {
	return &FormatError{Entry: entry, Offset: off, Reason: fmt.Sprintf(format, args...), Err: ErrCorrupt}
}

// Parse decodes a whole hsperfdata file image. It never panics; on damaged input it returns the
// entries read before the damage together with an error wrapping ErrCorrupt (so callers can show
// partial data). The returned Data is nil only when the prologue itself is unusable. Parse keeps
// no reference to b.
func Parse(b []byte) (*Data, error) {
	if len(b) < prologueSize {
		return nil, corrupt(-1, 0, "file is %d bytes, shorter than the %d-byte prologue", len(b), prologueSize)
	}
	// The magic is defined as the byte sequence CA FE C0 C0, whatever byte_order says.
	if m := binary.BigEndian.Uint32(b); m != magic {
		return nil, corrupt(-1, 0, "bad magic %#08x, not an hsperfdata file", m)
	}
	var bo binary.ByteOrder
	switch b[4] {
	case 0:
		bo = binary.BigEndian
	case 1:
		bo = binary.LittleEndian
	default:
		return nil, corrupt(-1, 4, "bad byte order %d", b[4])
	}
	d := &Data{
		Major:        int(b[5]),
		Minor:        int(b[6]),
		BigEndian:    b[4] == 0,
		Accessible:   b[7] != 0,
		Used:         int(int32(bo.Uint32(b[8:]))),
		Overflow:     int(int32(bo.Uint32(b[12:]))),
		ModTimeStamp: int64(bo.Uint64(b[16:])),
		NumEntries:   int(int32(bo.Uint32(b[28:]))),
		Size:         len(b),
	}
	if d.Major != supportedMajor {
		return d, &FormatError{Entry: -1, Offset: 5,
			Reason: fmt.Sprintf("format version %d.%d not supported (only %d.x)", d.Major, d.Minor, supportedMajor), Err: ErrVersion}
	}
	off := int(int32(bo.Uint32(b[24:])))
	switch {
	case off < prologueSize || off > len(b):
		return d, corrupt(-1, 24, "entry offset %d outside the %d-byte file", off, len(b))
	case off%4 != 0:
		return d, corrupt(-1, 24, "entry offset %d not 4-byte aligned", off)
	case d.NumEntries < 0:
		return d, corrupt(-1, 28, "negative entry count %d", d.NumEntries)
	}
	// Every entry takes at least a header, so this bounds the allocation whatever num_entries says.
	d.Entries = make([]Entry, 0, min(d.NumEntries, (len(b)-off)/entryHeaderSize))
	for i := range d.NumEntries {
		e, n, err := parseEntry(b, off, bo)
		if err != nil {
			err.Entry, err.Offset = i, off
			return d, err
		}
		d.Entries = append(d.Entries, e)
		off += n // n >= entryHeaderSize and off+n <= len(b): the loop ends within len(b)/20 steps
	}
	return d, nil
}

// parseEntry decodes the entry at off and returns it with its length. Errors leave Entry and
// Offset for the caller to fill.
func parseEntry(b []byte, off int, bo binary.ByteOrder) (Entry, int, *FormatError) {
	if len(b)-off < entryHeaderSize {
		// HotSpot increments num_entries before it writes the entry, so a live reader can see
		// this (and the zero length below) for an instant; ReadFile retries.
		return Entry{}, 0, corrupt(0, 0, "header runs past the end of the %d-byte file", len(b))
	}
	h := b[off:]
	length := int(int32(bo.Uint32(h)))
	nameOff := int(int32(bo.Uint32(h[4:])))
	vlen := int(int32(bo.Uint32(h[8:])))
	typ, flags, units, vari := h[12], h[13], Units(h[14]), Variability(h[15])
	dataOff := int(int32(bo.Uint32(h[16:])))
	switch {
	case length == 0:
		return Entry{}, 0, corrupt(0, 0, "zero length, but the prologue announces more entries")
	case length < entryHeaderSize+2 || length > len(b)-off:
		return Entry{}, 0, corrupt(0, 0, "length %d out of range (%d bytes left)", length, len(b)-off)
	case length%4 != 0:
		return Entry{}, 0, corrupt(0, 0, "length %d not a multiple of 4", length)
	case nameOff < entryHeaderSize || nameOff >= length:
		return Entry{}, 0, corrupt(0, 0, "name offset %d out of range", nameOff)
	case dataOff < entryHeaderSize || dataOff > length:
		return Entry{}, 0, corrupt(0, 0, "data offset %d out of range", dataOff)
	case vlen < 0:
		return Entry{}, 0, corrupt(0, 0, "negative vector length %d", vlen)
	case units < UnitsNone || units > UnitsHertz:
		return Entry{}, 0, corrupt(0, 0, "invalid units %d", units)
	case vari < Constant || vari > Variable:
		return Entry{}, 0, corrupt(0, 0, "invalid variability %d", vari)
	}
	ent := h[:length]
	nameEnd := length
	if dataOff > nameOff {
		nameEnd = dataOff
	}
	name, _, ok := bytes.Cut(ent[nameOff:nameEnd], []byte{0})
	switch {
	case !ok:
		return Entry{}, 0, corrupt(0, 0, "name not NUL-terminated")
	case len(name) == 0:
		return Entry{}, 0, corrupt(0, 0, "empty name")
	}
	e := Entry{
		Name:         string(name),
		Type:         typ,
		Units:        units,
		Variability:  vari,
		Supported:    flags&flagSupported != 0,
		VectorLength: vlen,
	}
	data := ent[dataOff:]
	switch {
	case e.isLong():
		if len(data) < 8 {
			return Entry{}, 0, corrupt(0, 0, "%q: long value runs past the entry", e.Name)
		}
		e.Long = int64(bo.Uint64(data))
	case e.isString():
		if vlen > len(data) {
			return Entry{}, 0, corrupt(0, 0, "%q: vector length %d runs past the entry", e.Name, vlen)
		}
		v := data[:vlen]
		if units == UnitsString {
			// PerfStringMonitor.stringValue: a one-byte vector is the empty string, else up to NUL.
			if vlen <= 1 {
				v = nil
			}
			v = cutNUL(v)
		}
		e.Bytes = clone(v)
	default:
		e.Bytes = clone(data)
	}
	return e, length, nil
}

func cutNUL(b []byte) []byte {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return b[:i]
	}
	return b
}

// clone copies b so that Data never aliases the caller's (possibly mmapped) buffer; nil when empty.
func clone(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return bytes.Clone(b)
}

// Lookup returns the counter called name. Should a name occur twice, the later entry wins, as in
// jcmd, which loads entries into a map in file order.
func (d *Data) Lookup(name string) (Entry, bool) {
	if d == nil {
		return Entry{}, false
	}
	for i := len(d.Entries) - 1; i >= 0; i-- {
		if d.Entries[i].Name == name {
			return d.Entries[i], true
		}
	}
	return Entry{}, false
}

// String returns the value of a string counter, unquoted.
func (d *Data) String(name string) (string, bool) {
	e, ok := d.Lookup(name)
	if !ok || !e.isString() {
		return "", false
	}
	return string(cutNUL(e.Bytes)), true
}

// Long returns the value of a scalar long counter.
func (d *Data) Long(name string) (int64, bool) {
	e, ok := d.Lookup(name)
	if !ok || !e.isLong() {
		return 0, false
	}
	return e.Long, true
}

// JavaCommand returns sun.rt.javaCommand: the main class or -jar file followed by the program
// arguments, space-separated. Empty when unknown.
func (d *Data) JavaCommand() string {
	s, _ := d.String("sun.rt.javaCommand")
	return s
}

// AttachSupported reports whether the JVM accepts dynamic attach: the first character of
// sun.rt.jvmCapabilities is '1' ('0' with -XX:+DisableAttachMechanism). known is false when the
// counter is missing or empty.
func (d *Data) AttachSupported() (supported bool, known bool) {
	s, ok := d.String("sun.rt.jvmCapabilities")
	if !ok || s == "" {
		return false, false
	}
	return s[0] == '1', true
}

// VMVersion returns java.property.java.vm.version, or "" if the JVM does not export it.
func (d *Data) VMVersion() string {
	s, _ := d.String("java.property.java.vm.version")
	return s
}
