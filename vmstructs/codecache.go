package vmstructs

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Kinds of code blobs (CodeBlob.Kind).
const (
	KindNMethod        = "nmethod"        // compiled Java method (C1 or C2)
	KindNativeNMethod  = "native-nmethod" // compiled wrapper of a native method (JNI) or method handle intrinsic
	KindInterpreter    = "interpreter"    // the template interpreter
	KindStubRoutines   = "stub-routines"  // a StubRoutines blob (arraycopy, crypto intrinsics, call stub...)
	KindBuffer         = "buffer"         // other BufferBlobs ("flush_icache_stub", "native signature handlers"...)
	KindAdapter        = "adapter"        // i2c/c2i adapters
	KindMHAdapter      = "mh-adapter"     // method handle adapters
	KindVtable         = "vtable"         // vtable and itable stubs
	KindRuntimeStub    = "runtime-stub"   // calls into the runtime ("Shared Runtime ...", C1/C2 runtime stubs)
	KindDeoptimization = "deoptimization" // DeoptimizationBlob
	KindSafepoint      = "safepoint"      // SafepointBlob (polling page handlers)
	KindException      = "exception"      // ExceptionBlob (C2)
	KindUncommonTrap   = "uncommon-trap"  // UncommonTrapBlob (C2)
	KindUpcall         = "upcall"         // foreign function upcall stubs
	KindStub           = "stub"           // a blob this JVM does not say more about
)

// CodeBlob is one blob of the JVM's code cache: compiled Java code (an nmethod), the interpreter, an
// adapter or a stub.
type CodeBlob struct {
	Start    uint64 `json:"start"`     // first byte of the code
	End      uint64 `json:"end"`       // end of the code (exclusive): Compiler.perfmap's size is End-Start
	BlobAddr uint64 `json:"blob"`      // the CodeBlob object (header) itself
	BlobSize int    `json:"blob_size"` // CodeBlob::_size: header, relocations, code and data
	Kind     string `json:"kind"`      // one of the Kind constants
	Name     string `json:"name"`      // CodeBlob::_name: "nmethod", "Interpreter", "StubRoutines (1)"...

	// nmethods only.
	Level         int    `json:"level,omitempty"`          // tier: 0 native wrapper, 1-3 C1, 4 C2
	CompileID     int    `json:"compile_id,omitempty"`     // as in -XX:+PrintCompilation and JFR
	Method        uint64 `json:"method,omitempty"`         // Method*
	MethodName    string `json:"method_name,omitempty"`    // as Compiler.perfmap prints it: "int java.lang.String.hashCode()"
	VerifiedEntry uint64 `json:"verified_entry,omitempty"` // entry point when the receiver is known to be right

	FrameSize     int `json:"frame_size"`     // bytes, return address included; 0 for frameless stubs
	FrameComplete int `json:"frame_complete"` // offset from Start after which the frame is built; -1: never
}

// Unloaded reports an nmethod without a Method: one the JVM has unloaded (up to JDK 19 it clears
// nmethod::_method then, and the code stays until the sweeper frees it) or one read while it was being
// built. Its code runs no more; Compiler.perfmap lists neither.
func (b *CodeBlob) Unloaded() bool {
	return (b.Kind == KindNMethod || b.Kind == KindNativeNMethod) && b.Method == 0
}

// Label is the method name of an nmethod and the blob name of any other blob: the name Compiler.perfmap
// prints.
func (b *CodeBlob) Label() string {
	if b.MethodName != "" {
		return b.MethodName
	}
	return b.Name
}

// CodeHeap is one of the code cache's heaps (CodeCache::_heaps; JDK 9+ has three with the default
// -XX:+SegmentedCodeCache: non-nmethods, profiled and non-profiled nmethods).
type CodeHeap struct {
	Addr         uint64 `json:"addr"`          // the CodeHeap object
	Low          uint64 `json:"low"`           // committed memory
	High         uint64 `json:"high"`          //
	ReservedLow  uint64 `json:"reserved_low"`  // reserved memory: the heap never leaves it
	ReservedHigh uint64 `json:"reserved_high"` //
	Segmap       uint64 `json:"segmap"`        // the segment map: one byte per segment
	SegmapHigh   uint64 `json:"segmap_high"`   // end of the committed part of the segment map
	Log2Segment  uint   `json:"log2_segment"`  // segment size (-XX:CodeCacheSegmentSize) as a power of two
}

// Limits for walks over the code cache, whose memory is untrusted and changes under the reader.
const (
	maxHeaps      = 16
	maxSegmap     = 32 << 20 // bytes of segment map read at once (32 Mi segments: 4 GiB of code at 128 bytes)
	maxHops       = 64       // segment map hops from a pc back to its block start
	segmapWindow  = 64       // segment map bytes read at once by FindBlob
	maxBlobName   = 256
	maxLog2Seg    = 16
	freeSegment   = 0xFF // segment map value of a segment that belongs to no block
	maxBlobsTotal = 4 << 20
)

// codeLayout is what the code cache walk needs from VMStructs, resolved once.
type codeLayout struct {
	heaps, lowBound, highBound       F // CodeCache statics
	arrLen, arrData                  F // GrowableArray
	heapMemory, heapSegmap, heapLog2 F
	vsLow, vsHigh, vsLowB, vsHighB   F // VirtualSpace
	hbSize                           uint64
	hbHeader, hbLength, hbUsed       F

	name, size, codeBegin, codeEnd F
	codeIsOffset                   bool // JDK 23+: _code_offset/_data_offset relative to the blob
	frameSize, frameComplete, kind F
	kinds                          map[int64]string // JDK 23+: CodeBlobKind::* values
	vtables                        map[uint64]string

	nmMethod, nmCompileID, nmLevel F
	nmVerified                     F
	verifiedIsOffset               bool // JDK 23+: u2 offset from the code begin

	blobRead, baseRead uint64 // bytes read per blob: all fields, CodeBlob fields only
	vsRead             uint64 // bytes of a VirtualSpace we use
}

