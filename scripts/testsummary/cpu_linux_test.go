package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestFraming(t *testing.T) {
	for _, tc := range []struct {
		line       string
		name, verb string
		ok         bool
	}{
		{"\x16=== RUN   TestA/jdk17\n", "TestA/jdk17", "RUN", true},
		{"\x16--- PASS: TestA/jdk17 (0.00s)\n", "TestA/jdk17", "PASS", true},
		{"partial output\x16--- FAIL: TestB (12.34s)\n", "TestB", "FAIL", true},
		{"\x16--- SKIP: TestC/with (parens) (0.00s)\n", "TestC/with (parens)", "SKIP", true},
		{"\x16=== PAUSE TestA/p\n", "", "", false},
		{"=== RUN   TestA (printed by the test itself)\n", "", "", false},
	} {
		name, verb, ok := framing([]byte(tc.line))
		if name != tc.name || verb != tc.verb || ok != tc.ok {
			t.Errorf("framing(%q) = %q, %q, %v; want %q, %q, %v", tc.line, name, verb, ok, tc.name, tc.verb, tc.ok)
		}
	}
}

func TestCgroupPlace(t *testing.T) {
	mountinfo := `25 30 0:22 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
26 25 0:23 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
27 25 0:24 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct
35 25 0:31 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`
	self := "4:memory:/x\n2:cpu,cpuacct:/v1/path\n0::/v2/path\n"
	for _, tc := range []struct {
		v2          bool
		mount, path string
	}{
		{true, "/sys/fs/cgroup/unified", "/v2/path"},
		{false, "/sys/fs/cgroup/cpu,cpuacct", "/v1/path"},
	} {
		mount, path, ok := cgroupPlace(mountinfo, self, tc.v2)
		if !ok || mount != tc.mount || path != tc.path {
			t.Errorf("cgroupPlace(v2=%v) = %q, %q, %v; want %q, %q", tc.v2, mount, path, ok, tc.mount, tc.path)
		}
	}
	if _, _, ok := cgroupPlace("", self, true); ok {
		t.Errorf("cgroupPlace without mounts: ok")
	}
}

func TestReportCPU(t *testing.T) {
	log := filepath.Join(t.TempDir(), "cpu.json")
	records := []cpuRecord{
		{Package: modulePrefix + "vmstructs", Test: "TestThreads/Demo/jdk17", CPU: 3, Wall: 4},
		{Package: modulePrefix + "vmstructs", Test: "TestThreads/Demo/jdk21-trixie", CPU: 5, Wall: 6},
		{Package: modulePrefix + "vmstructs", Test: "TestThreads/Demo", CPU: 8, Wall: 10},
		{Package: modulePrefix + "vmstructs", Test: "TestThreads", CPU: 8.5, Wall: 10.5},
		{Package: modulePrefix + "vmstructs", Test: "TestOpen/jdk17#01/x", CPU: 1, Wall: 1},
		{Package: modulePrefix + "vmstructs", Test: "TestOpen/jdk17#01", CPU: 1.5, Wall: 1.5},
		{Package: modulePrefix + "vmstructs", Test: "TestOpen", CPU: 1.5, Wall: 1.5},
		{Package: modulePrefix + "vmstructs", CPU: 12, Wall: 14},
		{Package: modulePrefix + "attach", CPU: 20, Wall: 30, Note: "cgroup x: processes left behind by the test binary: 12"},
	}
	if err := appendRecords(log, records[:4]); err != nil {
		t.Fatal(err)
	}
	if err := appendRecords(log, records[4:]); err != nil {
		t.Fatal(err)
	}
	got, err := readCPULog(log)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(records, got); diff != "" {
		t.Fatalf("log (-want +got):\n%s", diff)
	}
	var out bytes.Buffer
	reportCPU(&out, got, 2)
	want := `CPU time per package (every process the test binary ran):
       CPU      wall
       20s       30s  attach
            cgroup x: processes left behind by the test binary: 12
       12s       14s  vmstructs
CPU time per test:
      8.5s     10.5s  vmstructs TestThreads
      1.5s      1.5s  vmstructs TestOpen
CPU time per JDK (subtests named after it):
      4.5s      5.5s  jdk17
        5s        6s  jdk21-trixie
CPU time: 32s in 2 test binaries, 44s of wall time; a quiet 2-core machine needs at least 16s
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
	_ = os.Remove(log)

	// With CPU pressure measured (cgroup v2), the wall time without the stalls.
	out.Reset()
	reportCPU(&out, []cpuRecord{{Package: "p", CPU: 10, Wall: 100, Some: 90, Full: 80}}, 1)
	want = `CPU time per package (every process the test binary ran):
       CPU      wall  unstalled
       10s     1m40s       20s  p
CPU time per test:
CPU time: 10s in 1 test binaries, 1m40s of wall time; a quiet 2-core machine needs at least 5s; without the stalls for CPUs that other work held, 20s (10s without any stall)
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("report with pressure (-want +got):\n%s", diff)
	}
}

func TestParsePressure(t *testing.T) {
	some, full := parsePressure("some avg10=0.00 avg60=0.00 avg300=0.00 total=164897135\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=161416261\n")
	if some != 164897135*time.Microsecond || full != 161416261*time.Microsecond {
		t.Errorf("parsePressure = %v, %v", some, full)
	}
}
