package jfr

import (
	"fmt"
	"iter"
	"slices"
	"time"
)

// Object is a value of a type with fields: an event, a constant (a thread, a class, a method, a stack
// trace) or a struct inside one (a stack frame).
//
// A field's value is nil (a null string, a missing constant), *LostConstant (a constant that a
// damaged chunk cannot resolve: not null, but unknown), bool (boolean), int8 (byte), uint16
// (char), int16 (short), int32 (int), int64 (long), float32, float64, string, *Object, or []any for an
// array. A field of a simple type (jdk.types.Symbol) holds the value of the type's only field. Numbers
// are as recorded: times in ticks unless their Field says otherwise (see Recording.Time and
// Recording.Duration), unsigned fields as their signed bits.
//
// Constants are shared: two events with the same thread hold the same *Object. Objects are never
// changed after decoding.
type Object struct {
	Type   *Type
	Values []any
}

// Get returns the value of the named field, or nil when there is no such field.
func (o *Object) Get(name string) any {
	if o == nil {
		return nil
	}
	if i := o.Type.Field(name); i >= 0 && i < len(o.Values) {
		return o.Values[i]
	}
	return nil
}

// Child returns the named field's value if it is an object.
func (o *Object) Child(name string) *Object {
	v, _ := o.Get(name).(*Object)
	return v
}

// String returns the named field's value if it is a string.
func (o *Object) String(name string) string {
	v, _ := o.Get(name).(string)
	return v
}

// Int returns the named field's value if it is an integer (byte, char, short, int, long), widened to
// int64 (unsigned fields widened without sign).
func (o *Object) Int(name string) (int64, bool) {
	if o == nil {
		return 0, false
	}
	i := o.Type.Field(name)
	if i < 0 || i >= len(o.Values) {
		return 0, false
	}
	return ToInt(o.Values[i], o.Type.Fields[i].Unsigned)
}

// Bool returns the named field's value if it is a boolean.
func (o *Object) Bool(name string) bool {
	v, _ := o.Get(name).(bool)
	return v
}

// Array returns the named field's value if it is an array.
func (o *Object) Array(name string) []any {
	v, _ := o.Get(name).([]any)
	return v
}

// ToInt widens an integer value of a field (byte, char, short, int, long) to int64, without sign when
// the field is unsigned; ok is false for other values.
func ToInt(v any, unsigned bool) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case int32:
		if unsigned {
			return int64(uint32(x)), true
		}
		return int64(x), true
	case int16:
		if unsigned {
			return int64(uint16(x)), true
		}
		return int64(x), true
	case int8:
		if unsigned {
			return int64(uint8(x)), true
		}
		return int64(x), true
	case uint16:
		return int64(x), true
	}
	return 0, false
}

// Event is an event: its type's fields, startTime first (and duration second when the type has one),
// both in ticks.
type Event struct {
	Object
	Chunk  *Chunk
	Offset int64 // file offset
	Size   int   // bytes
	// Lost counts the references of the event, its constants' included, that the chunk's damage
	// left unresolved: the *LostConstant values in it. 0 in an undamaged chunk.
	Lost int
}

// StartTicks returns the start time in ticks.
func (e *Event) StartTicks() int64 {
	if len(e.Values) > 0 {
		v, _ := e.Values[0].(int64)
		return v
	}
	return 0
}

// DurationTicks returns the duration in ticks, 0 for an event type without one.
func (e *Event) DurationTicks() int64 {
	if len(e.Values) > 1 && e.Type.Fields[1].Name == "duration" {
		v, _ := e.Values[1].(int64)
		return v
	}
	return 0
}

// StartTime returns the start time.
func (e *Event) StartTime() time.Time {
	return time.Unix(0, e.Chunk.rec.conv.timestamp(e.StartTicks()))
}

// Duration returns the duration, as the JDK computes it (the end converted minus the start converted).
func (e *Event) Duration() time.Duration {
	d := e.DurationTicks()
	if d == 0 {
		return 0
	}
	c := e.Chunk.rec.conv
	return time.Duration(c.timestamp(e.StartTicks()+d) - c.timestamp(e.StartTicks()))
}