func (j *JVM) codeLayout() (*codeLayout, error) {
	r := j.resolver()
	l := &codeLayout{
		heaps:      r.field("CodeCache", "_heaps"),
		lowBound:   r.optField("CodeCache", "_low_bound"),
		highBound:  r.optField("CodeCache", "_high_bound"),
		arrLen:     r.field("GrowableArrayBase|GenericGrowableArray", "_len"),
		arrData:    r.field("GrowableArray<int>", "_data"),
		heapMemory: r.field("CodeHeap", "_memory"),
		heapSegmap: r.field("CodeHeap", "_segmap"),
		heapLog2:   r.field("CodeHeap", "_log2_segment_size"),
		vsLow:      r.field("VirtualSpace", "_low"),
		vsHigh:     r.field("VirtualSpace", "_high"),
		vsLowB:     r.field("VirtualSpace", "_low_boundary"),
		vsHighB:    r.field("VirtualSpace", "_high_boundary"),
		hbSize:     r.typeSize("HeapBlock"),
		hbHeader:   r.optField("HeapBlock", "_header"),
		hbLength:   r.field("HeapBlock::Header", "_length"),
		hbUsed:     r.field("HeapBlock::Header", "_used"),

		name:          r.field("CodeBlob", "_name"),
		size:          r.field("CodeBlob", "_size"),
		codeBegin:     r.field("CodeBlob", "_code_begin|_code_offset"),
		codeEnd:       r.field("CodeBlob", "_code_end|_data_offset"),
		frameSize:     r.optField("CodeBlob", "_frame_size"),
		frameComplete: r.optField("CodeBlob", "_frame_complete_offset"),
		kind:          r.optField("CodeBlob", "_kind"),

		nmMethod:    r.field("nmethod|CompiledMethod", "_method"),
		nmCompileID: r.field("nmethod", "_compile_id"),
		nmLevel:     r.field("nmethod", "_comp_level"),
		nmVerified:  r.optField("nmethod", "_verified_entry_point|_verified_entry_offset"),
	}
	if err := r.err("code cache"); err != nil {
		return nil, err
	}
	l.codeIsOffset = l.codeBegin.Name == "_code_offset"
	if l.codeEnd.Name == "_data_offset" != l.codeIsOffset {
		return nil, fmt.Errorf("vmstructs: code cache: CodeBlob::%s with CodeBlob::%s is not a known layout", l.codeBegin.Name, l.codeEnd.Name)
	}
	l.verifiedIsOffset = l.nmVerified.Name == "_verified_entry_offset"
	if l.kind.OK {
		l.kinds = map[int64]string{}
		for _, c := range j.Table.Ints {
			if k, ok := strings.CutPrefix(c.Name, "CodeBlobKind::"); ok {
				if kind, ok := blobKindNames[k]; ok {
					l.kinds[c.Value] = kind
				}
			}
		}
	} else {
		// Before JDK 23 CodeBlob is polymorphic: its vtable pointer tells the C++ class.
		l.vtables = map[uint64]string{}
		for sym, kind := range blobVtables {
			if a, ok := j.Symbol(sym); ok {
				l.vtables[a+16] = kind // the vptr points past offset-to-top and the typeinfo pointer
			}
		}
	}
	if l.hbSize == 0 || l.hbSize > 64 {
		return nil, fmt.Errorf("vmstructs: code cache: sizeof(HeapBlock) = %d is implausible", l.hbSize)
	}
	end := func(fs ...F) uint64 {
		var m uint64
		for _, f := range fs {
			if f.OK {
				m = max(m, f.Offset+max(f.Size, 1))
			}
		}
		return m
	}
	l.baseRead = end(l.name, l.size, l.codeBegin, l.codeEnd, l.frameSize, l.frameComplete, l.kind)
	l.blobRead = max(l.baseRead, end(l.nmMethod, l.nmCompileID, l.nmLevel, l.nmVerified))
	l.vsRead = end(l.vsLow, l.vsHigh, l.vsLowB, l.vsHighB)
	if l.blobRead > 4096 || l.vsRead > 1024 || l.heapLog2.Offset > 4096 || l.heapMemory.Offset > 4096 || l.heapSegmap.Offset > 4096 {
		return nil, fmt.Errorf("vmstructs: code cache: CodeBlob fields up to %d bytes are implausible", l.blobRead)
	}
	return l, nil
}

// blobKindNames maps the names of the CodeBlobKind constants (JDK 23+) to kinds.
var blobKindNames = map[string]string{
	"Nmethod":        KindNMethod,
	"Buffer":         KindBuffer,
	"Adapter":        KindAdapter,
	"Vtable":         KindVtable,
	"MHAdapter":      KindMHAdapter,
	"RuntimeStub":    KindRuntimeStub,
	"Deoptimization": KindDeoptimization,
	"Safepoint":      KindSafepoint,
	"Exception":      KindException,
	"UncommonTrap":   KindUncommonTrap,
	"Upcall":         KindUpcall,
}

// blobVtables maps the vtable symbols of the CodeBlob classes (JDK 9-22, in libjvm's .symtab) to kinds.
var blobVtables = map[string]string{
	"_ZTV7nmethod":                   KindNMethod,
	"_ZTV10BufferBlob":               KindBuffer,
	"_ZTV11AdapterBlob":              KindAdapter,
	"_ZTV10VtableBlob":               KindVtable,
	"_ZTV24MethodHandlesAdapterBlob": KindMHAdapter,
	"_ZTV11RuntimeStub":              KindRuntimeStub,
	"_ZTV18DeoptimizationBlob":       KindDeoptimization,
	"_ZTV13SafepointBlob":            KindSafepoint,
	"_ZTV13ExceptionBlob":            KindException,
	"_ZTV16UncommonTrapBlob":         KindUncommonTrap,
	"_ZTV18OptimizedEntryBlob":       KindUpcall,
	"_ZTV10UpcallStub":               KindUpcall,
}

