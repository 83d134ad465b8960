package jcmd

import "strings"

// The matchers below find what gjcmd's own paths need in the JVM's output: the JDK release, an unknown
// command, JFR.start's .jfc options and the file a command wrote. They are written by hand, not as
// regular expressions, so that gjcmd links no regexp engine: its tables and Unicode classes are
// initialised at start-up even for a command that matches nothing (issue 13 measured 0.06 ms of gjcmd's
// 0.45 ms of package inits). Each one matches exactly what the regular expression in its comment
// matches, with Go's semantics (leftmost-first, `.` stops at \n, \s is [\t\n\f\r ]); a differential
// fuzz test (FuzzMatchers) holds them to it.

// isSpace reports whether c is in the regexp class \s.
func isSpace(c byte) bool { return c == '\t' || c == '\n' || c == '\f' || c == '\r' || c == ' ' }

// spaceToEOL reports whether s[i:] starts with a run of \s that holds a \n or reaches the end of s:
// what `\s*$` needs in multi-line mode.
func spaceToEOL(s string, i int) bool {
	for ; i < len(s); i++ {
		switch {
		case s[i] == '\n':
			return true
		case !isSpace(s[i]):
			return false
		}
	}
	return true
}

// lineEnd returns the index of the \n that ends the line holding s[i], or len(s).
func lineEnd(s string, i int) int {
	if k := strings.IndexByte(s[i:], '\n'); k >= 0 {
		return i + k
	}
	return len(s)
}

// lineStarts calls f with the start of every line of s until f returns true.
func lineStarts(s string, f func(i int) bool) {
	for i := 0; ; {
		if f(i) {
			return
		}
		k := strings.IndexByte(s[i:], '\n')
		if k < 0 {
			return
		}
		i += k + 1
	}
}

// matchJDKLine: `(?m)^JDK (\d+)`.
func matchJDKLine(s string) (digits string, ok bool) {
	lineStarts(s, func(i int) bool {
		if !strings.HasPrefix(s[i:], "JDK ") {
			return false
		}
		j := i + len("JDK ")
		k := j
		for k < len(s) && s[k] >= '0' && s[k] <= '9' {
			k++
		}
		if k > j {
			digits, ok = s[j:k], true
		}
		return ok
	})
	return digits, ok
}

// matchHelpUnavailable: `Help unavailable : '(.*)' : No such command`.
func matchHelpUnavailable(s string) (name string, ok bool) {
	const pre, suf = "Help unavailable : '", "' : No such command"
	for off := 0; ; {
		k := strings.Index(s[off:], pre)
		if k < 0 {
			return "", false
		}
		start := off + k + len(pre)
		if e := strings.LastIndex(s[start:lineEnd(s, start)], suf); e >= 0 {
			return s[start : start+e], true
		}
		off += k + 1
	}
}

// matchControlLine: `^\s+([A-Za-z][\w.-]*)=<([^>]*)>\s+\((.*)\)\s*$`, on one line.
func matchControlLine(l string) (name, placeholder, def string, ok bool) {
	i := 0
	for i < len(l) && isSpace(l[i]) {
		i++
	}
	if i == 0 || i == len(l) || !isLetter(l[i]) {
		return "", "", "", false
	}
	j := i + 1
	for j < len(l) && (isLetter(l[j]) || l[j] >= '0' && l[j] <= '9' || l[j] == '_' || l[j] == '.' || l[j] == '-') {
		j++
	}
	name = l[i:j]
	if !strings.HasPrefix(l[j:], "=<") {
		return "", "", "", false
	}
	j += 2
	k := strings.IndexByte(l[j:], '>')
	if k < 0 {
		return "", "", "", false
	}
	placeholder = l[j : j+k]
	j += k + 1
	n := j
	for n < len(l) && isSpace(l[n]) {
		n++
	}
	if n == j || n == len(l) || l[n] != '(' {
		return "", "", "", false
	}
	rest := strings.TrimRight(l[n+1:], "\t\n\f\r ")
	if !strings.HasSuffix(rest, ")") {
		return "", "", "", false
	}
	def = rest[:len(rest)-1]
	if strings.IndexByte(def, '\n') >= 0 {
		return "", "", "", false
	}
	return name, placeholder, def, true
}

