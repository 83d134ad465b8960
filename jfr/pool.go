package jfr

import (
	"fmt"
	"math"
	"strings"
)

// pool is a chunk's constants of one type: where each value's bytes are, and the value once decoded.
type pool struct {
	typ     *Type
	keys    map[int64]int32
	entries []cpEntry
}

type cpEntry struct {
	off, end int32 // the value's bytes start at off; end is its checkpoint's end (from the chunk start)
	state    uint8
	lost     int32 // LostConstant values in val, nested constants' included
	val      any
}

// LostConstant is the value of a constant-pool reference that a damaged chunk cannot resolve: the
// chunk was cut before the checkpoint that holds the constant (the JVM writes constants after the
// events that use them), or a checkpoint could not be read. It is not null: the recording had a
// value there. Key 0, the format's null (but not in the JVM's enumerations, see nullKey), and a key
// that an undamaged chunk lacks read as nil, as in the JDK's reader.
type LostConstant struct {
	Type *Type // of the constant
	Key  int64
	// Cut is true when the chunk ends before its constants (cut short, or still being written);
	// false when one of its checkpoints is damaged.
	Cut bool
}

// Reason says why the constant is lost: "recording cut off" or "constant pool damaged".
func (l *LostConstant) Reason() string {
	if l.Cut {
		return "recording cut off"
	}
	return "constant pool damaged"
}

// String is the text `jvmkit jfr print` shows for the value: "[lost: constant pool cut off]" or
// "[lost: constant pool damaged]".
func (l *LostConstant) String() string {
	if l.Cut {
		return "[lost: constant pool cut off]"
	}
	return "[lost: constant pool damaged]"
}

const (
	unresolved = iota
	resolving
	resolved
)

// maxDepth bounds nesting while reading a value: inline structs and constants that refer to
// constants. Real recordings nest a few dozen levels (an Old Object Sample's reference chain is the
// deepest); corrupt metadata could otherwise recurse without end.
const maxDepth = 10000

// readCheckpoint indexes the constants of the checkpoint event at chunk offset at.
func (c *Chunk) readCheckpoint(at int64) error {
	in := c.in(at, int64(len(c.data)))
	size := in.size()
	in.long() // type id, checked by the caller or the scan
	if in.err == nil && (size <= 0 || size > int64(len(c.data))-at) {
		return c.damage(c.Offset+at, fmt.Errorf("checkpoint event size %d is outside the chunk", size))
	}
	end := at + size
	in.b = in.b[:end]
	in.long() // start
	in.long() // duration
	in.long() // delta to the previous checkpoint
	in.u8()   // flush (2.0) or checkpoint type bits (2.1)
	npools := in.int()
	for i := int32(0); i < npools && in.err == nil; i++ {
		typeID := in.long()
		if in.err != nil {
			break
		}
		t := c.Metadata.Type(typeID)
		if t == nil {
			return c.damage(in.offset(), fmt.Errorf("checkpoint at offset %d has constants of type %d, which the metadata does not declare", c.Offset+at, typeID))
		}
		p := c.pools[typeID]
		if p == nil {
			p = &pool{typ: t, keys: map[int64]int32{}}
			c.pools[typeID] = p
		}
		n := in.count(1)
		for j := 0; j < n && in.err == nil; j++ {
			key := in.long()
			start := in.pos
			skipType(in, t, 0)
			if in.err != nil {
				break
			}
			if _, dup := p.keys[key]; dup {
				continue // the earliest value counts
			}
			if len(p.entries) == math.MaxInt32 {
				in.failf("too many constants")
				break
			}
			p.keys[key] = int32(len(p.entries))
			p.entries = append(p.entries, cpEntry{off: int32(start), end: int32(end)})
		}
	}
	if in.err != nil {
		return c.damage(in.errOff, fmt.Errorf("checkpoint at offset %d: %w", c.Offset+at, in.err))
	}
	if int64(in.pos) != end {
		return c.damage(c.Offset+at, fmt.Errorf("checkpoint at offset %d: its size says %d bytes, its constants take %d", c.Offset+at, size, int64(in.pos)-at))
	}
	return nil
}

// skipType skips a value of type t that is not a constant-pool reference.
func skipType(in *input, t *Type, depth int) {
	if depth > maxDepth {
		in.failf("values nested deeper than %d (recursive metadata?)", maxDepth)
		return
	}
	switch t.Kind {
	case KindBoolean, KindByte:
		in.u8()
	case KindChar, KindShort, KindInt, KindLong:
		if in.compressed {
			in.varint()
		} else {
			in.raw(map[Kind]int{KindChar: 2, KindShort: 2, KindInt: 4, KindLong: 8}[t.Kind])
		}
	case KindFloat:
		in.raw(4)
	case KindDouble:
		in.raw(8)
	case KindString:
		in.skipString()
	case KindStruct:
		if len(t.Fields) == 0 {
			in.failf("type %s has no fields and is not a primitive", t.Name)
			return
		}
		for _, f := range t.Fields {
			skipField(in, f, depth+1)
			if in.err != nil {
				return
			}
		}
	}
}