// kindByName classifies a blob by its name when the JVM gives no type (a libjvm without .symtab).
func kindByName(name string) string {
	switch {
	case name == "nmethod":
		return KindNMethod
	case name == "native nmethod":
		return KindNativeNMethod
	case name == "Interpreter":
		return KindInterpreter
	case strings.HasPrefix(name, "StubRoutines"):
		return KindStubRoutines
	case name == "I2C/C2I adapters":
		return KindAdapter
	case name == "MethodHandles adapters":
		return KindMHAdapter
	case name == "vtable chunks":
		return KindVtable
	case name == "DeoptimizationBlob":
		return KindDeoptimization
	case name == "SafepointBlob":
		return KindSafepoint
	case name == "ExceptionBlob":
		return KindException
	case name == "UncommonTrapBlob":
		return KindUncommonTrap
	}
	return KindStub
}

// refineKind separates what one C++ class holds: native wrappers among nmethods, the interpreter and
// the StubRoutines among BufferBlobs.
func refineKind(kind, name string) string {
	switch kind {
	case KindNMethod:
		if name == "native nmethod" {
			return KindNativeNMethod
		}
	case KindBuffer:
		if name == "Interpreter" {
			return KindInterpreter
		}
		if strings.HasPrefix(name, "StubRoutines") {
			return KindStubRoutines
		}
	}
	return kind
}

// CodeCache is a view of the JVM's code cache: its heaps, read once, and caches of blob and method
// names. The name caches assume that what they hold stays alive (no class unloading) while the view
// is used; take a new view with [JVM.CodeCache] now and then in a long-running reader. A CodeCache is
// not safe for concurrent use.
type CodeCache struct {
	j         *JVM
	l         *codeLayout
	heaps     []CodeHeap
	low, high uint64            // CodeCache::_low_bound, _high_bound
	names     map[uint64]string // blob name pointers
	n         *methodNamer
	sl        *scopeLayout // nil until Scopes is first used
	slErr     error
	state     *stateLayout // nil until Dead is first used
	stateErr  error
}

// CodeCache reads the code cache's heaps.
func (j *JVM) CodeCache() (*CodeCache, error) {
	l, err := j.codeLayout()
	if err != nil {
		return nil, err
	}
	c := &CodeCache{j: j, l: l, names: map[uint64]string{}}
	if c.heaps, err = c.readHeaps(); err != nil {
		return nil, err
	}
	// The bounds of all heaps' reserved memory; from the heaps where the JVM does not export them.
	c.low, c.high = ^uint64(0), 0
	for _, h := range c.heaps {
		c.low, c.high = min(c.low, h.ReservedLow), max(c.high, h.ReservedHigh)
	}
	if l.lowBound.OK && l.highBound.OK {
		lo, err1 := j.static(l.lowBound)
		hi, err2 := j.static(l.highBound)
		if err1 == nil && err2 == nil && lo < hi {
			c.low, c.high = lo, hi
		}
	}
	return c, nil
}

// Contains reports whether pc lies in the code cache's reserved memory (CodeCache::_low_bound to
// _high_bound): JIT-compiled code, the interpreter or stubs, rather than native code.
func (c *CodeCache) Contains(pc uint64) bool { return c.low <= pc && pc < c.high }

// CodeBlobs lists every blob of every code heap, with method names for the nmethods.
func (j *JVM) CodeBlobs() ([]CodeBlob, error) {
	c, err := j.CodeCache()
	if err != nil {
		return nil, err
	}
	return c.Blobs()
}

// FindBlob returns the blob that contains pc, or nil if pc is in no blob.
func (j *JVM) FindBlob(pc uint64) (*CodeBlob, error) {
	c, err := j.CodeCache()
	if err != nil {
		return nil, err
	}
	return c.FindBlob(pc)
}

// Heaps returns the code heaps as they were when the view was taken.
func (c *CodeCache) Heaps() []CodeHeap { return c.heaps }

func (c *CodeCache) readHeaps() ([]CodeHeap, error) {
	j, l := c.j, c.l
	arr, err := j.static(l.heaps)
	if err != nil {
		return nil, fmt.Errorf("vmstructs: read CodeCache::_heaps: %w", err)
	}
	if arr == 0 {
		return nil, fmt.Errorf("vmstructs: CodeCache::_heaps is null: %w", ErrNotInitialized)
	}
	n, err := j.getInt(arr, l.arrLen)
	if err != nil {
		return nil, fmt.Errorf("vmstructs: read the code heap list: %w", err)
	}
	if n < 0 || n > maxHeaps {
		return nil, fmt.Errorf("vmstructs: %d code heaps is implausible", n)
	}
	data, err := j.get(arr, l.arrData)
	if err != nil {
		return nil, fmt.Errorf("vmstructs: read the code heap list: %w", err)
	}
	heaps := make([]CodeHeap, 0, n)
	for i := range uint64(n) {
		p, err := j.r.u64(data + 8*i)
		if err != nil {
			return nil, fmt.Errorf("vmstructs: read code heap %d: %w", i, err)
		}
		h, err := c.readHeap(p)
		if err != nil {
			return nil, fmt.Errorf("vmstructs: read code heap %d at %#x: %w", i, p, err)
		}
		heaps = append(heaps, h)
	}
	return heaps, nil
}

func (c *CodeCache) readHeap(p uint64) (CodeHeap, error) {
	l := c.l
	h := CodeHeap{Addr: p}
	// One read for the whole CodeHeap object, up to its last field we use.
	mem, seg := l.heapMemory.Offset, l.heapSegmap.Offset
	size := max(l.heapLog2.Offset+max(l.heapLog2.Size, 1), mem+l.vsRead, seg+l.vsRead)
	buf, err := c.j.r.bytes(p, int(size))
	if err != nil {
		return h, err
	}
	var log2 uint64
	for _, f := range []struct {
		dst  *uint64
		base uint64
		f    F
	}{
		{&h.Low, mem, l.vsLow}, {&h.High, mem, l.vsHigh},
		{&h.ReservedLow, mem, l.vsLowB}, {&h.ReservedHigh, mem, l.vsHighB},
		{&h.Segmap, seg, l.vsLow}, {&h.SegmapHigh, seg, l.vsHigh},
		{&log2, 0, l.heapLog2},
	} {
		*f.dst, _ = fieldIn(buf, f.base, f.f)
	}
	h.Log2Segment = uint(log2)
	if log2 < 4 || log2 > maxLog2Seg || h.Low > h.High || h.Segmap > h.SegmapHigh ||
		h.ReservedLow > h.Low || h.High > h.ReservedHigh {
		return h, fmt.Errorf("implausible heap %+v", h)
	}
	return h, nil
}

