package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// event is one line of test2json's output.
type event struct {
	Time       time.Time
	Action     string
	Package    string
	Test       string
	Elapsed    float64 // seconds
	Output     string
	ImportPath string // build-output, build-fail
}

type testKey struct{ pkg, test string }

type result struct {
	testKey
	elapsed time.Duration
	reason  string // skips
}

// summary consumes events and prints the running report; it is not safe for concurrent use.
type summary struct {
	w        io.Writer
	start    time.Time
	output   map[testKey][]string // output of tests still running; key.test "" is the package's own
	passed   int
	fails    []result
	skips    []result
	tests    []result // top-level tests that ended, for the slowest list
	packages []result
	pkgFail  []string
}

func newSummary(w io.Writer) *summary {
	return &summary{w: w, start: time.Now(), output: make(map[testKey][]string)}
}

func (s *summary) read(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintf(s.w, "%s\n", line) // not an event: go test's own words (such as "no Go files")
			continue
		}
		s.handle(e)
	}
	s.flushUnfinished()
	return sc.Err()
}

func (s *summary) handle(e event) {
	key := testKey{e.Package, e.Test}
	switch e.Action {
	case "build-output":
		fmt.Fprint(s.w, e.Output)
	case "output":
		if e.Test == "" && isPackageVerdict(e.Output) {
			if strings.HasPrefix(e.Output, "FAIL") {
				s.printLines(s.output[key])
				delete(s.output, key)
			}
			fmt.Fprint(s.w, e.Output)
			return
		}
		s.output[key] = append(s.output[key], e.Output)
	case "pass", "fail", "skip":
		elapsed := time.Duration(e.Elapsed * float64(time.Second))
		if e.Test == "" {
			s.endPackage(e, elapsed)
			return
		}
		r := result{testKey: key, elapsed: elapsed}
		switch e.Action {
		case "pass":
			s.passed++
		case "fail":
			s.printLines(s.output[key])
			s.fails = append(s.fails, r)
		case "skip":
			r.reason = skipReason(s.output[key])
			s.skips = append(s.skips, r)
		}
		if !strings.Contains(e.Test, "/") {
			s.tests = append(s.tests, r)
		}
		delete(s.output, key)
	}
}

func (s *summary) endPackage(e event, elapsed time.Duration) {
	key := testKey{e.Package, ""}
	if e.Action == "fail" {
		s.pkgFail = append(s.pkgFail, e.Package)
		s.printLines(s.output[key])
	}
	delete(s.output, key)
	// Tests that never ended: the binary died (timeout, crash) while they ran. Their output says why.
	for k, lines := range s.output {
		if k.pkg == e.Package {
			fmt.Fprintf(s.w, "--- %s did not finish:\n", k.test)
			s.printLines(lines)
			s.fails = append(s.fails, result{testKey: k})
			delete(s.output, k)
		}
	}
	if e.Action != "skip" {
		s.packages = append(s.packages, result{testKey: key, elapsed: elapsed})
	}
}

func (s *summary) flushUnfinished() {
	keys := make([]testKey, 0, len(s.output))
	for k := range s.output {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b testKey) int { return cmp.Or(cmp.Compare(a.pkg, b.pkg), cmp.Compare(a.test, b.test)) })
	for _, k := range keys {
		s.printLines(s.output[k])
		if k.test != "" {
			s.fails = append(s.fails, result{testKey: k})
		}
	}
	clear(s.output)
}

func (s *summary) printLines(lines []string) {
	for _, l := range lines {
		fmt.Fprint(s.w, l)
	}
}

func (s *summary) failed() bool { return len(s.fails) > 0 || len(s.pkgFail) > 0 }

// isPackageVerdict reports whether a package-level line is go test's one-line result for the package.
func isPackageVerdict(line string) bool {
	for _, p := range []string{"ok  \t", "FAIL\t", "?   \t"} {
		if strings.HasPrefix(line, p) {
			return true
		}
	}
	return false
}

// skipReason returns the last message a test logged: "    file_test.go:12: message" and its continuation
// lines (indented deeper), without the framing lines (=== RUN, --- SKIP).
func skipReason(lines []string) string {
	var msg []string
	for _, l := range lines {
		trimmed := strings.TrimSpace(l)
		if trimmed == "" || strings.HasPrefix(trimmed, "=== ") || strings.HasPrefix(trimmed, "--- ") {
			continue
		}
		if isMessageStart(trimmed) {
			msg = msg[:0]
			_, rest, _ := strings.Cut(trimmed, ": ")
			trimmed = rest
		}
		msg = append(msg, trimmed)
	}
	if len(msg) == 0 {
		return "(no reason given)"
	}
	return strings.Join(msg, " ")
}

// isMessageStart reports whether a trimmed line starts a t.Log message: "name.go:123: ".
func isMessageStart(l string) bool {
	file, rest, ok := strings.Cut(l, ":")
	if !ok || !strings.HasSuffix(file, ".go") || strings.ContainsAny(file, " \t") {
		return false
	}
	num, _, ok := strings.Cut(rest, ":")
	if !ok || num == "" {
		return false
	}
	for _, c := range num {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

const modulePrefix = "github.com/jvmkit/jvmkit/"

func short(pkg string) string {
	if p, ok := strings.CutPrefix(pkg, modulePrefix); ok {
		return p
	}
	return pkg
}

func (s *summary) report(slowest int) {
	w := s.w
	fmt.Fprintln(w)
	byKey := func(a, b result) int { return cmp.Or(cmp.Compare(a.pkg, b.pkg), cmp.Compare(a.test, b.test)) }
	slowFirst := func(a, b result) int { return cmp.Compare(b.elapsed, a.elapsed) }

	if slowest > 0 && len(s.packages) > 0 {
		pk := slices.Clone(s.packages)
		slices.SortStableFunc(pk, slowFirst)
		fmt.Fprintf(w, "Slowest packages:\n")
		for _, r := range pk[:min(slowest, len(pk))] {
			fmt.Fprintf(w, "  %8s  %s\n", r.elapsed.Round(100*time.Millisecond), short(r.pkg))
		}
		ts := slices.Clone(s.tests)
		slices.SortStableFunc(ts, slowFirst)
		fmt.Fprintf(w, "Slowest tests:\n")
		for _, r := range ts[:min(slowest, len(ts))] {
			fmt.Fprintf(w, "  %8s  %s %s\n", r.elapsed.Round(100*time.Millisecond), short(r.pkg), r.test)
		}
	}

	slices.SortFunc(s.skips, byKey)
	if len(s.skips) == 0 {
		fmt.Fprintf(w, "Skipped: none\n")
	} else {
		fmt.Fprintf(w, "Skipped (%d) — not tested on this machine:\n", len(s.skips))
		for _, r := range s.skips {
			fmt.Fprintf(w, "  %s %s: %s\n", short(r.pkg), r.test, r.reason)
		}
	}
	if s.failed() {
		slices.SortFunc(s.fails, byKey)
		fmt.Fprintf(w, "Failed:\n")
		for _, r := range s.fails {
			fmt.Fprintf(w, "  %s %s\n", short(r.pkg), r.test)
		}
		for _, p := range s.pkgFail {
			fmt.Fprintf(w, "  %s (package)\n", short(p))
		}
	}
	fmt.Fprintf(w, "Tests: %d passed, %d failed, %d skipped (subtests included); %d packages, %d failed; %s\n",
		s.passed, len(s.fails), len(s.skips), len(s.packages), len(s.pkgFail), time.Since(s.start).Round(time.Second))
}
