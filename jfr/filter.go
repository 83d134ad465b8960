package jfr

import "strings"

// Filter returns a type filter as `jfr print --events` and `--categories` make them: each is a
// comma-separated list of patterns ("*" any run of characters, "?" one); an event type is kept when
// a pattern of events matches its full name ("jdk.GarbageCollection") or its name after the last dot
// ("GarbageCollection"), or a pattern of categories matches one of its categories ("GC", "Java
// Virtual Machine") or a category's acronym ("JVM"). Empty lists keep everything; with both, either
// keeps a type.
func Filter(events, categories string) func(*Type) bool {
	ev := splitPatterns(events)
	cat := splitPatterns(categories)
	if len(ev) == 0 && len(cat) == 0 {
		return nil
	}
	return func(t *Type) bool {
		short := t.Name[strings.LastIndexByte(t.Name, '.')+1:]
		for _, p := range ev {
			if glob(p, t.Name) || glob(p, short) {
				return true
			}
		}
		for _, c := range t.Category {
			for _, p := range cat {
				if glob(p, c) || strings.Contains(c, " ") && acronym(c) == p {
					return true
				}
			}
		}
		return false
	}
}

func splitPatterns(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func acronym(s string) string {
	var b strings.Builder
	for _, w := range strings.Fields(s) {
		b.WriteByte(w[0])
	}
	return b.String()
}

// glob matches s against a pattern of literal characters, "*" and "?".
func glob(p, s string) bool {
	// Iterative matching with one backtrack point: linear in practice, no recursion on hostile input.
	pi, si := 0, 0
	star, mark := -1, 0
	for si < len(s) {
		switch {
		case pi < len(p) && (p[pi] == '?' || p[pi] == s[si]):
			pi++
			si++
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, si
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			si = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}