// heapFor returns the heap whose reserved range holds pc, re-reading it when pc lies beyond its
// committed part (the heap may have grown since the view was taken).
func (c *CodeCache) heapFor(pc uint64) (*CodeHeap, error) {
	for i := range c.heaps {
		h := &c.heaps[i]
		if pc < h.ReservedLow || pc >= h.ReservedHigh {
			continue
		}
		if pc >= h.High {
			nh, err := c.readHeap(h.Addr)
			if err != nil {
				return nil, err
			}
			*h = nh
		}
		if pc < h.Low || pc >= h.High {
			return nil, nil
		}
		return h, nil
	}
	return nil, nil
}

// FindBlob returns the blob that contains pc, or nil if pc is in no blob (outside the code cache, or in
// free space). It reads a few bytes of the segment map: each byte is the distance in segments back
// towards the start of its block, 0 at the start, 0xFF in free space.
func (c *CodeCache) FindBlob(pc uint64) (*CodeBlob, error) {
	if !c.Contains(pc) {
		return nil, nil
	}
	h, err := c.heapFor(pc)
	if h == nil || err != nil {
		return nil, err
	}
	seg := (pc - h.Low) >> h.Log2Segment
	if h.Segmap+seg >= h.SegmapHigh {
		return nil, fmt.Errorf("vmstructs: find blob at %#x: segment %d beyond the segment map", pc, seg)
	}
	// Read the segment map backwards in small windows: most blobs span fewer segments than one holds.
	var buf [segmapWindow]byte
	lo := seg + 1 // buf holds the segment map entries from lo on
	for hops := 0; ; hops++ {
		if hops > maxHops {
			return nil, fmt.Errorf("vmstructs: find blob at %#x: more than %d segment map hops", pc, maxHops)
		}
		if seg < lo {
			lo = seg - min(seg, segmapWindow-1)
			if _, err := c.j.Mem.ReadAt(buf[:seg+1-lo], h.Segmap+lo); err != nil {
				return nil, fmt.Errorf("vmstructs: find blob at %#x: %w", pc, err)
			}
		}
		v := buf[seg-lo]
		if v == freeSegment {
			return nil, nil
		}
		if v == 0 {
			break
		}
		if uint64(v) > seg {
			return nil, fmt.Errorf("vmstructs: find blob at %#x: segment map hop before the heap", pc)
		}
		seg -= uint64(v)
	}
	block := h.Low + seg<<h.Log2Segment
	w := &window{m: c.j.Mem, lo: h.Low, hi: h.High}
	used, b, err := c.readBlockAt(w, block, h)
	if err != nil || !used || b == nil {
		return nil, err
	}
	if pc < b.BlobAddr || pc >= b.BlobAddr+uint64(b.BlobSize) {
		return nil, nil
	}
	if b.Method != 0 {
		b.MethodName, _ = c.namer().name(b.Method)
	}
	return b, nil
}

// Blobs lists every blob of every heap, in address order within each heap, with method names for the
// nmethods. If only the entries for method names are missing, the blobs come with empty method names
// and a *MissingError.
func (c *CodeCache) Blobs() ([]CodeBlob, error) {
	var out []CodeBlob
	for i := range c.heaps {
		var err error
		if out, err = c.walk(&c.heaps[i], out); err != nil {
			return nil, err
		}
	}
	// A fresh namer over a page cache: this listing is a snapshot.
	n := c.j.newNamer(Cached(c.j.Mem, namerPages))
	if n.err != nil {
		return out, n.err
	}
	for i := range out {
		if out[i].Method != 0 {
			out[i].MethodName, _ = n.name(out[i].Method)
		}
	}
	return out, nil
}

// walk appends the used blocks of a heap. Block starts come from the segment map (value 0), which the
// JVM keeps exact for used and free blocks alike: the walk goes from one 0 to the next, never by a block
// header's length.
func (c *CodeCache) walk(h *CodeHeap, out []CodeBlob) ([]CodeBlob, error) {
	segs := (h.High - h.Low) >> h.Log2Segment
	segs = min(segs, h.SegmapHigh-h.Segmap, maxSegmap)
	if segs == 0 {
		return out, nil
	}
	segmap, err := c.j.r.bytes(h.Segmap, int(segs))
	if err != nil {
		return out, fmt.Errorf("vmstructs: read the segment map at %#x: %w", h.Segmap, err)
	}
	return c.walkSegmap(h, segmap, out)
}

func (c *CodeCache) walkSegmap(h *CodeHeap, segmap []byte, out []CodeBlob) ([]CodeBlob, error) {
	segs := uint64(len(segmap))
	seg := nextBlockStart(segmap, 0)
	// The blocks are read through a window that moves forward over the heap: a few large reads
	// instead of one per blob.
	w := &window{m: c.j.Mem, lo: h.Low, hi: min(h.High, h.Low+segs<<h.Log2Segment), chunk: walkChunk}
	for seg < segs {
		block := h.Low + seg<<h.Log2Segment
		used, b, err := c.readBlockAt(w, block, h)
		if errors.Is(err, ErrProcessGone) {
			return out, err
		}
		if err == nil && used && b != nil {
			if len(out) >= maxBlobsTotal {
				return out, fmt.Errorf("vmstructs: more than %d code blobs: listing cut short", maxBlobsTotal)
			}
			out = append(out, *b)
		}
		// The next block starts at the next 0 of the segment map, never where this block's header says it
		// ends: the map was read first, and a block freed and reused since may hold anything where its
		// header was; a length read from there could jump over live blocks.
		seg = nextBlockStart(segmap, seg+1)
	}
	return out, nil
}

