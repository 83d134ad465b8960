package jfr

import (
	"fmt"
	"strconv"
	"strings"
)

// Kind is how a type's values are encoded.
type Kind uint8

const (
	KindStruct  Kind = iota // fields, in order; a constant or inline
	KindBoolean             // one byte
	KindByte                // one byte, signed
	KindChar                // an integer, 16 bits
	KindShort               // an integer, 16 bits signed
	KindInt                 // an integer, 32 bits signed
	KindLong                // an integer, 64 bits signed
	KindFloat               // four bytes, IEEE 754, big-endian
	KindDouble              // eight bytes, IEEE 754, big-endian
	KindString              // java.lang.String: an encoding byte, then the string or a pool key
)

var primitiveKinds = map[string]Kind{
	"boolean":          KindBoolean,
	"byte":             KindByte,
	"char":             KindChar,
	"short":            KindShort,
	"int":              KindInt,
	"long":             KindLong,
	"float":            KindFloat,
	"double":           KindDouble,
	"java.lang.String": KindString,
}

// Type is a class of the recording's metadata: an event type, a constant type (jdk.types.*,
// java.lang.Thread, java.lang.Class), a primitive, an annotation or a setting.
type Type struct {
	ID        int64
	Name      string
	SuperType string // "jdk.jfr.Event" for event types
	// Simple types (the metadata's simpleType attribute) have one field and stand for its value:
	// jdk.types.Symbol is its string.
	Simple      bool
	Kind        Kind
	Fields      []*Field
	Settings    []*Setting
	Annotations []*Annotation

	Label, Description string
	Category           []string
	Experimental       bool

	index map[string]int
}

// Event tells whether t is an event type.
func (t *Type) Event() bool { return t.SuperType == "jdk.jfr.Event" }

// Field returns the index of the field called name, or -1.
func (t *Type) Field(name string) int {
	if i, ok := t.index[name]; ok {
		return i
	}
	return -1
}

// Field is a field of a type.
type Field struct {
	Name         string
	Type         *Type
	Array        bool // dimension 1: a count, then the elements
	ConstantPool bool // the value is a key into the constant pool of Type
	Annotations  []*Annotation

	Label, Description string
	// Timespan is the unit of a duration ("TICKS", "NANOSECONDS", "MICROSECONDS", "MILLISECONDS",
	// "SECONDS"), Timestamp the unit of a point in time ("TICKS", "MILLISECONDS_SINCE_EPOCH"), from the
	// jdk.jfr.Timespan and jdk.jfr.Timestamp annotations; empty when the field has none.
	Timespan, Timestamp string
	Unsigned            bool   // jdk.jfr.Unsigned
	ContentType         string // other annotations that say what a number is: "jdk.jfr.DataAmount" ...
	DataAmount          string // jdk.jfr.DataAmount's unit: "BYTES", "BITS"
	Percentage          bool
	Frequency           bool
	MemoryAddress       bool
}

// Setting is an event setting ("enabled", "threshold", "stackTrace").
type Setting struct {
	Name         string
	Type         *Type
	DefaultValue string
	Annotations  []*Annotation
}

// Annotation is an annotation on a type or field, with its values as the metadata spells them: one
// attribute per element, "value-0", "value-1", ... for arrays.
type Annotation struct {
	Type   *Type
	Values map[string]string
}

// Value returns the annotation's "value" element.
func (a *Annotation) Value() string { return a.Values["value"] }

// Metadata is a chunk's type system.
type Metadata struct {
	ID        int64   // the JVM's metadata generation; equal ids mean equal metadata
	Offset    int64   // file offset of the metadata event
	Types     []*Type // in the order the metadata declares them
	Events    []*Type // the event types, in declaration order
	GMTOffset int64   // milliseconds east of UTC, of the recording JVM's time zone
	DST       int64   // daylight saving milliseconds
	Locale    string

	byID map[int64]*Type
	// byName holds the first type of each name.
	byName map[string]*Type
}

// Type returns the type with the given id, or nil.
func (m *Metadata) Type(id int64) *Type { return m.byID[id] }

// TypeByName returns the type with the given name, or nil.
func (m *Metadata) TypeByName(name string) *Type { return m.byName[name] }

// element is a node of the metadata event's tree: root > metadata > class > field > annotation.
type element struct {
	name     string
	attrs    [][2]string
	children []*element
}

func (e *element) attr(name string) (string, bool) {
	for _, a := range e.attrs {
		if a[0] == name {
			return a[1], true
		}
	}
	return "", false
}

