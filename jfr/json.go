package jfr

import (
	"bufio"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// JSONOptions tune the JSON writer.
type JSONOptions struct {
	// StackDepth limits the frames printed of each stack trace, as `jfr print --stack-depth` does;
	// 0 prints all.
	StackDepth int
}

// JSONWriter writes events as JSON lines: one object per event, the same object `jfr print --json`
// prints for it (without its indentation), so that a line's values equal the JDK's:
//
//	{"type":"jdk.ThreadSleep","values":{"startTime":"2025-01-02T03:04:05.123456789Z","duration":"PT0.01S",...}}
//
// Every field of the event's type is there, in the metadata's order, with constants (threads,
// classes, stack traces) expanded in full. Values follow the JDK's tool (JDK 25): timestamps as
// java.time.OffsetDateTime.toString in the recording JVM's time zone, timespans as
// java.time.Duration.toString, unsigned fields without sign, chars as strings, floats and doubles as
// Float.toString and Double.toString (20.0, 1.0E-7), NaN and infinities as null.
//
// A recording cut short (or with a damaged checkpoint) loses the constants that the JVM had not yet
// written. Such a reference is not null: its value is {"lost":"constant pool cut off" (or
// "constant pool damaged"),"type":"jdk.types.StackTrace","key":123}, and the event's line has a
// "lost" member after "values", the number of such references in it (nested ones included). A null
// is a null as the JDK's tool prints it.
type JSONWriter struct {
	w    *bufio.Writer
	conv timeConverter
	opts JSONOptions
	buf  []byte

	// Renderings of constants, which events share: each is rendered once. Stack traces are left
	// out when big (they are many and rarely shared by many events); their frames' methods are in.
	cache      map[*Object][]byte
	cacheBytes int
}

const (
	maxCachedRendering = 16 << 10
	maxCacheBytes      = 512 << 20
)

// NewJSONWriter returns a writer of r's events to w. Call Flush at the end.
func (r *Recording) NewJSONWriter(w io.Writer, opts JSONOptions) *JSONWriter {
	return &JSONWriter{w: bufio.NewWriterSize(w, 256<<10), conv: r.conv, opts: opts, cache: map[*Object][]byte{}}
}

// Write writes one event as a line.
func (j *JSONWriter) Write(e *Event) error {
	b := j.buf[:0]
	b = append(b, `{"type":`...)
	b = appendJSONString(b, e.Type.Name)
	b = append(b, `,"values":`...)
	b = j.appendFields(b, &e.Object)
	if e.Lost > 0 {
		b = append(b, `,"lost":`...)
		b = strconv.AppendInt(b, int64(e.Lost), 10)
	}
	b = append(b, "}\n"...)
	j.buf = b
	_, err := j.w.Write(b)
	return err
}

// Flush writes what is buffered.
func (j *JSONWriter) Flush() error { return j.w.Flush() }

func (j *JSONWriter) appendFields(b []byte, o *Object) []byte {
	b = append(b, '{')
	for i, f := range o.Type.Fields {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, f.Name)
		b = append(b, ':')
		var v any
		if i < len(o.Values) {
			v = o.Values[i]
		}
		b = j.appendField(b, f, v)
	}
	return append(b, '}')
}

func isFrameType(t *Type) bool {
	return t.Name == "jdk.types.StackFrame" || t.Name == "com.oracle.jfr.types.StackFrame"
}

func (j *JSONWriter) appendField(b []byte, f *Field, v any) []byte {
	if v == nil {
		return append(b, "null"...)
	}
	if f.Array {
		a, ok := v.([]any)
		if !ok {
			return append(b, "null"...)
		}
		n := len(a)
		if j.opts.StackDepth > 0 && n > j.opts.StackDepth && isFrameType(f.Type) {
			n = j.opts.StackDepth
		}
		b = append(b, '[')
		for i := 0; i < n; i++ {
			if i > 0 {
				b = append(b, ',')
			}
			b = j.appendElem(b, f, a[i])
		}
		return append(b, ']')
	}
	return j.appendElem(b, f, v)
}

func (j *JSONWriter) appendElem(b []byte, f *Field, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
	case *LostConstant:
		return appendLost(b, x)
	case *Object:
		if !f.ConstantPool {
			return j.appendFields(b, x)
		}
		if r, ok := j.cache[x]; ok {
			return append(b, r...)
		}
		start := len(b)
		b = j.appendFields(b, x)
		if n := len(b) - start; n <= maxCachedRendering && j.cacheBytes+n <= maxCacheBytes {
			j.cache[x] = append([]byte(nil), b[start:]...)
			j.cacheBytes += n
		}
		return b
	case string:
		return appendJSONString(b, x)
	case bool:
		return strconv.AppendBool(b, x)
	case float32:
		f64 := float64(x)
		if math.IsNaN(f64) || math.IsInf(f64, 0) {
			return append(b, "null"...)
		}
		return appendJSONFloat(b, f64, 32)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return append(b, "null"...)
		}
		return appendJSONFloat(b, x, 64)
	case uint16:
		if f.Timespan == "" && f.Timestamp == "" {
			r := rune(x)
			if !utf8.ValidRune(r) {
				r = utf8.RuneError
			}
			return appendJSONString(b, string(r))
		}
	}
	n, unsigned, ok := j.number(f, v)
	if !ok {
		return append(b, "null"...)
	}
	switch {
	case f.Timespan != "":
		if d, ok := j.conv.duration(f.Timespan, n); ok {
			b = append(b, '"')
			b = appendJavaDuration(b, d)
			return append(b, '"')
		}
	case f.Timestamp != "":
		if s, ok := j.timestamp(b, f.Timestamp, n); ok {
			return s
		}
	}
	if unsigned {
		return strconv.AppendUint(b, uint64(n), 10)
	}
	return strconv.AppendInt(b, n, 10)
}