// nextBlockStart returns the first block start at or after seg, or len(segmap).
func nextBlockStart(segmap []byte, seg uint64) uint64 {
	if seg >= uint64(len(segmap)) {
		return uint64(len(segmap))
	}
	if i := bytes.IndexByte(segmap[seg:], 0); i >= 0 {
		return seg + uint64(i)
	}
	return uint64(len(segmap))
}

// readBlockAt reads the header of the block at addr (used or free) and, if it is used, its blob (room:
// the length in its header). A blob whose fields make no sense (being built or torn down) gives nil.
func (c *CodeCache) readBlockAt(w *window, block uint64, h *CodeHeap) (used bool, b *CodeBlob, err error) {
	l := c.l
	buf, err := w.get(block, l.hbSize+l.blobRead)
	if err != nil {
		// A small blob at the end of the committed memory: read the CodeBlob part only.
		if buf, err = w.get(block, l.hbSize+l.baseRead); err != nil {
			return false, nil, err
		}
	}
	hdr := l.hbHeader.Offset
	length, ok1 := fieldIn(buf, hdr, l.hbLength)
	u, ok2 := fieldIn(buf, hdr, l.hbUsed)
	if !ok1 || !ok2 {
		return false, nil, fmt.Errorf("vmstructs: block header at %#x: short read", block)
	}
	if u == 0 {
		return false, nil, nil
	}
	blob := block + l.hbSize
	b = c.parseBlob(blob, buf[l.hbSize:], min(length, 1<<32)<<h.Log2Segment)
	return true, b, nil
}

// parseBlob decodes a blob from the bytes read at its address. room is the block's size.
func (c *CodeCache) parseBlob(addr uint64, buf []byte, room uint64) *CodeBlob {
	l := c.l
	size, ok := intFieldIn(buf, 0, l.size)
	if !ok || size <= 0 || uint64(size) > room {
		return nil
	}
	b := &CodeBlob{BlobAddr: addr, BlobSize: int(size), FrameComplete: -1}
	begin, ok1 := fieldIn(buf, 0, l.codeBegin)
	end, ok2 := fieldIn(buf, 0, l.codeEnd)
	if !ok1 || !ok2 {
		return nil
	}
	if l.codeIsOffset {
		begin, end = addr+uint64(int32(begin)), addr+uint64(int32(end))
	}
	if begin < addr || end < begin || end > addr+uint64(size) {
		return nil
	}
	b.Start, b.End = begin, end
	if v, ok := intFieldIn(buf, 0, l.frameSize); ok {
		b.FrameSize = int(v) * 8
	}
	if v, ok := intFieldIn(buf, 0, l.frameComplete); ok {
		b.FrameComplete = int(v)
	}
	if p, ok := fieldIn(buf, 0, l.name); ok {
		b.Name = c.blobName(p)
	}
	switch {
	case l.kind.OK:
		v, _ := intFieldIn(buf, 0, l.kind)
		if b.Kind = l.kinds[v]; b.Kind == "" {
			b.Kind = KindStub
		}
	case len(l.vtables) > 0:
		vptr, _ := decodeLE(buf, 0, 8)
		if b.Kind = l.vtables[vptr]; b.Kind == "" {
			b.Kind = kindByName(b.Name)
		}
	default:
		b.Kind = kindByName(b.Name)
	}
	b.Kind = refineKind(b.Kind, b.Name)
	if b.Kind == KindNMethod || b.Kind == KindNativeNMethod {
		b.Method, _ = fieldIn(buf, 0, l.nmMethod)
		if v, ok := intFieldIn(buf, 0, l.nmCompileID); ok {
			b.CompileID = int(v)
		}
		if v, ok := intFieldIn(buf, 0, l.nmLevel); ok {
			b.Level = int(v)
		}
		if v, ok := fieldIn(buf, 0, l.nmVerified); ok {
			if l.verifiedIsOffset {
				v += b.Start
			}
			b.VerifiedEntry = v
		}
	}
	return b
}

func (c *CodeCache) blobName(p uint64) string {
	if s, ok := c.names[p]; ok {
		return s
	}
	s, err := c.j.r.cstring(p, maxBlobName)
	if err != nil {
		s = ""
	}
	c.names[p] = s
	return s
}

func (c *CodeCache) namer() *methodNamer {
	if c.n == nil {
		c.n = c.j.newNamer(c.j.Mem)
	}
	return c.n
}

// namerPages bounds the page cache of a listing's method names (64 MiB).
const namerPages = 16 << 10

// walkChunk is how much of a code heap a walk reads at once.
const walkChunk = 1 << 20

// States of nmethod::_state (a signed char) up to JDK 19, as HotSpot's code/compiledMethod.hpp numbers
// them in 11 and 17: not_installed -1, in_use 0, not_used 1, not_entrant 2, zombie 3, unloaded 4. JDK
// 20 removed the sweeper and with it zombie and unloaded: not_installed -1, in_use 0, not_entrant 1.
const (
	nmZombie      = 3
	nmUnloaded    = 4
	lastSweeperVM = 19 // the last JDK with zombie and unloaded nmethods
)

// stateLayout is where an nmethod keeps its state, and whether this JVM's nmethods can be dead and
// still in the code cache.
type stateLayout struct {
	field   F
	sweeper bool // JDK <= 19: zombie and unloaded are states
}

func (c *CodeCache) stateLayout() (*stateLayout, error) {
	if c.state != nil || c.stateErr != nil {
		return c.state, c.stateErr
	}
	r := c.j.resolver()
	l := &stateLayout{field: r.field("nmethod", "_state")}
	if err := r.err("nmethod state"); err != nil {
		c.stateErr = err
		return nil, err
	}
	// Every JDK declares _state a signed char. The types table has "volatile signed char" but not
	// "signed char", which the qualifier-free lookup of a field's width wants.
	if l.field.Size == 0 {
		l.field.Size = 1
	}
	if l.field.Addr != 0 || l.field.Size != 1 || l.field.Offset > 4096 {
		c.stateErr = fmt.Errorf("vmstructs: nmethod state: nmethod::_state of %d bytes at +%d is not a known layout", l.field.Size, l.field.Offset)
		return nil, c.stateErr
	}
	major, err := c.j.vmMajor("nmethod state")
	if err != nil {
		c.stateErr = err
		return nil, err
	}
	l.sweeper = major <= lastSweeperVM
	c.state = l
	return l, nil
}

