package parquet

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	pq "github.com/parquet-go/parquet-go"

	"github.com/jvmkit/jvmkit/jfr"
)

// maxDepth bounds how deep constants and structs are expanded into nested columns.
const maxDepth = 4

// table is one event type's file being written.
type table struct {
	typ    *jfr.Type
	cols   []column
	tmp    string
	path   string
	file   *os.File
	w      *pq.GenericWriter[map[string]any]
	rows   []map[string]any
	events int
}

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
// paths. A file is written under a temporary name and renamed into place when complete; no existing
// file or link is written through.
func Export(r *jfr.Recording, dir string) ([]string, error) {
	x := &exporter{r: r, json: r.NewJSONWriter(nilWriter{}, jfr.JSONOptions{})}
	tables := map[string]*table{}
	var order []*table
	fail := func(err error) ([]string, error) {
		for _, t := range order {
			if t.file != nil {
				t.file.Close()
				_ = os.Remove(t.tmp)
			}
		}
		return nil, err
	}
	var readErr error
	for e, err := range r.Events(jfr.EventOptions{Ordered: true}) {
		if err != nil {
			readErr = err
			break
		}
		t := tables[e.Type.Name]
		if t == nil {
			var err error
			if t, err = x.newTable(e.Type, dir); err != nil {
				return fail(err)
			}
			tables[e.Type.Name] = t
			order = append(order, t)
		}
		row := make(map[string]any, len(t.cols))
		for _, c := range t.cols {
			var v any
			if c.index < len(e.Values) {
				v = e.Values[c.index]
			}
			row[c.field.Name] = c.conv(v)
		}
		t.rows = append(t.rows, row)
		t.events++
		if len(t.rows) == 1024 {
			if err := t.flush(); err != nil {
				return fail(err)
			}
		}
	}
	var paths []string
	for _, t := range order {
		if err := t.flush(); err != nil {
			return fail(err)
		}
		err := t.w.Close()
		if cerr := t.file.Close(); err == nil {
			err = cerr
		}
		t.file = nil
		if err == nil {
			err = os.Rename(t.tmp, t.path)
		}
		if err != nil {
			_ = os.Remove(t.tmp)
			return fail(fmt.Errorf("write %s: %w", t.path, err))
		}
		paths = append(paths, t.path)
	}
	slices.Sort(paths)
	return paths, readErr
}

type nilWriter struct{}

func (nilWriter) Write(p []byte) (int, error) { return len(p), nil }

func (t *table) flush() error {
	if len(t.rows) == 0 {
		return nil
	}
	if _, err := t.w.Write(t.rows); err != nil {
		return fmt.Errorf("write %s: %w", t.path, err)
	}
	t.rows = t.rows[:0]
	return nil
}

func (x *exporter) newTable(typ *jfr.Type, dir string) (*table, error) {
	t := &table{typ: typ, path: filepath.Join(dir, typ.Name+".parquet")}
	if filepath.Base(t.path) != typ.Name+".parquet" || typ.Name == "" || typ.Name[0] == '.' {
		return nil, fmt.Errorf("event type name %q cannot be a file name", typ.Name)
	}
	group := pq.Group{}
	for i, f := range typ.Fields {
		if _, dup := group[f.Name]; dup {
			continue
		}
		node, conv := x.field(f, 0, []*jfr.Type{typ})
		group[f.Name] = node
		t.cols = append(t.cols, column{field: f, index: i, conv: conv})
	}
	for {
		t.tmp = filepath.Join(dir, "."+typ.Name+".parquet."+strconv.FormatUint(rand.Uint64(), 36))
		f, err := os.OpenFile(t.tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		t.file = f
		break
	}
	t.w = pq.NewGenericWriter[map[string]any](t.file, pq.NewSchema(typ.Name, group), pq.Compression(&pq.Zstd))
	return t, nil
}

// field returns the column of a field and the conversion of its values.
func (x *exporter) field(f *jfr.Field, depth int, path []*jfr.Type) (pq.Node, func(any) any) {
	node, conv := x.elem(f, depth, path)
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
			n, ok := toInt(v, f.Unsigned)
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
			n, ok := toInt(v, f.Unsigned)
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
			n, ok := toInt(v, true)
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

func toInt(v any, unsigned bool) (int64, bool) {
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
			"method":        nonEmpty(f.Method),
			"descriptor":    nonEmpty(f.Descriptor),
			"lineNumber":    int32(f.Line),
			"bytecodeIndex": int32(f.BCI),
			"type":          nonEmpty(f.Type),
		}
	}
	return map[string]any{"truncated": st.Truncated, "frames": frames}
}
