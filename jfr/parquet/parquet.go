package parquet

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	pq "github.com/parquet-go/parquet-go"

	"github.com/jvmkit/jvmkit/internal/rootfs"
	"github.com/jvmkit/jvmkit/jfr"
)

// maxDepth bounds how deep constants and structs are expanded into nested columns.
const maxDepth = 4

// column converts one field of the event type.
type column struct {
	field *jfr.Field
	index int
	conv  func(any) any
}

type exporter struct {
	r    *jfr.Recording
	json *jfr.JSONWriter
	buf  []byte
}

// Export writes one Parquet file per event type of r into dir, which must exist, and returns their
// paths. Each file is written beside its name and renamed over it when complete (internal/rootfs
// WriteOutput): a link planted at the name is never followed. A damaged recording's tables hold the
// events before the damage, and the damage is returned with them.
func Export(r *jfr.Recording, dir string) ([]string, error) {
	x := &exporter{r: r, json: r.NewJSONWriter(io.Discard, jfr.JSONOptions{})}
	// The event types with events, by name: a type's later chunks may carry new metadata, the same
	// type id and fields.
	types := map[string]*jfr.Type{}
	var names []string
	for _, c := range r.Chunks {
		if c.Metadata == nil {
			continue
		}
		for id, tc := range c.Counts() {
			t := c.Metadata.Type(id)
			if t == nil || !t.Event() || tc.Count == 0 {
				continue
			}
			if _, ok := types[t.Name]; !ok {
				names = append(names, t.Name)
			}
			types[t.Name] = t
		}
	}
	slices.Sort(names)
	var paths []string
	var damage error
	for _, name := range names {
		t := types[name]
		path := filepath.Join(dir, name+".parquet")
		if filepath.Base(path) != name+".parquet" || name[0] == '.' {
			return paths, fmt.Errorf("event type name %q cannot be a file name", name)
		}
		rows := 0
		err := rootfs.WriteOutput(path, 0o644, func(w io.Writer) error {
			var err error
			rows, err = x.table(w, t, &damage)
			return err
		})
		if err != nil {
			return paths, fmt.Errorf("write %s: %w", path, err)
		}
		if rows > 0 {
			paths = append(paths, path)
		} else {
			_ = os.Remove(path) // the events of the type all lie after the damage
		}
	}
	return paths, damage
}

// table writes the events of type t as one Parquet file, in the order jfr print has them.
func (x *exporter) table(w io.Writer, t *jfr.Type, damage *error) (int, error) {
	group := pq.Group{}
	var cols []column
	for i, f := range t.Fields {
		if _, dup := group[f.Name]; dup {
			continue
		}
		node, conv := x.field(f, 0, []*jfr.Type{t})
		group[f.Name] = node
		cols = append(cols, column{field: f, index: i, conv: conv})
	}
	pw := pq.NewGenericWriter[map[string]any](w, pq.NewSchema(t.Name, group), pq.Compression(&pq.Zstd))
	batch := make([]map[string]any, 0, 1024)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		_, err := pw.Write(batch)
		batch = batch[:0]
		return err
	}
	n := 0
	for e, err := range x.r.Events(jfr.EventOptions{Types: func(et *jfr.Type) bool { return et.Name == t.Name }, Ordered: true}) {
		if err != nil {
			*damage = err
			break
		}
		row := make(map[string]any, len(cols))
		for _, c := range cols {
			var v any
			if c.index < len(e.Values) && e.Type.Fields[c.index] == c.field {
				v = e.Values[c.index]
			} else if i := e.Type.Field(c.field.Name); i >= 0 {
				v = e.Values[i] // an event of another chunk's metadata
			}
			row[c.field.Name] = c.conv(v)
		}
		batch = append(batch, row)
		n++
		if len(batch) == cap(batch) {
			if err := flush(); err != nil {
				return n, err
			}
		}
	}
	if err := flush(); err != nil {
		return n, err
	}
	return n, pw.Close()
}

// field returns the column of a field and the conversion of its values.
func (x *exporter) field(f *jfr.Field, depth int, path []*jfr.Type) (pq.Node, func(any) any) {
	node, elemConv := x.elem(f, depth, path)
	conv := func(v any) any { return some(elemConv(v)) }
	if !f.Array {
		return node, conv
	}
	return pq.Optional(pq.List(node)), func(v any) any {
		a, ok := v.([]any)
		if !ok {
			return nil
		}
		out := make([]any, len(a))
		for i, e := range a {
			out[i] = conv(e)
		}
		return out
	}
}

func ident(v any) any { return v }

// some gives a scalar that is there as a pointer to it: parquet-go writes the zero value of an optional
// column (false, 0, "", the zero time) as null unless it comes through a pointer, and null is for
// what JFR has as null. Groups (maps), lists and nil pass as they are.
func some(v any) any {
	switch x := v.(type) {
	case bool:
		return &x
	case int8:
		return &x
	case int16:
		return &x
	case int32:
		return &x
	case int64:
		return &x
	case uint8:
		return &x
	case uint16:
		return &x
	case uint32:
		return &x
	case uint64:
		return &x
	case float32:
		return &x
	case float64:
		return &x
	case string:
		return &x
	case time.Time:
		return &x
	}
	return v
}