// Dead reports whether nmethod b, still in the code cache, is dead: a zombie or unloaded, the states
// in which JDKs with the sweeper (up to 19) keep an nmethod that no thread runs until the sweeper
// frees it. Not entrant is not dead: threads still in the code return into it. From JDK 20 on an
// unloaded nmethod is freed at the end of the GC cycle that unlinked it, so on those JVMs Dead is
// false without reading: a dead nmethod is one that FindBlob no longer finds. Blobs other than
// nmethods are never dead. Without nmethod::_state in this JVM's table the error is a *MissingError.
func (c *CodeCache) Dead(b *CodeBlob) (bool, error) {
	if b == nil || b.Kind != KindNMethod && b.Kind != KindNativeNMethod {
		return false, nil
	}
	l, err := c.stateLayout()
	if err != nil || !l.sweeper {
		return false, err
	}
	st, err := c.j.getInt(b.BlobAddr, l.field)
	if err != nil {
		return false, fmt.Errorf("vmstructs: nmethod %#x state: %w", b.BlobAddr, err)
	}
	return st == nmZombie || st == nmUnloaded, nil
}

// Scope is one frame of the inlining chain of an nmethod at a pc: the compiled method itself or a
// method the compiler inlined into it.
type Scope struct {
	Method     uint64 `json:"method"`
	MethodName string `json:"method_name,omitempty"`
	BCI        int    `json:"bci"`  // bytecode index; -1: not known at this pc, or the method's entry
	Line       int    `json:"line"` // source line; -1: not known (no debug info, or no line number table)
}

// scopeLayout is where an nmethod keeps its debug information: PcDescs (sorted pc offsets, each
// pointing into the scopes data), the scopes data (UNSIGNED5 records) and the metadata array the
// records index into.
type scopeLayout struct {
	pcSize            uint64
	pcOffset, pcScope F

	// JDK 9-22: offsets relative to the nmethod, and a pointer.
	pcsOff, depsOff, dataBegin, metaOff F
	// JDK 23+: relative to the immutable data; JDK 24+: the metadata in the mutable data.
	immutable, immutableSize, dataOff F
	mutable, mutableSize, relocSize   F
	blobDataOff                       F
	hdrRead                           uint64
	excluded                          uint32 // UNSIGNED5's excluded byte values: 1 from JDK 20 on (none before)
}

func (c *CodeCache) scopeLayout() (*scopeLayout, error) {
	if c.sl != nil || c.slErr != nil {
		return c.sl, c.slErr
	}
	j := c.j
	r := j.resolver()
	l := &scopeLayout{
		pcSize:   r.typeSize("PcDesc"),
		pcOffset: r.field("PcDesc", "_pc_offset"),
		pcScope:  r.field("PcDesc", "_scope_decode_offset"),
		pcsOff:   r.field("nmethod", "_scopes_pcs_offset"),
	}
	if f := r.optField("nmethod", "_immutable_data"); f.OK {
		l.immutable = f
		l.immutableSize = r.field("nmethod", "_immutable_data_size")
		l.dataOff = r.field("nmethod", "_scopes_data_offset")
		if f := r.optField("CodeBlob", "_mutable_data"); f.OK {
			l.mutable = f
			l.mutableSize = r.field("CodeBlob", "_mutable_data_size")
			l.relocSize = r.field("CodeBlob", "_relocation_size")
		} else {
			// JDK 23: a u2 offset from the blob's data.
			l.metaOff = r.field("nmethod", "_metadata_offset")
			l.blobDataOff = r.field("CodeBlob", "_data_offset")
		}
	} else {
		l.depsOff = r.field("nmethod", "_dependencies_offset")
		l.dataBegin = r.field("nmethod|CompiledMethod", "_scopes_data_begin")
		l.metaOff = r.field("nmethod", "_metadata_offset")
	}
	if err := r.err("nmethod scopes"); err != nil {
		c.slErr = err
		return nil, err
	}
	major, err := j.vmMajor("nmethod scopes")
	if err != nil {
		c.slErr = err
		return nil, err
	}
	if major >= 20 {
		l.excluded = 1
	}
	for _, f := range []F{l.pcsOff, l.depsOff, l.dataBegin, l.metaOff, l.immutable, l.immutableSize, l.dataOff,
		l.mutable, l.mutableSize, l.relocSize, l.blobDataOff} {
		if f.OK {
			l.hdrRead = max(l.hdrRead, f.Offset+max(f.Size, 1))
		}
	}
	if l.pcSize < 8 || l.pcSize > 64 || l.hdrRead > 4096 {
		c.slErr = fmt.Errorf("vmstructs: nmethod scopes: implausible PcDesc or nmethod layout")
		return nil, c.slErr
	}
	c.sl = l
	return l, nil
}

// Bounds for debug information, which is untrusted.
const (
	maxPcDescs    = 1 << 20
	maxScopeDepth = 64
	maxMetadata   = 1 << 20
)

// debugInfo is where one nmethod's debug information lies.
type debugInfo struct {
	pcs, pcsEnd, data, dataEnd, meta, metaEnd uint64
}

