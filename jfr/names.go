package jfr

import (
	"strings"

	"github.com/jvmkit/jvmkit/internal/javaname"
)

// ClassName returns the Java name of a JFR class name, the same that jvmkit's profiler and perf maps
// print: "java/lang/String" is "java.lang.String", "[B" is "byte[]". JFR adds its own suffixes to
// the names of hidden and anonymous classes, which this undoes:
//
//	JDK 15–20 "Foo$$Lambda$14+0x0000000800c03000/1234567" (hidden, internal name + "/" + hash)
//	JDK 21+   "Foo$$Lambda/0x0000000800c03000"            (hidden, Java's name)
//	JDK 11    "Foo$$Lambda$72/1881901842"                 (VM-anonymous: Class.getName, kept)
//
// The first two become "Foo$$Lambda$14/0x0000000800c03000" and "Foo$$Lambda/0x0000000800c03000".
func ClassName(name string) string {
	base, suffix := name, ""
	if i := strings.LastIndexByte(base, '/'); i >= 0 && isDigits(base[i+1:]) {
		base, suffix = base[:i], base[i:]
		if j := strings.LastIndexByte(base, '+'); j >= 0 && isHexAddr(base[j+1:]) {
			suffix = "" // JDK 15-20 hidden class: the hash is JFR's, not part of the name
		}
	}
	if i := strings.LastIndexByte(base, '/'); i >= 0 && isHexAddr(base[i+1:]) {
		base = base[:i] + "+" + base[i+1:] // JDK 21+: back to the JVM's spelling, for the rule below
	}
	return javaname.TypeName(base) + suffix
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func isHexAddr(s string) bool {
	h, ok := strings.CutPrefix(s, "0x")
	if !ok || h == "" {
		return false
	}
	return strings.Trim(h, "0123456789abcdefABCDEF") == ""
}

// classOf returns the Java name of a java.lang.Class constant, or "" for nil.
func classOf(c *Object) string {
	if c == nil {
		return ""
	}
	return ClassName(c.String("name"))
}

// MethodName returns "pkg.Class.method" for a jdk.types.Method constant, as jvmkit's profiler names
// Java frames; "" for nil.
func MethodName(m *Object) string {
	if m == nil {
		return ""
	}
	cls := classOf(m.Child("type"))
	name := m.String("name")
	if cls == "" {
		return name
	}
	return cls + "." + name
}

// Frame is a stack frame of a stack trace.
type Frame struct {
	Method string // "pkg.Class.method"; "" when the recording lacks it
	Line   int    // -1 when unknown
	BCI    int    // bytecode index, -1 when unknown
	// Type is the frame's JFR type: "Interpreted", "JIT compiled", "Inlined", "Native", and on newer JDKs
	// "C1 compiled", "C2 compiled".
	Type       string
	Descriptor string // "(Ljava/lang/String;)V"
	// Lost is the frame's method when a damaged recording lost it (Method is then "").
	Lost *LostConstant
}

// StackTrace is a decoded stack trace: frames leaf first, as JFR records them.
type StackTrace struct {
	Frames []Frame
	// Truncated says that the JVM cut the stack at its stack depth (-XX:FlightRecorderOptions
	// stackdepth, 64 by default): the root is missing.
	Truncated bool
}

// Stack decodes a jdk.types.StackTrace constant; nil gives nil.
func Stack(st *Object) *StackTrace {
	if st == nil {
		return nil
	}
	s := &StackTrace{Truncated: st.Bool("truncated")}
	for _, v := range st.Array("frames") {
		f, _ := v.(*Object)
		if f == nil {
			continue
		}
		line, ok := f.Int("lineNumber")
		if !ok {
			line = -1
		}
		bci, ok := f.Int("bytecodeIndex")
		if !ok {
			bci = -1
		}
		m := f.Child("method")
		fr := Frame{Method: MethodName(m), Line: int(line), BCI: int(bci), Type: f.String("type")}
		fr.Lost, _ = f.Get("method").(*LostConstant)
		if m != nil {
			fr.Descriptor = m.String("descriptor")
		}
		s.Frames = append(s.Frames, fr)
	}
	return s
}

// Label is the frame's name in folded stacks and flame graphs, as `jvmkit profile` writes it:
// "pkg.Class.method" with flamegraph.pl's annotations, "_[j]" for JIT-compiled code and "_[i]" for a
// method inlined into the frame below it; interpreted and native frames have none. ";" becomes ":".
// A method a damaged recording lost is "[method lost: recording cut off]".
func (f Frame) Label() string {
	name := f.Method
	switch {
	case name == "" && f.Lost != nil:
		name = lostFrame("method", f.Lost)
	case name == "":
		name = "[unknown]"
	}
	name = strings.ReplaceAll(name, ";", ":")
	switch {
	case f.Type == "Inlined":
		return name + "_[i]"
	case strings.Contains(f.Type, "compiled"):
		return name + "_[j]"
	}
	return name
}

// ThreadName returns a java.lang.Thread constant's Java name, else its OS name.
func ThreadName(t *Object) string {
	if t == nil {
		return ""
	}
	if n := t.String("javaName"); n != "" {
		return n
	}
	return t.String("osName")
}
