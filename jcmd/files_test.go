package jcmd_test

import (
	"testing"
	"time"

	"github.com/jvmkit/jvmkit/jcmd"
)

func TestExpandPath(t *testing.T) {
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	const ts = "2026_03_04_05_06_07"
	for _, tc := range []struct {
		name   string
		cwd    string
		p, tm  bool
		want   string
		reason string
	}{
		{"x.jfr", "/app", true, true, "/app/x.jfr", "relative"},
		{"x.jfr", "/", true, true, "/x.jfr", "cwd is the root"},
		{"x.jfr", "/app/", false, false, "/app/x.jfr", "cwd with a trailing slash"},
		{"/tmp/x.jfr", "/app", true, true, "/tmp/x.jfr", "absolute"},
		{"d/../x.jfr", "/app", true, true, "/app/d/../x.jfr", "'..' is left to the kernel"},
		{"x_%p.jfr", "/app", true, true, "/app/x_42.jfr", "%p"},
		{"x_%p_%p.hprof", "/app", true, false, "/app/x_42_42.hprof", "%p twice (HotSpot, JDK 24+)"},
		{"x_%t.jfr", "/app", true, true, "/app/x_" + ts + ".jfr", "%t"},
		{"x_%t.hprof", "/app", true, false, "/app/x_%t.hprof", "HotSpot does not expand %t"},
		{"x_%%.jfr", "/app", true, false, "/app/x_%.jfr", "%%"},
		{"x_%%p.jfr", "/app", true, true, "/app/x_%p.jfr", "%% then p: no second pass"},
		{"x_%%%p.jfr", "/app", true, true, "/app/x_%42.jfr", "%% then %p"},
		{"x_%x_%.jfr%", "/app", true, true, "/app/x_%x_%.jfr%", "unknown and trailing %"},
		{"/x_%p_%t_%%.jfr", "/app", false, false, "/x_%p_%t_%%.jfr", "JDK 17: no expansion at all"},
		{"%p/%t", "/app", true, true, "/app/42/" + ts, "directories"},
		{"%p", "/app", true, true, "/app/42", "only %p"},
		{"%", "/app", true, true, "/app/%", "only %"},
		{"", "/app", true, true, "/app/", "empty"},
	} {
		if got := jcmd.ExpandPath(tc.name, 42, tc.cwd, now, tc.p, tc.tm); got != tc.want {
			t.Errorf("%s: ExpandPath(%q, 42, %q, p=%v, t=%v) = %q, want %q", tc.reason, tc.name, tc.cwd, tc.p, tc.tm, got, tc.want)
		}
	}

	// JFR pads every field but the year to two digits, in the time zone it is given.
	kolkata := time.FixedZone("IST", 5*3600+1800)
	if got, want := jcmd.ExpandPath("/%t", 1, "/", time.Date(999, 1, 2, 3, 4, 5, 0, time.UTC).In(kolkata), true, true), "/999_01_02_08_34_05"; got != want {
		t.Errorf("%%t in another zone: %q, want %q", got, want)
	}
}

func TestFileNameExpansion(t *testing.T) {
	for _, tc := range []struct {
		feature int
		cmd     string
		p, tm   bool
	}{
		{17, "JFR.dump", false, false},
		{18, "JFR.start", true, true},
		{25, "JFR.dump", true, true},
		{17, "GC.heap_dump", false, false},
		{23, "GC.heap_dump", false, false},
		{24, "GC.heap_dump", true, false},
		{25, "Compiler.perfmap", true, false},
	} {
		if p, tm := jcmd.FileNameExpansion(tc.feature, tc.cmd); p != tc.p || tm != tc.tm {
			t.Errorf("FileNameExpansion(%d, %s) = %v, %v; want %v, %v", tc.feature, tc.cmd, p, tm, tc.p, tc.tm)
		}
	}
}