// decodeType reads a value of type t that is not a constant-pool reference.
func (c *Chunk) decodeType(in *input, t *Type, depth int) any {
	if depth > maxDepth {
		in.failf("values nested deeper than %d (recursive metadata?)", maxDepth)
		return nil
	}
	switch t.Kind {
	case KindBoolean:
		return in.u8() != 0
	case KindByte:
		return int8(in.u8())
	case KindChar:
		return in.char()
	case KindShort:
		return in.short()
	case KindInt:
		return in.int()
	case KindLong:
		return in.long()
	case KindFloat:
		return in.float()
	case KindDouble:
		return in.double()
	case KindString:
		s, null, key, isRef := in.inlineString()
		if isRef {
			v, lost, err := c.constant(t, key, depth+1)
			if err != nil {
				in.fail(err)
			}
			in.lost += lost
			return v
		}
		if null {
			return nil
		}
		return s
	}
	if len(t.Fields) == 0 {
		in.failf("type %s has no fields and is not a primitive", t.Name)
		return nil
	}
	if t.Simple {
		return c.decodeField(in, t.Fields[0], depth+1)
	}
	o := &Object{Type: t, Values: make([]any, len(t.Fields))}
	for i, f := range t.Fields {
		o.Values[i] = c.decodeField(in, f, depth+1)
		if in.err != nil {
			return nil
		}
	}
	return o
}

func (c *Chunk) decodeField(in *input, f *Field, depth int) any {
	if !f.Array {
		return c.decodeElem(in, f, depth)
	}
	n := in.count(1)
	if in.err != nil {
		return nil
	}
	a := make([]any, n)
	for i := range a {
		a[i] = c.decodeElem(in, f, depth)
		if in.err != nil {
			return nil
		}
	}
	return a
}

func (c *Chunk) decodeElem(in *input, f *Field, depth int) any {
	if !f.ConstantPool {
		return c.decodeType(in, f.Type, depth)
	}
	key := in.long()
	if in.err != nil {
		return nil
	}
	v, lost, err := c.constant(f.Type, key, depth+1)
	if err != nil {
		in.fail(err)
	}
	in.lost += lost
	return v
}

// event decodes the i-th event of the chunk (file order).
func (c *Chunk) event(ref *eventRef) (*Event, error) {
	in := c.in(int64(ref.off), int64(ref.off)+int64(ref.size))
	in.size() // size
	in.long() // type
	t := ref.typ
	e := &Event{Object: Object{Type: t, Values: make([]any, len(t.Fields))}, Chunk: c, Offset: c.Offset + int64(ref.off), Size: int(ref.size)}
	for i, f := range t.Fields {
		e.Values[i] = c.decodeField(in, f, 0)
		if in.err != nil {
			return nil, c.damage(in.errOff, fmt.Errorf("event %s at offset %d: %w", t.Name, e.Offset, in.err))
		}
	}
	e.Lost = in.lost
	return e, nil
}

// EventOptions choose the events Events yields.
type EventOptions struct {
	// Types keeps the events whose type it returns true for; nil keeps all.
	Types func(*Type) bool
	// Ordered yields each chunk's events by end time, as `jfr print` does (a stable sort, so events
	// that end at the same tick keep file order); else in file order.
	Ordered bool
}

// Events yields the recording's events, chunk after chunk. It stops at the first event that cannot
// be decoded, with its error, and ends with Recording.Err when the recording is damaged.
func (r *Recording) Events(opts EventOptions) iter.Seq2[*Event, error] {
	return func(yield func(*Event, error) bool) {
		for _, c := range r.Chunks {
			for e, err := range c.Events(opts) {
				if !yield(e, err) || err != nil {
					return
				}
			}
		}
		if r.Err != nil {
			yield(nil, r.Err)
		}
	}
}

// Events yields the chunk's events (see Recording.Events), without the recording's damage at the end,
// and ends with the damage of the chunk's constants, if any.
func (c *Chunk) Events(opts EventOptions) iter.Seq2[*Event, error] {
	return func(yield func(*Event, error) bool) {
		perr := c.prepare()
		refs := c.events
		if opts.Types != nil {
			keep := map[*Type]bool{}
			var sel []eventRef
			for _, r := range refs {
				k, ok := keep[r.typ]
				if !ok {
					k = opts.Types(r.typ)
					keep[r.typ] = k
				}
				if k {
					sel = append(sel, r)
				}
			}
			refs = sel
		}
		if opts.Ordered {
			if opts.Types == nil {
				refs = slices.Clone(refs)
			}
			slices.SortStableFunc(refs, func(a, b eventRef) int {
				switch {
				case a.end < b.end:
					return -1
				case a.end > b.end:
					return 1
				}
				return 0
			})
		}
		for i := range refs {
			e, err := c.event(&refs[i])
			if !yield(e, err) || err != nil {
				return
			}
		}
		if perr != nil {
			yield(nil, perr)
		}
	}
}
