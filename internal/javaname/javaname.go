package javaname

import (
	"fmt"
	"strings"
)

// Options choose what Name prints besides "pkg.Class.method".
type Options struct {
	// Params appends the parameter types: "java.lang.String.indexOf(int, int)".
	Params bool
	// Return prefixes the return type: "int java.lang.String.indexOf". With Params this is HotSpot's
	// Method::external_name, the name jcmd Compiler.perfmap writes, so that names from USDT and from a
	// Compiler.perfmap snapshot match.
	Return bool
}

// MethodType is a parsed method descriptor, with Java type names: "int", "java.lang.Object[]".
type MethodType struct {
	Params []string
	Return string
}

// ParseMethodDescriptor parses a JVM method descriptor (JVMS §4.3.3) such as "(I[Ljava/lang/Object;)V".
func ParseMethodDescriptor(desc string) (MethodType, error) {
	var mt MethodType
	if !strings.HasPrefix(desc, "(") {
		return mt, fmt.Errorf("method descriptor %q does not start with '('", desc)
	}
	s := desc[1:]
	for {
		if s == "" {
			return mt, fmt.Errorf("method descriptor %q: no ')'", desc)
		}
		if s[0] == ')' {
			s = s[1:]
			break
		}
		t, rest, err := fieldType(s)
		if err != nil {
			return mt, fmt.Errorf("method descriptor %q: %w", desc, err)
		}
		mt.Params = append(mt.Params, t)
		s = rest
	}
	if s == "V" {
		mt.Return = "void"
		return mt, nil
	}
	t, rest, err := fieldType(s)
	if err != nil {
		return mt, fmt.Errorf("method descriptor %q: return type: %w", desc, err)
	}
	if rest != "" {
		return mt, fmt.Errorf("method descriptor %q: %q after the return type", desc, rest)
	}
	mt.Return = t
	return mt, nil
}

// maxDims is the JVM's limit on array dimensions (JVMS §4.3.2).
const maxDims = 255

// fieldType reads one field descriptor from the start of s.
func fieldType(s string) (typ, rest string, err error) {
	dims := 0
	for dims < len(s) && s[dims] == '[' {
		dims++
	}
	if dims > maxDims {
		return "", "", fmt.Errorf("%d array dimensions (at most %d)", dims, maxDims)
	}
	s = s[dims:]
	if s == "" {
		return "", "", fmt.Errorf("type expected")
	}
	var base string
	switch s[0] {
	case 'B':
		base = "byte"
	case 'C':
		base = "char"
	case 'D':
		base = "double"
	case 'F':
		base = "float"
	case 'I':
		base = "int"
	case 'J':
		base = "long"
	case 'S':
		base = "short"
	case 'Z':
		base = "boolean"
	case 'L':
		i := strings.IndexByte(s, ';')
		if i < 0 {
			return "", "", fmt.Errorf("class name %q without ';'", s)
		}
		if i == 1 || strings.ContainsAny(s[1:i], ".[()") {
			return "", "", fmt.Errorf("bad class name %q", s[1:i])
		}
		// An array of hidden classes is named by its element's name ("[LFoo$$Lambda+0x…;").
		base = ClassName(s[1:i])
		s = s[i:]
	default:
		return "", "", fmt.Errorf("unknown type %q", s[0])
	}
	return base + strings.Repeat("[]", dims), s[1:], nil
}

// ClassName turns a JVM-internal class name ("java/lang/String") into the Java form
// ("java.lang.String"). A hidden class ("Burn$$Lambda+0x0000000801001234", JDK 15+) gets the name
// Class.getName gives it ("Burn$$Lambda/0x0000000801001234"), as HotSpot's Klass::external_name does
// (it replaces the last '+'; we do when a hexadecimal address follows it).
func ClassName(class string) string {
	c := strings.ReplaceAll(class, "/", ".")
	if i := strings.LastIndexByte(c, '+'); i >= 0 && isHexAddr(c[i+1:]) {
		c = c[:i] + "/" + c[i+1:]
	}
	return c
}

func isHexAddr(s string) bool {
	if len(s) < 3 || s[0] != '0' || s[1] != 'x' {
		return false
	}
	for i := 2; i < len(s); i++ {
		if !isHex(s[i]) {
			return false
		}
	}
	return true
}

// Name formats a method as the JVM names it internally (class "java/lang/String", method
// "indexOf", signature "(II)I", as hotspot:compiled__method__load passes them) the way Java does:
// "java.lang.String.indexOf", with opts adding parameter and return types. It never fails: with a
// signature that is not a method descriptor (cut short by a probe's string limit, say), the
// signature is appended as it is when opts asks for types.
func Name(class, method, signature string, opts Options) string {
	var b strings.Builder
	name := ClassName(class)
	if !opts.Params && !opts.Return {
		b.Grow(len(name) + 1 + len(method))
		b.WriteString(name)
		b.WriteByte('.')
		b.WriteString(method)
		return b.String()
	}
	mt, err := ParseMethodDescriptor(signature)
	if err != nil {
		return name + "." + method + signature
	}
	if opts.Return {
		b.WriteString(mt.Return)
		b.WriteByte(' ')
	}
	b.WriteString(name)
	b.WriteByte('.')
	b.WriteString(method)
	if opts.Params {
		b.WriteByte('(')
		for i, p := range mt.Params {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(p)
		}
		b.WriteByte(')')
	}
	return b.String()
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// TypeName turns a field descriptor of an array or a class ("[B", "[Ljava/lang/Object;",
// "Ljava/lang/String;") into its Java name ("byte[]", "java.lang.Object[]", "java.lang.String"); any other
// string is a class name and goes through ClassName. JFR and the JVM name array classes by descriptor
// and other classes by internal name; JVMTI's GetClassSignature gives descriptors of both (a class name
// cannot hold ';', so "L...;" is always a descriptor).
func TypeName(s string) string {
	if strings.HasPrefix(s, "[") || strings.HasPrefix(s, "L") && strings.HasSuffix(s, ";") {
		if t, rest, err := fieldType(s); err == nil && rest == "" {
			return t
		}
	}
	return ClassName(s)
}

// Qualified returns the class and method of an external method name ("int java.lang.String.indexOf(int,
// int)", as Compiler.perfmap and Method::external_name write it) without its types:
// "java.lang.String.indexOf". Stack frames and folded stacks name methods this way. A name without
// types is returned as it is.
func Qualified(external string) string {
	if i := strings.IndexByte(external, '('); i >= 0 {
		external = external[:i]
	}
	if i := strings.LastIndexByte(external, ' '); i >= 0 {
		external = external[i+1:]
	}
	return external
}