func (e *element) elements(name string) []*element {
	var out []*element
	for _, c := range e.children {
		if c.name == name {
			out = append(out, c)
		}
	}
	return out
}

// Real metadata is five levels deep; corrupt data must not recurse without bound.
const maxElementDepth = 32

// readMetadata reads the body of a metadata event, after its size and type id.
func readMetadata(in *input, eventOffset int64) (*Metadata, error) {
	in.long() // start time
	in.long() // duration
	id := in.long()
	n := in.count(1)
	if in.err != nil {
		return nil, in.err
	}
	strs := make([]string, n)
	for i := range strs {
		s, _, _, isRef := in.inlineString()
		if isRef {
			in.failf("constant-pool string in the metadata string table")
		}
		if in.err != nil {
			return nil, in.err
		}
		strs[i] = s
	}
	root := readElement(in, strs, 0)
	if in.err != nil {
		return nil, in.err
	}
	m, err := buildMetadata(root)
	if err != nil {
		return nil, err
	}
	m.ID = id
	m.Offset = eventOffset
	return m, nil
}

func readElement(in *input, strs []string, depth int) *element {
	if depth > maxElementDepth {
		in.failf("metadata nested deeper than %d", maxElementDepth)
		return nil
	}
	str := func() string {
		i := in.int()
		if in.err != nil {
			return ""
		}
		if i < 0 || int(i) >= len(strs) {
			in.failf("metadata string index %d out of range (%d strings)", i, len(strs))
			return ""
		}
		return strs[i]
	}
	e := &element{name: str()}
	na := in.count(2)
	for i := 0; i < na && in.err == nil; i++ {
		k := str()
		v := str()
		e.attrs = append(e.attrs, [2]string{k, v})
	}
	nc := in.count(3)
	for i := 0; i < nc && in.err == nil; i++ {
		if c := readElement(in, strs, depth+1); c != nil {
			e.children = append(e.children, c)
		}
	}
	return e
}

func attrInt(e *element, name string, def int64) (int64, error) {
	s, ok := e.attr(name)
	if !ok {
		return def, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("metadata: %s %s=%q is not a number", e.name, name, s)
	}
	return v, nil
}

// buildMetadata turns the element tree into types, as jdk.jfr.internal.MetadataReader does: declare
// every class, then define their fields and settings, then annotate them (annotations may name
// classes declared later).
func buildMetadata(root *element) (*Metadata, error) {
	mds := root.elements("metadata")
	if len(mds) == 0 {
		return nil, fmt.Errorf("metadata: no metadata element")
	}
	md := mds[0]
	m := &Metadata{byID: map[int64]*Type{}, byName: map[string]*Type{}}
	classes := md.elements("class")
	for _, c := range classes {
		id, err := attrInt(c, "id", -1)
		if err != nil {
			return nil, err
		}
		name, _ := c.attr("name")
		super, _ := c.attr("superType")
		_, simple := c.attr("simpleType")
		if _, dup := m.byID[id]; dup {
			return nil, fmt.Errorf("metadata: two classes with id %d", id)
		}
		t := &Type{ID: id, Name: name, SuperType: super, Simple: simple, index: map[string]int{}}
		m.byID[id] = t
		if _, ok := m.byName[name]; !ok {
			m.byName[name] = t
		}
		m.Types = append(m.Types, t)
	}
	typeOf := func(e *element, attr string) (*Type, error) {
		id, err := attrInt(e, attr, -1)
		if err != nil {
			return nil, err
		}
		t := m.byID[id]
		if t == nil {
			return nil, fmt.Errorf("metadata: %s refers to undefined class %d", e.name, id)
		}
		return t, nil
	}
	for i, c := range classes {
		t := m.Types[i]
		for _, s := range c.elements("setting") {
			st, err := typeOf(s, "class")
			if err != nil {
				return nil, err
			}
			name, _ := s.attr("name")
			def, _ := s.attr("defaultValue")
			t.Settings = append(t.Settings, &Setting{Name: name, Type: st, DefaultValue: def})
		}
		for _, f := range c.elements("field") {
			ft, err := typeOf(f, "class")
			if err != nil {
				return nil, err
			}
			name, _ := f.attr("name")
			dim, err := attrInt(f, "dimension", 0)
			if err != nil {
				return nil, err
			}
			if dim < 0 || dim > 1 {
				return nil, fmt.Errorf("metadata: field %s.%s has dimension %d", t.Name, name, dim)
			}
			_, cp := f.attr("constantPool")
			if _, dup := t.index[name]; !dup {
				t.index[name] = len(t.Fields)
			}
			t.Fields = append(t.Fields, &Field{Name: name, Type: ft, Array: dim == 1, ConstantPool: cp})
		}
	}
	for i, c := range classes {
		t := m.Types[i]
		var err error
		if t.Annotations, err = annotations(c, typeOf); err != nil {
			return nil, err
		}
		for j, s := range c.elements("setting") {
			if t.Settings[j].Annotations, err = annotations(s, typeOf); err != nil {
				return nil, err
			}
		}
		for j, f := range c.elements("field") {
			fd := t.Fields[j]
			if fd.Annotations, err = annotations(f, typeOf); err != nil {
				return nil, err
			}
			fd.interpret()
		}
		t.interpret()
	}
	for _, t := range m.Types {
		if len(t.Fields) == 0 {
			k, ok := primitiveKinds[t.Name]
			if !ok {
				t.Kind = KindStruct
				continue
			}
			t.Kind = k
		}
		if t.Event() {
			m.Events = append(m.Events, t)
		}
	}
	// As the JDK's ParserFactory, refuse a field of a type that has neither fields nor a primitive's
	// name: nothing says how to read it.
	for _, t := range m.Types {
		for _, f := range t.Fields {
			if len(f.Type.Fields) == 0 && f.Type.Kind == KindStruct && !f.ConstantPool {
				return nil, fmt.Errorf("metadata: field %s.%s has type %s, which is neither a primitive nor has fields", t.Name, f.Name, f.Type.Name)
			}
		}
		if t.Simple && len(t.Fields) != 1 {
			t.Simple = false
		}
	}
	if regions := root.elements("region"); len(regions) > 0 {
		r := regions[0]
		var err error
		if m.GMTOffset, err = attrInt(r, "gmtOffset", 1); err != nil {
			return nil, err
		}
		if m.DST, err = attrInt(r, "dst", 0); err != nil {
			return nil, err
		}
		m.Locale, _ = r.attr("locale")
	}
	return m, nil
}

