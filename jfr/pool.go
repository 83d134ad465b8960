package jfr

import (
	"fmt"
	"math"
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
	val      any
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

// constant returns the value of the constant of type t with the given key, decoded on first use, or
// nil when the chunk has no such constant (the JDK's reader gives null too). As the JDK's reader
// does, a key that the previous chunk also had takes the previous chunk's value: a constant keeps the
// value of the first chunk of a run of chunks that have it.
func (c *Chunk) constant(t *Type, key int64, depth int) (any, error) {
	p := c.pools[t.ID]
	if p == nil {
		return nil, nil
	}
	i, ok := p.keys[key]
	if !ok {
		return nil, nil
	}
	e := &p.entries[i]
	switch e.state {
	case resolved:
		return e.val, nil
	case resolving:
		return nil, nil // a constant that refers to itself: null where the cycle closes, as in the JDK
	}
	if depth > maxDepth {
		return nil, fmt.Errorf("constants nested deeper than %d", maxDepth)
	}
	e.state = resolving
	if c.prev != nil {
		v, err := c.prev.constant(t, key, depth+1)
		if err != nil {
			e.state = unresolved
			return nil, err
		}
		if v != nil {
			e.val, e.state = v, resolved
			return v, nil
		}
	}
	in := c.in(int64(e.off), int64(e.end))
	v := c.decodeType(in, p.typ, depth+1)
	if in.err != nil {
		e.state = unresolved
		return nil, c.damage(in.errOff, fmt.Errorf("constant %d of %s: %w", key, t.Name, in.err))
	}
	e.val, e.state = v, resolved
	return v, nil
}

// Constant returns the constant of the named type with the given key in this chunk, decoded, or nil.
func (c *Chunk) Constant(typeName string, key int64) (any, error) {
	if c.Metadata == nil {
		return nil, nil
	}
	t := c.Metadata.TypeByName(typeName)
	if t == nil {
		return nil, nil
	}
	return c.constant(t, key, 0)
}
