package main

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// testdata/events.json is `go test -json ./...` over a module with a passing, a skipped (with a two-line
// reason after an earlier log line), a failing subtest, a package without tests and a passing package.
func TestReport(t *testing.T) {
	events, err := os.ReadFile("testdata/events.json")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	s := newSummary(&out)
	if err := s.read(bytes.NewReader(events)); err != nil {
		t.Fatal(err)
	}
	s.report(2)
	if !s.failed() {
		t.Errorf("failed() = false, want true")
	}
	// The total wall time is the only line that depends on when the test runs.
	got := regexp.MustCompile(`; \d+s\n$`).ReplaceAllString(out.String(), "; Ns\n")
	want := `=== RUN   TestSub/jdk25
    a_test.go:12: got 1, want 2
--- FAIL: TestSub/jdk25 (0.00s)
=== RUN   TestSub
--- FAIL: TestSub (0.00s)
FAIL
FAIL	example.com/demo/a	0.073s
?   	example.com/demo/c	[no test files]
ok  	example.com/demo/b	0.056s

Slowest packages:
     100ms  example.com/demo/b
     100ms  example.com/demo/a
Slowest tests:
        0s  example.com/demo/a TestPass
        0s  example.com/demo/a TestSkip
Skipped (2) — not tested on this machine:
  example.com/demo/a TestSkip: test needs chromium: not found second line
  example.com/demo/a TestSub/jdk21-trixie: needs root
Failed:
  example.com/demo/a TestSub
  example.com/demo/a TestSub/jdk25
  example.com/demo/a (package)
Tests: 3 passed, 2 failed, 2 skipped (subtests included); 2 packages, 1 failed; Ns
`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
}

// A test binary killed by -timeout leaves tests without an end event: they count as failed, with their output.
func TestUnfinished(t *testing.T) {
	events := `{"Action":"run","Package":"p","Test":"TestHang"}
{"Action":"output","Package":"p","Test":"TestHang","Output":"=== RUN   TestHang\n"}
{"Action":"output","Package":"p","Test":"TestHang","Output":"panic: test timed out after 1s\n"}
{"Action":"output","Package":"p","Output":"FAIL\tp\t1.0s\n"}
{"Action":"fail","Package":"p","Elapsed":1}
`
	var out bytes.Buffer
	s := newSummary(&out)
	if err := s.read(strings.NewReader(events)); err != nil {
		t.Fatal(err)
	}
	if !s.failed() || len(s.fails) != 1 || s.fails[0].test != "TestHang" {
		t.Errorf("fails = %v, want TestHang", s.fails)
	}
	if !strings.Contains(out.String(), "panic: test timed out") {
		t.Errorf("output lacks the panic:\n%s", out.String())
	}
}

func TestSkipReason(t *testing.T) {
	for _, tc := range []struct {
		lines []string
		want  string
	}{
		{nil, "(no reason given)"},
		{[]string{"=== RUN   TestX\n", "--- SKIP: TestX (0.00s)\n"}, "(no reason given)"},
		{[]string{"    x_test.go:3: a\n", "    x_test.go:4: b: c\n", "--- SKIP: TestX\n"}, "b: c"},
		{[]string{"    x_test.go:3: first\n", "        more\n"}, "first more"},
		{[]string{"    not a file: x\n"}, "not a file: x"},
	} {
		if got := skipReason(tc.lines); got != tc.want {
			t.Errorf("skipReason(%q) = %q, want %q", tc.lines, got, tc.want)
		}
	}
}

func FuzzRead(f *testing.F) {
	if events, err := os.ReadFile("testdata/events.json"); err == nil {
		f.Add(events)
	}
	f.Add([]byte(`{"Action":"skip","Package":"p","Test":"T"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var out bytes.Buffer
		s := newSummary(&out)
		_ = s.read(bytes.NewReader(data))
		s.report(3)
	})
}