func (c *CodeCache) debugInfo(l *scopeLayout, b *CodeBlob) (debugInfo, error) {
	buf, err := c.j.r.bytes(b.BlobAddr, int(l.hdrRead))
	if err != nil {
		return debugInfo{}, err
	}
	get := func(f F) uint64 { v, _ := fieldIn(buf, 0, f); return v }
	geti := func(f F) uint64 { v, _ := intFieldIn(buf, 0, f); return uint64(v) }
	nm := b.BlobAddr
	var d debugInfo
	if l.immutable.OK {
		// JDK 25 puts the PcDescs before the scopes data, and the scopes data last (JDK 26 appends a
		// reference count, which the size excludes); take whichever order the offsets say.
		imm := get(l.immutable)
		pcs, data, end := imm+geti(l.pcsOff), imm+geti(l.dataOff), imm+geti(l.immutableSize)
		if pcs <= data {
			d.pcs, d.pcsEnd, d.data, d.dataEnd = pcs, data, data, end
		} else {
			d.pcs, d.pcsEnd, d.data, d.dataEnd = pcs, end, data, pcs
		}
		if l.mutable.OK {
			mut := get(l.mutable)
			d.meta, d.metaEnd = mut+geti(l.relocSize), mut+geti(l.mutableSize)
		} else {
			d.meta = nm + geti(l.blobDataOff) + get(l.metaOff)
			d.metaEnd = d.meta + 8*maxMetadata
		}
	} else {
		d.pcs, d.pcsEnd = nm+geti(l.pcsOff), nm+geti(l.depsOff)
		d.data, d.dataEnd = get(l.dataBegin), d.pcs
		d.meta, d.metaEnd = nm+geti(l.metaOff), d.data
	}
	if d.pcs > d.pcsEnd || d.pcsEnd-d.pcs > maxPcDescs*l.pcSize || d.data > d.dataEnd ||
		d.meta > d.metaEnd || d.metaEnd-d.meta > 8*maxMetadata {
		return debugInfo{}, fmt.Errorf("vmstructs: nmethod %#x: implausible debug information %+v", nm, d)
	}
	return d, nil
}

// Scopes returns the inlining chain of nmethod b at pc, innermost method first, the nmethod's own
// method last. A return address (top false) is looked up as HotSpot does for a call site: the PcDesc
// at pc; the return address of a leaf call has none. For the pc of a thread's top frame (top true),
// the first PcDesc after it describes the code that pc is in (pc_desc_near(pc+1) in forte.cpp).
// Without debug information at pc there is one scope, the nmethod's method, with BCI -1. Line is -1 where the method has no line number table. If
// this JVM lacks the entries for method names or line numbers, the scopes come without them and with
// a *MissingError.
func (c *CodeCache) Scopes(b *CodeBlob, pc uint64, top bool) ([]Scope, error) {
	return c.scopes(b, pc, top, false)
}

// scopes is Scopes, or with near ScopesNear.
func (c *CodeCache) scopes(b *CodeBlob, pc uint64, top, near bool) ([]Scope, error) {
	if b == nil || b.Kind != KindNMethod && b.Kind != KindNativeNMethod {
		return nil, fmt.Errorf("vmstructs: scopes: not an nmethod")
	}
	if pc < b.Start || pc >= b.End {
		return nil, fmt.Errorf("vmstructs: scopes: pc %#x outside the code of nmethod %#x", pc, b.BlobAddr)
	}
	l, d, pcs, err := c.pcDescs(b)
	if err != nil {
		return nil, err
	}
	n := len(pcs) / int(l.pcSize)
	off := int64(pc - b.Start)
	if top {
		off++
	}
	at := func(i int) (int64, int64) {
		p, _ := intFieldIn(pcs, uint64(i)*l.pcSize, l.pcOffset)
		s, _ := intFieldIn(pcs, uint64(i)*l.pcSize, l.pcScope)
		return p, s
	}
	i := sort.Search(n, func(i int) bool { p, _ := at(i); return p >= off })
	if !top && !near && i < n {
		if p, _ := at(i); p != off {
			// A return address without debug information: a leaf call (a stub, a runtime function)
			// records none. Its inlining is unknown; HotSpot's own walkers then give the nmethod's
			// method alone (vframeStream's fill_from_compiled_native_frame).
			i = n
		}
	}
	if near {
		// The last PcDesc at or before pc that has debug information, if any.
		k := sort.Search(n, func(i int) bool { p, _ := at(i); return p > int64(pc-b.Start) })
		for k--; k >= 0; k-- {
			if p, s := at(k); p >= 0 && s != 0 {
				i = k
				break
			}
		}
	}
	var scopes []Scope
	if i < n {
		_, decode := at(i)
		scopes, err = c.decodeScopes(l, d, decode)
		if err != nil {
			return nil, fmt.Errorf("vmstructs: nmethod %#x: %w", b.BlobAddr, err)
		}
	}
	if len(scopes) == 0 {
		scopes = []Scope{{Method: b.Method, BCI: -1}}
	}
	// Names and lines are extras: without their entries the scopes still come, with the reason.
	nm := c.namer()
	var missing error
	for k := range scopes {
		s := &scopes[k]
		var err1, err2 error
		s.MethodName, err1 = nm.name(s.Method)
		s.Line, err2 = nm.line(s.Method, s.BCI)
		for _, err := range []error{err1, err2} {
			var me *MissingError
			if missing == nil && errors.As(err, &me) {
				missing = err
			}
		}
	}
	return scopes, missing
}

// decodeScopes follows the scope records from offset decode (0: none) to the outermost one. Each
// record starts with three UNSIGNED5 numbers: the offset of its sender's record (0: none), the
// 1-based index of its Method* in the metadata, and the bci + 1.
func (c *CodeCache) decodeScopes(l *scopeLayout, d debugInfo, decode int64) ([]Scope, error) {
	var out []Scope
	for decode != 0 {
		if len(out) == maxScopeDepth {
			return nil, fmt.Errorf("scopes deeper than %d", maxScopeDepth)
		}
		if decode < 0 || uint64(decode) >= d.dataEnd-d.data {
			return nil, fmt.Errorf("scope offset %d outside the scopes data", decode)
		}
		a := d.data + uint64(decode)
		buf, err := c.j.r.bytes(a, int(min(3*unsigned5Max, d.dataEnd-a)))
		if err != nil {
			return nil, err
		}
		var v [3]uint32
		pos := 0
		for k := range v {
			var ok bool
			if v[k], pos, ok = readUnsigned5(buf, pos, l.excluded); !ok {
				return nil, fmt.Errorf("scope at offset %d: truncated", decode)
			}
		}
		s := Scope{BCI: int(int32(v[2])) - 1}
		if idx := uint64(v[1]); idx > 0 {
			if idx > (d.metaEnd-d.meta)/8 {
				return nil, fmt.Errorf("scope at offset %d: metadata index %d out of range", decode, idx)
			}
			if s.Method, err = c.j.r.u64(d.meta + 8*(idx-1)); err != nil {
				return nil, err
			}
		}
		out = append(out, s)
		sender := int64(v[0])
		if sender != 0 && sender >= decode {
			return nil, fmt.Errorf("scope at offset %d: sender at %d does not come before it", decode, sender)
		}
		decode = sender
	}
	return out, nil
}