func skipField(in *input, f *Field, depth int) {
	n := 1
	if f.Array {
		n = in.count(1)
	}
	for i := 0; i < n && in.err == nil; i++ {
		if f.ConstantPool {
			in.long()
		} else {
			skipType(in, f.Type, depth)
		}
	}
}

// constant returns the value of the constant of type t with the given key, decoded on first use, and
// the number of LostConstant values in it. A chunk without the key gives nil (the JDK's reader gives
// null too), unless the chunk is damaged and the key is not 0: then the constant was lost with the
// damage (LostConstant). As the JDK's reader does, a key that the previous chunk also had takes the
// previous chunk's value: a constant keeps the value of the first chunk of a run of chunks that have it.
func (c *Chunk) constant(t *Type, key int64, depth int) (any, int, error) {
	var i int32
	ok := false
	if p := c.pools[t.ID]; p != nil {
		i, ok = p.keys[key]
	}
	if !ok {
		if c.lossy && !nullKey(t, key) {
			return &LostConstant{Type: t, Key: key, Cut: !c.finished}, 1, nil
		}
		return nil, 0, nil
	}
	p := c.pools[t.ID]
	e := &p.entries[i]
	switch e.state {
	case resolved:
		return e.val, int(e.lost), nil
	case resolving:
		return nil, 0, nil // a constant that refers to itself: null where the cycle closes, as in the JDK
	}
	if depth > maxDepth {
		return nil, 0, fmt.Errorf("constants nested deeper than %d", maxDepth)
	}
	e.state = resolving
	if c.prev != nil {
		v, lost, err := c.prev.constant(t, key, depth+1)
		if err != nil {
			e.state = unresolved
			return nil, 0, err
		}
		if _, gone := v.(*LostConstant); v != nil && !gone {
			e.val, e.lost, e.state = v, int32(min(lost, math.MaxInt32)), resolved
			return v, lost, nil
		}
	}
	in := c.in(int64(e.off), int64(e.end))
	v := c.decodeType(in, p.typ, depth+1)
	if in.err != nil {
		e.state = unresolved
		return nil, 0, c.damage(in.errOff, fmt.Errorf("constant %d of %s: %w", key, t.Name, in.err))
	}
	e.val, e.lost, e.state = v, int32(min(in.lost, math.MaxInt32)), resolved
	return v, int(e.lost), nil
}

// nullKey tells whether key is the null reference of constants of type t: 0, as the JDK's reader
// has it (jdk.jfr.internal.consumer.ConstantMap), except in the JVM's enumerations, whose constants
// are numbered from 0 (jdk.types.FrameType 0 is "Interpreted"): in a damaged chunk their missing 0
// is lost too. The enumerations are hotspot's static types (jfrType.cpp), seen with a constant 0 in
// the recordings of JDK 11, 17 and 25, and those of the other collectors.
func nullKey(t *Type, key int64) bool {
	if key != 0 {
		return false
	}
	switch t.Name[strings.LastIndexByte(t.Name, '.')+1:] {
	case "Bytecode", "CodeBlobType", "CompilerPhaseType", "CompilerType", "DeoptimizationAction",
		"DeoptimizationReason", "FlagValueOrigin", "FrameType", "G1HeapRegionType", "G1YCType",
		"GCCause", "GCName", "GCThresholdUpdater", "GCWhen", "InflateCause", "MetadataType",
		"MetaspaceObjectType", "NarrowOopMode", "OldObjectRootSystem", "OldObjectRootType",
		"ReferenceType", "ThreadState", "VMOperationType", "ShenandoahHeapRegionState", "ZPageTypeType",
		"ZStatisticsCounterType", "ZStatisticsSamplerType":
		return false
	}
	return true
}

// Constant returns the constant of the named type with the given key in this chunk, decoded, or nil
// (a *LostConstant in a damaged chunk, see LostConstant).
func (c *Chunk) Constant(typeName string, key int64) (any, error) {
	if c.Metadata == nil {
		return nil, nil
	}
	t := c.Metadata.TypeByName(typeName)
	if t == nil {
		return nil, nil
	}
	_ = c.prepare() // its damage is the events' to report; the constants before it are indexed
	v, _, err := c.constant(t, key, 0)
	return v, err
}