// appendLost writes a constant a damaged chunk lost, which `jfr print` cannot show (it stops at the
// damage): an object that no JFR type has, {"lost":"constant pool cut off","type":...,"key":...}.
func appendLost(b []byte, l *LostConstant) []byte {
	b = append(b, `{"lost":`...)
	if l.Cut {
		b = append(b, `"constant pool cut off"`...)
	} else {
		b = append(b, `"constant pool damaged"`...)
	}
	b = append(b, `,"type":`...)
	b = appendJSONString(b, l.Type.Name)
	b = append(b, `,"key":`...)
	b = strconv.AppendInt(b, l.Key, 10)
	return append(b, '}')
}

// number widens an integer as RecordedObject.getLong and the JDK tool's unsigned handling do.
func (j *JSONWriter) number(f *Field, v any) (n int64, unsigned bool, ok bool) {
	u := f.Unsigned
	switch x := v.(type) {
	case int64:
		return x, u && f.Timespan == "" && f.Timestamp == "", true
	case int32:
		if u {
			return int64(uint32(x)), false, true
		}
		return int64(x), false, true
	case int16:
		if u {
			return int64(uint16(x)), false, true
		}
		return int64(x), false, true
	case int8:
		if u {
			if f.Timespan != "" || f.Timestamp != "" {
				// RecordedObject.getDuration and getInstant widen an unsigned byte through
				// Short.toUnsignedLong (sign-extended to 16 bits first).
				return int64(uint16(int16(x))), false, true
			}
			return int64(uint8(x)), false, true
		}
		return int64(x), false, true
	case uint16:
		return int64(x), false, true
	}
	return 0, false, false
}

func (j *JSONWriter) timestamp(b []byte, unit string, n int64) ([]byte, bool) {
	if n == math.MinInt64 {
		// OffsetDateTime.MIN
		b = append(b, `"-999999999-01-01T00:00+18:00"`...)
		return b, true
	}
	var sec int64
	var nano int32
	switch unit {
	case "TICKS":
		ns := j.conv.timestamp(n)
		sec, nano = floorDiv(ns, 1e9), int32(floorMod(ns, 1e9))
	case "MILLISECONDS_SINCE_EPOCH":
		sec, nano = floorDiv(n, 1000), int32(floorMod(n, 1000)*1e6)
	default:
		return b, false
	}
	b = append(b, '"')
	b = appendOffsetDateTime(b, sec, nano, j.conv.zone)
	return append(b, '"'), true
}

// appendJSONFloat appends f as Java's Double.toString (bits 64) or Float.toString (bits 32) writes
// it, which is what `jfr print --json` prints: "20.0", "0.001", "1.0E7", "9.999E-4", "-0.0". The
// digits are the shortest that read back as f (Java's since JDK 19, Go's too), but never fewer than
// two: where one digit would do, Java takes the two-digit decimal closest to f (4.9E-324, not 5E-324).
func appendJSONFloat(b []byte, f float64, bits int) []byte {
	if f == 0 {
		if math.Signbit(f) {
			return append(b, "-0.0"...)
		}
		return append(b, "0.0"...)
	}
	if f < 0 {
		b = append(b, '-')
		f = -f
	}
	var buf [32]byte
	e := strconv.AppendFloat(buf[:0], f, 'e', -1, bits) // d.ddde±XX
	if e[1] != '.' {
		e = strconv.AppendFloat(buf[:0], f, 'e', 1, bits)
	}
	mant, exp, _ := strings.Cut(string(e), "e")
	digits := strings.TrimRight(strings.Replace(mant, ".", "", 1), "0")
	if digits == "" {
		digits = "0"
	}
	x, _ := strconv.Atoi(exp) // f = d.ddd × 10^x
	if f >= 1e-3 && f < 1e7 {
		switch {
		case x < 0:
			b = append(b, "0."...)
			for i := -1; i > x; i-- {
				b = append(b, '0')
			}
			return append(b, digits...)
		case len(digits) > x+1:
			b = append(b, digits[:x+1]...)
			b = append(b, '.')
			return append(b, digits[x+1:]...)
		default:
			b = append(b, digits...)
			for i := len(digits); i < x+1; i++ {
				b = append(b, '0')
			}
			return append(b, ".0"...)
		}
	}
	b = append(b, digits[0], '.')
	if len(digits) > 1 {
		b = append(b, digits[1:]...)
	} else {
		b = append(b, '0')
	}
	b = append(b, 'E')
	return strconv.AppendInt(b, int64(x), 10)
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s quoted as a JSON string. s is valid UTF-8 (the reader makes it so).
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"':
			b = append(b, '\\', '"')
		case '\\':
			b = append(b, '\\', '\\')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// AppendJSON appends the JSON of a value of field f, as Write renders it inside an event.
func (j *JSONWriter) AppendJSON(b []byte, f *Field, v any) []byte { return j.appendField(b, f, v) }
