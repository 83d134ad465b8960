package jcmd

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
)

// The regular expressions the hand-written matchers of match.go stand for: the oracle of FuzzMatchers.
var (
	reJDKLine         = regexp.MustCompile(`(?m)^JDK (\d+)`)
	reHelpUnavailable = regexp.MustCompile(`Help unavailable : '(.*)' : No such command`)
	reControlLine     = regexp.MustCompile(`^\s+([A-Za-z][\w.-]*)=<([^>]*)>\s+\((.*)\)\s*$`)
	reWrittenTo       = regexp.MustCompile(`(?m)written to:[ \t]*\r?\n(?:[ \t]*\r?\n)*([^\r\n]+)`)
	reHeapDump        = regexp.MustCompile(`(?m)^Dumping heap to (.+?) \.\.\.\s*$`)
	reCreated         = regexp.MustCompile(`(?m)^Created (/.+?)\s*$`)
	reDumpedTo        = regexp.MustCompile(`(?m)dumped to "(.+)"\.?\s*$`)
)

// checkMatchers compares every matcher with its regular expression on s.
func checkMatchers(t *testing.T, s string) {
	t.Helper()
	sub := func(re *regexp.Regexp) (string, bool) {
		if m := re.FindStringSubmatch(s); m != nil {
			return m[1], true
		}
		return "", false
	}
	for _, c := range []struct {
		name string
		re   *regexp.Regexp
		f    func(string) (string, bool)
	}{
		{"JDKLine", reJDKLine, matchJDKLine},
		{"HelpUnavailable", reHelpUnavailable, matchHelpUnavailable},
		{"HeapDump", reHeapDump, matchHeapDump},
		{"Created", reCreated, matchCreated},
		{"DumpedTo", reDumpedTo, matchDumpedTo},
	} {
		want, wok := sub(c.re)
		got, gok := c.f(s)
		if got != want || gok != wok {
			t.Errorf("%s(%q) = %q, %v; the regexp: %q, %v", c.name, s, got, gok, want, wok)
		}
	}
	var want []string
	if m := reControlLine.FindStringSubmatch(s); m != nil {
		want = m[1:]
	}
	var got []string
	if n, p, d, ok := matchControlLine(s); ok {
		got = []string{n, p, d}
	}
	if !slices.Equal(got, want) {
		t.Errorf("ControlLine(%q) = %q; the regexp: %q", s, got, want)
	}
	wm := reWrittenTo.FindStringSubmatchIndex(s)
	start, p, ok := matchWrittenTo(s)
	switch {
	case ok != (wm != nil):
		t.Errorf("WrittenTo(%q) ok %v; the regexp: %v", s, ok, wm)
	case ok && (start != wm[0] || p != s[wm[2]:wm[3]]):
		t.Errorf("WrittenTo(%q) = %d %q; the regexp: %d %q", s, start, p, wm[0], s[wm[2]:wm[3]])
	}
}

func matcherSeeds() []string {
	seeds := []string{
		"", "JDK", "JDK 17", "x\nJDK 21.0.1\n", "JDK x\nJDK 25", "\r\nJDK 1",
		"Help unavailable : 'Foo.bar' : No such command", "Help unavailable : 'a' : No such command' : No such command\n",
		"Help unavailable : 'a\n' : No such command", "Help unavailable : 'Help unavailable : 'x' : No such command",
		"  gc=<off|normal|detailed|high|all>  (normal)", "  method-profiling=<off|normal|high|max>  (off)  ",
		"\n x=<>\n(\"\")\r", "  a.b-c_d=<x>  (y) (z)\n", "  1a=<x>  (y)", "  a=<x> (y\n)", "a=<x> (y)", "  a=<x>(y)",
		"Dumped recording \"t\", 1.6 MB written to:\n\n/tmp/x.jfr\n", "written to:\r\n \t\r\n\r\n/tmp/a b\r\n",
		"The result will be written to:\n\n/tmp/x.jfr", "written to:\n  \n", "written to: x\nwritten to:\n\ny",
		"written to:\n \r \n/x", "written to:\n\n",
		"Dumping heap to /tmp/h.hprof ...\nHeap dump file created [1 bytes in 0.1 secs]",
		"Dumping heap to a ... b ...  \n", "Dumping heap to  ...", "Dumping heap to x ...\t\f\r \ny",
		"Created /tmp/t.txt\n", "Created / ", "Created /", "Created /a b  \r\n", "x\nCreated /x \t y\n",
		`Memory map dumped to "/tmp/m.txt".`, `dumped to "a"b"." ` + "\n", `dumped to ""`, `dumped to "x".x` + "\ndumped to \"y\"",
	}
	for _, dir := range []string{"jdk17", "jdk25"} {
		files, _ := filepath.Glob(filepath.Join("testdata", dir, "*"))
		for _, f := range files {
			if b, err := os.ReadFile(f); err == nil && len(b) < 64<<10 {
				seeds = append(seeds, string(b))
			}
		}
	}
	return seeds
}

func TestMatchers(t *testing.T) {
	for _, s := range matcherSeeds() {
		checkMatchers(t, s)
		for _, l := range splitLines(s) { // control lines are matched one line at a time
			checkMatchers(t, l)
		}
	}
}

// FuzzMatchers checks the hand-written matchers against the regular expressions they replace.
func FuzzMatchers(f *testing.F) {
	for _, s := range matcherSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkMatchers(t, s) })
}