// elem is the column of one value of field f (an array's element).
func (x *exporter) elem(f *jfr.Field, depth int, path []*jfr.Type) (pq.Node, func(any) any) {
	t := f.Type
	if t.Simple && len(t.Fields) == 1 {
		inner := *t.Fields[0]
		inner.Name, inner.Array = f.Name, false
		inner.Timespan, inner.Timestamp, inner.Unsigned = cmp.Or(f.Timespan, inner.Timespan), cmp.Or(f.Timestamp, inner.Timestamp), f.Unsigned || inner.Unsigned
		return x.elem(&inner, depth, path)
	}
	switch t.Kind {
	case jfr.KindBoolean:
		return pq.Optional(pq.Leaf(pq.BooleanType)), ident
	case jfr.KindFloat:
		return pq.Optional(pq.Leaf(pq.FloatType)), ident
	case jfr.KindDouble:
		return pq.Optional(pq.Leaf(pq.DoubleType)), ident
	case jfr.KindString:
		return pq.Optional(pq.String()), ident
	case jfr.KindChar:
		return pq.Optional(pq.String()), func(v any) any {
			if c, ok := v.(uint16); ok {
				return string(rune(c))
			}
			return nil
		}
	case jfr.KindByte, jfr.KindShort, jfr.KindInt, jfr.KindLong:
		return x.number(f)
	}
	switch t.Name {
	case "java.lang.Class":
		return pq.Optional(pq.String()), func(v any) any { return nonEmpty(jfr.ClassName(obj(v).String("name"))) }
	case "jdk.types.Method":
		return pq.Optional(pq.String()), func(v any) any { return nonEmpty(jfr.MethodName(obj(v))) }
	case "jdk.types.ClassLoader", "jdk.types.Module", "jdk.types.Package", "jdk.types.ThreadGroup":
		return pq.Optional(pq.String()), func(v any) any {
			o := obj(v)
			if o == nil {
				return nil
			}
			if n := o.String("name"); n != "" {
				return n
			}
			return nonEmpty(jfr.ClassName(o.Child("type").String("name")))
		}
	case "jdk.types.StackTrace":
		return stackNode(), stackRow
	}
	if depth >= maxDepth || slices.Contains(path, t) {
		// Deeper than a table is worth, or a type inside itself: its JSON.
		return pq.Optional(pq.String()), func(v any) any {
			if v == nil {
				return nil
			}
			x.buf = x.json.AppendJSON(x.buf[:0], &jfr.Field{Name: f.Name, Type: t, ConstantPool: f.ConstantPool}, v)
			return string(x.buf)
		}
	}
	group := pq.Group{}
	type sub struct {
		name  string
		index int
		conv  func(any) any
	}
	var subs []sub
	for i, sf := range t.Fields {
		if _, dup := group[sf.Name]; dup {
			continue
		}
		node, conv := x.field(sf, depth+1, append(path, t))
		group[sf.Name] = node
		subs = append(subs, sub{sf.Name, i, conv})
	}
	return pq.Optional(group), func(v any) any {
		o := obj(v)
		if o == nil {
			return nil
		}
		m := make(map[string]any, len(subs))
		for _, s := range subs {
			var sv any
			if s.index < len(o.Values) {
				sv = o.Values[s.index]
			}
			m[s.name] = s.conv(sv)
		}
		return m
	}
}

func (x *exporter) number(f *jfr.Field) (pq.Node, func(any) any) {
	bits := map[jfr.Kind]int{jfr.KindByte: 8, jfr.KindShort: 16, jfr.KindInt: 32, jfr.KindLong: 64}[f.Type.Kind]
	switch {
	case f.Timestamp != "":
		return pq.Optional(pq.Timestamp(pq.Nanosecond)), func(v any) any {
			n, ok := jfr.ToInt(v, f.Unsigned)
			if !ok {
				return nil
			}
			ns, ok := x.r.TimestampNanos(f, n)
			if !ok {
				return nil
			}
			return time.Unix(0, ns).UTC()
		}
	case f.Timespan != "":
		return pq.Optional(pq.Int(64)), func(v any) any {
			n, ok := jfr.ToInt(v, f.Unsigned)
			if !ok {
				return nil
			}
			ns, ok := x.r.DurationNanos(f, n)
			if !ok {
				return nil
			}
			return ns
		}
	case f.Unsigned:
		return pq.Optional(pq.Uint(bits)), func(v any) any {
			n, ok := jfr.ToInt(v, true)
			if !ok {
				return nil
			}
			switch bits {
			case 8:
				return uint8(n)
			case 16:
				return uint16(n)
			case 32:
				return uint32(n)
			}
			return uint64(n)
		}
	}
	return pq.Optional(pq.Int(bits)), func(v any) any {
		switch n := v.(type) {
		case int8, int16, int32, int64:
			return n
		}
		return nil
	}
}

func obj(v any) *jfr.Object {
	o, _ := v.(*jfr.Object)
	return o
}

func nonEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func stackNode() pq.Node {
	frame := pq.Group{
		"method":        pq.Optional(pq.String()),
		"descriptor":    pq.Optional(pq.String()),
		"lineNumber":    pq.Optional(pq.Int(32)),
		"bytecodeIndex": pq.Optional(pq.Int(32)),
		"type":          pq.Optional(pq.String()),
	}
	return pq.Optional(pq.Group{
		"truncated": pq.Optional(pq.Leaf(pq.BooleanType)),
		"frames":    pq.Optional(pq.List(pq.Optional(frame))),
	})
}

func stackRow(v any) any {
	st := jfr.Stack(obj(v))
	if st == nil {
		return nil
	}
	frames := make([]any, len(st.Frames))
	for i, f := range st.Frames {
		frames[i] = map[string]any{
			"method":        some(nonEmpty(f.Method)),
			"descriptor":    some(nonEmpty(f.Descriptor)),
			"lineNumber":    some(int32(f.Line)),
			"bytecodeIndex": some(int32(f.BCI)),
			"type":          some(nonEmpty(f.Type)),
		}
	}
	return map[string]any{"truncated": some(st.Truncated), "frames": frames}
}