func isLetter(c byte) bool { return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' }

// matchWrittenTo: `(?m)written to:[ \t]*\r?\n(?:[ \t]*\r?\n)*([^\r\n]+)`. start is where the match
// begins; path is the submatch.
func matchWrittenTo(s string) (start int, path string, ok bool) {
	const pre = "written to:"
	for off := 0; ; {
		k := strings.Index(s[off:], pre)
		if k < 0 {
			return 0, "", false
		}
		start = off + k
		if p, ok := afterWrittenTo(s, start+len(pre)); ok {
			return start, p, true
		}
		off = start + 1
	}
}

// afterWrittenTo matches `[ \t]*\r?\n(?:[ \t]*\r?\n)*([^\r\n]+)` at s[i:].
func afterWrittenTo(s string, i int) (string, bool) {
	blank := func(i int) (int, bool) { // [ \t]*\r?\n at i: the index after it
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
		if i < len(s) && s[i] == '\r' {
			i++
		}
		if i < len(s) && s[i] == '\n' {
			return i + 1, true
		}
		return 0, false
	}
	i, ok := blank(i)
	if !ok {
		return "", false
	}
	starts := []int{i} // where ([^\r\n]+) may begin: after 0, 1, 2 ... blank lines; the most first
	for {
		n, ok := blank(starts[len(starts)-1])
		if !ok {
			break
		}
		starts = append(starts, n)
	}
	for k := len(starts) - 1; k >= 0; k-- {
		j := starts[k]
		e := j
		for e < len(s) && s[e] != '\r' && s[e] != '\n' {
			e++
		}
		if e > j {
			return s[j:e], true
		}
	}
	return "", false
}

// matchHeapDump: `(?m)^Dumping heap to (.+?) \.\.\.\s*$`.
func matchHeapDump(s string) (path string, ok bool) {
	const pre, suf = "Dumping heap to ", " ..."
	lineStarts(s, func(i int) bool {
		if !strings.HasPrefix(s[i:], pre) {
			return false
		}
		j := i + len(pre)
		e := lineEnd(s, j)
		for k := j + 1; k+len(suf) <= e; k++ { // the shortest path first
			if s[k:k+len(suf)] == suf && spaceToEOL(s, k+len(suf)) {
				path, ok = s[j:k], true
				return true
			}
		}
		return false
	})
	return path, ok
}

// matchCreated: `(?m)^Created (/.+?)\s*$`.
func matchCreated(s string) (path string, ok bool) {
	const pre = "Created /"
	lineStarts(s, func(i int) bool {
		if !strings.HasPrefix(s[i:], pre) {
			return false
		}
		j := i + len(pre) - 1 // the path starts at the slash
		e := lineEnd(s, j)
		for k := j + 2; k <= e; k++ { // the shortest path first: the slash and one byte at least
			if spaceToEOL(s, k) {
				path, ok = s[j:k], true
				return true
			}
		}
		return false
	})
	return path, ok
}

// matchDumpedTo: `(?m)dumped to "(.+)"\.?\s*$`.
func matchDumpedTo(s string) (path string, ok bool) {
	const pre = `dumped to "`
	for off := 0; ; {
		k := strings.Index(s[off:], pre)
		if k < 0 {
			return "", false
		}
		j := off + k + len(pre)
		e := lineEnd(s, j)
		for q := e - 1; q > j; q-- { // the longest path first
			if s[q] != '"' {
				continue
			}
			if spaceToEOL(s, q+1) || q+1 < len(s) && s[q+1] == '.' && spaceToEOL(s, q+2) {
				return s[j:q], true
			}
		}
		off += k + 1
	}
}
