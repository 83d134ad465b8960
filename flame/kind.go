package flame

import (
	"fmt"
	"hash/fnv"
	"regexp"
	"strings"
)

// kind is what a frame is, for its colour.
type kind int

const (
	kindNative  kind = iota // C and everything unrecognised
	kindCpp                 // C++ ("::" without Java's ":::")
	kindJava                // JIT-compiled or Java-named
	kindInlined             // a method inlined into the frame below it
	kindKernel              // kernel
	kindOther               // the root and merged narrow frames
)

var kindNames = [...]string{
	kindNative:  "native",
	kindCpp:     "C++",
	kindJava:    "Java",
	kindInlined: "Java, inlined",
	kindKernel:  "kernel",
	kindOther:   "",
}

var (
	// Java package prefixes, dotted (JDK perf map, jstack) or slashed (perf-map-agent, after
	// stackcollapse-perf.pl dropped the "L" of "Lpkg/Class;").
	javaPkgRE = regexp.MustCompile(`^L?(java|javax|jdk|sun|com|org|net|io|scala|kotlin|groovy|clojure)[./][\w$]`)
	// Compiler.perfmap and gjmaps names, arguments cut: "void Burn.strings", "int[] a.B$C.<init>".
	javaJDKRE = regexp.MustCompile(`^[\w$.]+(\[\])* [\w$]+(\.[\w$]+)*\.(<init>|<clinit>|[\w$]+)$`)
	// "pkg.Class::method", as async-profiler and jstack-style tools write them.
	javaColonRE = regexp.MustCompile(`^[\w$]+(\.[\w$]+)+::(<init>|<clinit>|[\w$]+)$`)
)

// classify tells a frame's kind and its name without an annotation suffix ("_[j]", "_[i]", "_[k]").
func classify(name string) (kind, string) {
	switch {
	case strings.HasSuffix(name, suffixJIT):
		return kindJava, strings.TrimSuffix(name, suffixJIT)
	case strings.HasSuffix(name, suffixInlined):
		return kindInlined, strings.TrimSuffix(name, suffixInlined)
	case strings.HasSuffix(name, suffixKernel):
		return kindKernel, strings.TrimSuffix(name, suffixKernel)
	}
	switch {
	case strings.Contains(name, ".("): // a Go method, "net/http.(*Client).Do"
		return kindNative, name
	case strings.Contains(name, ":::"), javaPkgRE.MatchString(name), javaJDKRE.MatchString(name), javaColonRE.MatchString(name):
		return kindJava, name
	case strings.Contains(name, "::"):
		return kindCpp, name
	}
	return kindNative, name
}

// colour is a frame's fill: the kind chooses the hue range, a hash of the name the shade, so that a
// frame has the same colour wherever it appears and in every rendering.
func colour(k kind, name string) string {
	h := fnv.New32a()
	h.Write([]byte(name))
	v := h.Sum32()
	a, b := float64(v&0xffff)/0xffff, float64(v>>16)/0xffff
	var r, g, bl float64
	switch k {
	case kindJava:
		r, g, bl = 60+70*a, 175+50*b, 55+45*a
	case kindInlined:
		r, g, bl = 70+50*a, 195+35*b, 195+35*b
	case kindKernel:
		r, g, bl = 238+17*b, 140+45*a, 20+35*a
	case kindCpp:
		r, g, bl = 215+35*a, 195+40*b, 55+40*a
	case kindNative:
		r, g, bl = 215+40*a, 60+60*b, 55+30*a
	default:
		r, g, bl = 205+10*a, 205+10*a, 210+10*a
	}
	return fmt.Sprintf("#%02x%02x%02x", int(r), int(g), int(bl))
}