func annotations(e *element, typeOf func(*element, string) (*Type, error)) ([]*Annotation, error) {
	var out []*Annotation
	for _, a := range e.elements("annotation") {
		t, err := typeOf(a, "class")
		if err != nil {
			return nil, err
		}
		an := &Annotation{Type: t, Values: map[string]string{}}
		for _, kv := range a.attrs {
			if kv[0] != "class" {
				an.Values[kv[0]] = kv[1]
			}
		}
		out = append(out, an)
	}
	return out, nil
}

func (f *Field) interpret() {
	for _, a := range f.Annotations {
		switch a.Type.Name {
		case "jdk.jfr.Label":
			f.Label = a.Value()
		case "jdk.jfr.Description":
			f.Description = a.Value()
		case "jdk.jfr.Timespan":
			f.Timespan = a.Value()
			if f.Timespan == "" {
				f.Timespan = "NANOSECONDS" // the annotation's default
			}
		case "jdk.jfr.Timestamp":
			f.Timestamp = a.Value()
			if f.Timestamp == "" {
				f.Timestamp = "MILLISECONDS_SINCE_EPOCH"
			}
		case "jdk.jfr.Unsigned":
			f.Unsigned = true
		case "jdk.jfr.DataAmount":
			f.DataAmount = a.Value()
			if f.DataAmount == "" {
				f.DataAmount = "BYTES"
			}
		case "jdk.jfr.Percentage":
			f.Percentage = true
		case "jdk.jfr.Frequency":
			f.Frequency = true
		case "jdk.jfr.MemoryAddress":
			f.MemoryAddress = true
		}
	}
}

func (t *Type) interpret() {
	for _, a := range t.Annotations {
		switch a.Type.Name {
		case "jdk.jfr.Label":
			t.Label = a.Value()
		case "jdk.jfr.Description":
			t.Description = a.Value()
		case "jdk.jfr.Experimental":
			t.Experimental = true
		case "jdk.jfr.Category":
			for i := 0; ; i++ {
				v, ok := a.Values["value-"+strconv.Itoa(i)]
				if !ok {
					break
				}
				t.Category = append(t.Category, v)
			}
		}
	}
}

// String is the type's name.
func (t *Type) String() string { return t.Name }

// CategoryPath is the category joined by "/", as `jfr metadata` groups event types.
func (t *Type) CategoryPath() string { return strings.Join(t.Category, "/") }