// pcDescs reads the debug information of nmethod b: the scope layout, where its scopes, metadata and
// PcDescs are, and the PcDesc table itself.
func (c *CodeCache) pcDescs(b *CodeBlob) (*scopeLayout, debugInfo, []byte, error) {
	l, err := c.scopeLayout()
	if err != nil {
		return nil, debugInfo{}, nil, err
	}
	d, err := c.debugInfo(l, b)
	if err != nil {
		return nil, debugInfo{}, nil, err
	}
	pcs, err := c.j.r.bytes(d.pcs, int(d.pcsEnd-d.pcs))
	if err != nil {
		return nil, debugInfo{}, nil, fmt.Errorf("vmstructs: nmethod %#x PcDescs: %w", b.BlobAddr, err)
	}
	return l, d, pcs, nil
}

// maxInlinedPcDescs bounds the PcDescs Inlined decodes per nmethod (large C2 methods have thousands).
const maxInlinedPcDescs = 1 << 16

// Inlined returns the methods compiled into nmethod b other than its own: the distinct methods of every
// scope of every PcDesc, in the order first seen, named as MethodName names them.
func (c *CodeCache) Inlined(b *CodeBlob) ([]string, error) {
	if b == nil || b.Kind != KindNMethod {
		return nil, fmt.Errorf("vmstructs: inlined: not an nmethod")
	}
	l, d, pcs, err := c.pcDescs(b)
	if err != nil {
		return nil, err
	}
	n := min(len(pcs)/int(l.pcSize), maxInlinedPcDescs)
	seen := map[uint64]bool{b.Method: true}
	decoded := map[int64]bool{}
	nm := c.namer()
	var out []string
	for i := range n {
		decode, _ := intFieldIn(pcs, uint64(i)*l.pcSize, l.pcScope)
		if decode == 0 || decoded[decode] {
			continue
		}
		decoded[decode] = true
		scopes, err := c.decodeScopes(l, d, decode)
		if err != nil {
			return out, fmt.Errorf("vmstructs: nmethod %#x: %w", b.BlobAddr, err)
		}
		for _, s := range scopes {
			if s.Method == 0 || seen[s.Method] {
				continue
			}
			seen[s.Method] = true
			name, err := nm.name(s.Method)
			if err != nil {
				name = fmt.Sprintf("Method@%#x", s.Method)
			}
			out = append(out, name)
		}
	}
	return out, nil
}

// CodeRange is a part of an nmethod's code and the inlining chain the code there belongs to.
type CodeRange struct {
	Start uint64 `json:"start"`
	End   uint64 `json:"end"` // exclusive
	// Scopes is the chain, innermost method first and the nmethod's own method last, with names but
	// without bcis' lines. A range the debug information says nothing about has the nmethod's method only.
	Scopes []Scope `json:"scopes"`
}

// InlineRanges splits the code of nmethod b into ranges by inlining chain: the code up to each PcDesc's
// pc belongs to that PcDesc's scope, as a thread's top pc does (see Scopes); neighbouring ranges with
// the same chain of methods are merged. The ranges cover Start to End without gaps. Outside safepoints
// and calls, HotSpot records PcDescs only with -XX:+DebugNonSafepoints, so without it the ranges are
// coarse.
func (c *CodeCache) InlineRanges(b *CodeBlob) ([]CodeRange, error) {
	if b == nil || b.Kind != KindNMethod {
		return nil, fmt.Errorf("vmstructs: inline ranges: not an nmethod")
	}
	l, d, pcs, err := c.pcDescs(b)
	if err != nil {
		return nil, err
	}
	n := min(len(pcs)/int(l.pcSize), maxInlinedPcDescs)
	size := int64(b.End - b.Start)
	own := []Scope{{Method: b.Method, BCI: -1}}
	var out []CodeRange
	add := func(from, to int64, scopes []Scope) {
		if to <= from {
			return
		}
		if k := len(out) - 1; k >= 0 && sameMethods(out[k].Scopes, scopes) && out[k].End == b.Start+uint64(from) {
			out[k].End = b.Start + uint64(to)
			return
		}
		out = append(out, CodeRange{Start: b.Start + uint64(from), End: b.Start + uint64(to), Scopes: scopes})
	}
	decoded := map[int64][]Scope{}
	var prev int64
	for i := range n {
		off, _ := intFieldIn(pcs, uint64(i)*l.pcSize, l.pcOffset)
		decode, _ := intFieldIn(pcs, uint64(i)*l.pcSize, l.pcScope)
		if off <= prev {
			continue // the sentinel at -1, or a PcDesc at a pc already covered
		}
		off = min(off, size)
		scopes, ok := decoded[decode]
		if !ok {
			if decode != 0 {
				if scopes, err = c.decodeScopes(l, d, decode); err != nil {
					return nil, fmt.Errorf("vmstructs: nmethod %#x: %w", b.BlobAddr, err)
				}
			}
			if len(scopes) == 0 {
				scopes = own
			}
			decoded[decode] = scopes
		}
		add(prev, off, scopes)
		prev = off
		if off == size {
			break
		}
	}
	add(prev, size, own)
	nm := c.namer()
	for _, scopes := range decoded {
		for k := range scopes {
			if scopes[k].MethodName == "" {
				scopes[k].MethodName, _ = nm.name(scopes[k].Method)
			}
			scopes[k].Line = -1
		}
	}
	if own[0].MethodName == "" {
		own[0].MethodName, own[0].Line = b.MethodName, -1
	}
	return out, nil
}

// sameMethods reports whether two chains are the same methods, whatever their bcis.
func sameMethods(a, b []Scope) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Method != b[i].Method {
			return false
		}
	}
	return true
}
