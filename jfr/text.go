package jfr

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/jvmkit/jvmkit/internal/javaname"
)

// TextWriter writes events for people to read, in the shape of `jfr print`: one block per event,
// a field a line, constants shown by what identifies them (a thread by its name and id, a class by
// its name, a stack trace by its frames), times in the recording JVM's time zone, amounts of data and
// percentages with their units. The JSON writer is the one to parse. N/A is a null; a constant that
// a cut or damaged recording lost is "[lost: constant pool cut off]" (see LostConstant).
type TextWriter struct {
	w    *bufio.Writer
	r    *Recording
	opts JSONOptions
}

// NewTextWriter returns a writer of r's events to w; opts.StackDepth limits frames (0: all). Call
// Flush at the end.
func (r *Recording) NewTextWriter(w io.Writer, opts JSONOptions) *TextWriter {
	return &TextWriter{w: bufio.NewWriterSize(w, 64<<10), r: r, opts: opts}
}

// Flush writes what is buffered.
func (t *TextWriter) Flush() error { return t.w.Flush() }

// Write writes one event.
func (t *TextWriter) Write(e *Event) error {
	t.w.WriteString(e.Type.Name)
	t.object(&e.Object, 0)
	t.w.WriteString("\n\n")
	return nil
}

func (t *TextWriter) indent(n int) {
	for i := 0; i < n; i++ {
		t.w.WriteString("  ")
	}
}

func (t *TextWriter) object(o *Object, depth int) {
	t.w.WriteString(" {\n")
	for i, f := range o.Type.Fields {
		t.indent(depth + 1)
		t.w.WriteString(f.Name)
		t.w.WriteString(" = ")
		var v any
		if i < len(o.Values) {
			v = o.Values[i]
		}
		t.field(f, v, depth+1)
		t.w.WriteByte('\n')
	}
	t.indent(depth)
	t.w.WriteByte('}')
}

func (t *TextWriter) field(f *Field, v any, depth int) {
	if v == nil {
		t.w.WriteString("N/A")
		return
	}
	if a, ok := v.([]any); ok && f.Array {
		n := len(a)
		frames := isFrameType(f.Type)
		if frames && t.opts.StackDepth > 0 && n > t.opts.StackDepth {
			n = t.opts.StackDepth
		}
		t.w.WriteString("[\n")
		for i := 0; i < n; i++ {
			t.indent(depth + 1)
			t.elem(f, a[i], depth+1)
			t.w.WriteByte('\n')
		}
		if n < len(a) {
			t.indent(depth + 1)
			t.w.WriteString("...\n")
		}
		t.indent(depth)
		t.w.WriteByte(']')
		return
	}
	t.elem(f, v, depth)
}

func (t *TextWriter) elem(f *Field, v any, depth int) {
	switch x := v.(type) {
	case nil:
		t.w.WriteString("N/A")
	case *LostConstant:
		t.w.WriteString(x.String())
	case *Object:
		t.compound(x, depth)
	case string:
		t.w.WriteString(strconv.Quote(x))
	case bool:
		t.w.WriteString(strconv.FormatBool(x))
	case float32:
		t.float(f, float64(x), 32)
	case float64:
		t.float(f, x, 64)
	case uint16:
		if f.Timespan == "" && f.Timestamp == "" {
			t.w.WriteString(strconv.QuoteRune(rune(x)))
			return
		}
		t.int(f, int64(x))
	default:
		n, ok := ToInt(v, f.Unsigned)
		if !ok {
			fmt.Fprint(t.w, v)
			return
		}
		t.int(f, n)
	}
}

func (t *TextWriter) float(f *Field, v float64, bits int) {
	if f.Percentage {
		t.w.WriteString(strconv.FormatFloat(v*100, 'f', 2, 64) + "%")
		return
	}
	t.w.WriteString(strconv.FormatFloat(v, 'g', -1, bits))
}

func (t *TextWriter) int(f *Field, n int64) {
	switch {
	case f.Timespan != "":
		if n == math.MinInt64 {
			t.w.WriteString("N/A")
			return
		}
		if n == math.MaxInt64 {
			t.w.WriteString("Forever")
			return
		}
		if ns, ok := t.r.DurationNanos(f, n); ok {
			t.w.WriteString(time.Duration(ns).String())
			return
		}
	case f.Timestamp != "":
		if ns, ok := t.r.TimestampNanos(f, n); ok && n != math.MinInt64 {
			t.w.WriteString(time.Unix(0, ns).In(t.r.Zone()).Format("2006-01-02T15:04:05.000000000Z07:00"))
			return
		}
	case f.DataAmount != "" && n >= 0:
		t.w.WriteString(humanBytes(n, f.DataAmount))
		return
	case f.Unsigned && n < 0:
		t.w.WriteString(strconv.FormatUint(uint64(n), 10))
		return
	case f.MemoryAddress:
		t.w.WriteString("0x" + strconv.FormatUint(uint64(n), 16))
		return
	}
	t.w.WriteString(strconv.FormatInt(n, 10))
}

func humanBytes(n int64, unit string) string {
	name := " bytes"
	if unit == "BITS" {
		name = " bits"
	}
	v := float64(n)
	for _, u := range []string{" kB", " MB", " GB", " TB"} {
		if v < 1024 {
			break
		}
		v /= 1024
		name = u
		if unit == "BITS" {
			name = strings.Replace(u, "B", "bit", 1)
		}
	}
	if name == " bytes" || name == " bits" {
		return strconv.FormatInt(n, 10) + name
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + name
}

// struct_ prints well-known constants on one line and other objects as nested blocks.
func (t *TextWriter) compound(o *Object, depth int) {
	switch o.Type.Name {
	case "java.lang.Thread":
		id, _ := o.Int("javaThreadId")
		fmt.Fprintf(t.w, "%q (javaThreadId = %d)", ThreadName(o), id)
		return
	case "java.lang.Class":
		t.w.WriteString(classOf(o))
		return
	case "jdk.types.Method":
		t.w.WriteString(methodText(o))
		return
	case "jdk.types.StackFrame":
		line, _ := o.Int("lineNumber")
		m := methodText(o.Child("method"))
		if l, ok := o.Get("method").(*LostConstant); ok {
			m = l.String()
		}
		fmt.Fprintf(t.w, "%s line: %d", m, line)
		if ty := o.String("type"); ty != "" {
			fmt.Fprintf(t.w, " (%s)", ty)
		}
		return
	case "jdk.types.ThreadGroup", "jdk.types.Module", "jdk.types.Package", "jdk.types.ClassLoader":
		if n := o.String("name"); n != "" {
			t.w.WriteString(strconv.Quote(n))
			return
		}
	}
	t.object(o, depth)
}

func methodText(m *Object) string {
	if m == nil {
		return "N/A"
	}
	name := MethodName(m)
	if mt, err := javaname.ParseMethodDescriptor(m.String("descriptor")); err == nil {
		return name + "(" + strings.Join(mt.Params, ", ") + ")"
	}
	return name + "()"
}
