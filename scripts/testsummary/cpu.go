package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"
)

// cpuLogEnv names the CPU log that testsummary -cpu asks its `go test -exec` wrappers to append to.
const cpuLogEnv = "JVMKIT_TEST_CPU_LOG"

// jdkName matches a subtest named after a JDK (testutil's JDK.Name: jdk17, jdk21-trixie; t.Run's #01 suffix).
var jdkName = regexp.MustCompile(`^jdk\d+(-[a-z0-9]+)?(#\d+)?$`)

// cpuRecord is one line of the CPU log: the CPU time that a test (and everything it ran) used between its
// === RUN and --- line, or with Test empty the whole test binary's.
type cpuRecord struct {
	Package string  `json:"pkg"`
	Test    string  `json:"test,omitempty"`
	CPU     float64 `json:"cpu"`  // seconds
	Wall    float64 `json:"wall"` // seconds
	// CPU pressure (cgroup v2): seconds in which some of the test's runnable tasks, or all of them, waited for
	// a CPU that other work held. Wall - Full is what the test would have taken had nothing else run; in
	// Wall - Some it would not have waited for a CPU at all.
	Some float64 `json:"stall_some,omitempty"`
	Full float64 `json:"stall_full,omitempty"`
	Note string  `json:"note,omitempty"`
}

func readCPULog(path string) ([]cpuRecord, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("CPU log: %w", err)
	}
	defer f.Close()
	var out []cpuRecord
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r cpuRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return out, fmt.Errorf("CPU log %s: %w", path, err)
		}
		out = append(out, r)
	}
	return out, sc.Err()
}

// reportCPU prints where the CPU time went: per package, the tests that used the most, and per JDK (the
// subtests named after one), each with its wall time and, where cgroup v2 measured CPU pressure, the wall
// time without the stalls in which all of the test's tasks waited for a CPU held by other work: about what
// the test would take on a quiet machine. On a shared machine the wall time alone says little.
func reportCPU(w io.Writer, records []cpuRecord, n int) {
	var pkgs, tests []cpuRecord
	perJDK := map[string]*cpuRecord{}
	var total cpuRecord
	add := func(to *cpuRecord, r cpuRecord) {
		to.CPU += r.CPU
		to.Wall += r.Wall
		to.Some += r.Some
		to.Full += r.Full
	}
	for _, r := range records {
		if r.Test == "" {
			pkgs = append(pkgs, r)
			add(&total, r)
			continue
		}
		if !strings.Contains(r.Test, "/") {
			tests = append(tests, r)
		}
		// The first path element named after a JDK, counted once: at its own level.
		parts := strings.Split(r.Test, "/")
		for i, p := range parts {
			if jdkName.MatchString(p) {
				if i == len(parts)-1 {
					name, _, _ := strings.Cut(p, "#")
					if perJDK[name] == nil {
						perJDK[name] = &cpuRecord{Test: name}
					}
					add(perJDK[name], r)
				}
				break
			}
		}
	}
	if len(pkgs) == 0 {
		return
	}
	pressure := total.Full > 0
	most := func(a, b cpuRecord) int { return cmp.Or(cmp.Compare(b.CPU, a.CPU), cmp.Compare(a.Test, b.Test)) }
	secs := func(s float64) string { return (time.Duration(s*10) * time.Second / 10).String() }
	header := "  %8s  %8s"
	cols := []any{"CPU", "wall"}
	if pressure {
		header += "  %8s"
		cols = append(cols, "unstalled")
	}
	row := func(r cpuRecord) string {
		out := fmt.Sprintf("  %8s  %8s", secs(r.CPU), secs(r.Wall))
		if pressure {
			out += fmt.Sprintf("  %8s", secs(r.Wall-r.Full))
		}
		return out
	}
	slices.SortStableFunc(pkgs, most)
	fmt.Fprintf(w, "CPU time per package (every process the test binary ran):\n")
	fmt.Fprintf(w, header+"\n", cols...)
	for _, r := range pkgs[:min(n, len(pkgs))] {
		fmt.Fprintf(w, "%s  %s\n", row(r), short(r.Package))
		if r.Note != "" {
			fmt.Fprintf(w, "            %s\n", r.Note)
		}
	}
	slices.SortStableFunc(tests, most)
	fmt.Fprintf(w, "CPU time per test:\n")
	for _, r := range tests[:min(n, len(tests))] {
		fmt.Fprintf(w, "%s  %s %s\n", row(r), short(r.Package), r.Test)
	}
	if len(perJDK) > 0 {
		jdks := make([]cpuRecord, 0, len(perJDK))
		for _, r := range perJDK {
			if r.CPU < 0.05 && r.Wall < 0.05 {
				continue // a subtest that only looks like a JDK's (TestRealTruncated/jdk17-truncated)
			}
			jdks = append(jdks, *r)
		}
		slices.SortFunc(jdks, func(a, b cpuRecord) int { return cmp.Compare(a.Test, b.Test) })
		fmt.Fprintf(w, "CPU time per JDK (subtests named after it):\n")
		for _, r := range jdks {
			fmt.Fprintf(w, "%s  %s\n", row(r), r.Test)
		}
	}
	fmt.Fprintf(w, "CPU time: %s in %d test binaries, %s of wall time; a quiet 2-core machine needs at least %s",
		secs(total.CPU), len(pkgs), secs(total.Wall), secs(total.CPU/2))
	if pressure {
		fmt.Fprintf(w, "; without the stalls for CPUs that other work held, %s (%s without any stall)",
			secs(total.Wall-total.Full), secs(max(total.Wall-total.Some, total.CPU/2)))
	}
	fmt.Fprintln(w)
}
