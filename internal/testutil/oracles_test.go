package testutil

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The testdata logs are the first collections of -Xlog:gc*:file=...:timenanos,uptimenanos,tags of a JVM
// allocating 10 kB arrays in a 64 MB heap and calling System.gc(), on Debian's JDK 17 and Temurin 25 (the
// G1 one also has the remark and cleanup pauses of a concurrent cycle).
func TestParseGCLog(t *testing.T) {
	for _, tc := range []struct {
		file        string
		pauses      int
		full        int
		first       GCLogPause
		sameIDMulti bool // several pauses per GC(n)
	}{
		{file: "xlog-gc-17-Serial.log", pauses: 4, full: 1,
			first: GCLogPause{ID: 0, Name: "Young (Allocation Failure)"}},
		{file: "xlog-gc-17-Parallel.log", pauses: 4, full: 1,
			first: GCLogPause{ID: 0, Name: "Young (Allocation Failure)"}},
		{file: "xlog-gc-17-G1.log", pauses: 6, full: 0, sameIDMulti: true,
			first: GCLogPause{ID: 0, Name: "Young (Normal) (G1 Evacuation Pause)"}},
		{file: "xlog-gc-17-Z.log", pauses: 12, full: 0, sameIDMulti: true,
			first: GCLogPause{ID: 0, Name: "Mark Start", Duration: 8 * time.Microsecond, Time: 2039706262923, Uptime: 684484426}},
		{file: "xlog-gc-25-Serial.log", pauses: 4, full: 1,
			first: GCLogPause{ID: 0, Name: "Young (Allocation Failure)"}},
		{file: "xlog-gc-25-Parallel.log", pauses: 4, full: 1,
			first: GCLogPause{ID: 0, Name: "Young (Allocation Failure)"}},
		{file: "xlog-gc-25-G1.log", pauses: 4, full: 0,
			first: GCLogPause{ID: 0, Name: "Young (Normal) (G1 Evacuation Pause)"}},
		{file: "xlog-gc-25-Z.log", pauses: 18, full: 0, sameIDMulti: true,
			first: GCLogPause{ID: 0, Name: "Mark Start (Major)", Duration: 20 * time.Microsecond, Time: 2069483019246, Uptime: 660272253}},
	} {
		data, err := os.ReadFile(filepath.Join("testdata", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		got := ParseGCLog(data)
		full, multi := 0, false
		for i, p := range got {
			if p.Full {
				full++
			}
			if i > 0 && got[i-1].ID == p.ID {
				multi = true
			}
			if p.Duration <= 0 || p.Time <= 0 || p.Uptime <= 0 || p.Uptime > time.Minute {
				t.Errorf("%s: pause %+v", tc.file, p)
			}
		}
		if len(got) != tc.pauses || full != tc.full || multi != tc.sameIDMulti {
			t.Errorf("%s: %d pauses, %d full, several per collection %v; want %d, %d, %v\n%+v", tc.file, len(got), full,
				multi, tc.pauses, tc.full, tc.sameIDMulti, got)
			continue
		}
		f := got[0]
		if f.ID != tc.first.ID || f.Name != tc.first.Name || (tc.first.Duration != 0 && f.Duration != tc.first.Duration) ||
			(tc.first.Time != 0 && (f.Time != tc.first.Time || f.Uptime != tc.first.Uptime)) {
			t.Errorf("%s: first pause %+v, want %+v", tc.file, f, tc.first)
		}
	}
}

func FuzzParseGCLog(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "xlog-gc-*.log"))
	for _, file := range files {
		if data, err := os.ReadFile(file); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("[1ns][2ns][gc] GC(1) Pause Full (x) 1M->1M(2M) 1.5ms\n[gc] GC(x) Pause 1ms\n[[[]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, p := range ParseGCLog(data) {
			if p.Duration < 0 || p.ID < 0 {
				t.Fatalf("pause %+v", p)
			}
		}
	})
}

func TestParseJFRJSON(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "jfr-print.json"))
	if err != nil {
		t.Fatal(err)
	}
	events, err := ParseJFRJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	var exec, alloc, native int
	for _, e := range events {
		switch e.Type {
		case "jdk.NativeMethodSample":
			native++
			if f := e.Values.StackTrace.Frames[0]; !f.Native() || f.MethodName() != "sun.nio.ch.Net.accept" {
				t.Errorf("native method sample's top frame %s, native %v", f.MethodName(), f.Native())
			}
		case "jdk.ExecutionSample":
			exec++
			if e.Values.StackTrace == nil || len(e.Values.StackTrace.Frames) == 0 || e.Values.SampledThread == nil {
				t.Errorf("execution sample without stack or thread: %+v", e)
			}
		case "jdk.ObjectAllocationSample":
			alloc++
			if e.Values.ObjectClass == nil || e.Values.Weight <= 0 {
				t.Errorf("allocation sample without class or weight: %+v", e)
			}
		}
	}
	if exec == 0 || alloc == 0 || native == 0 {
		t.Fatalf("%d execution, %d allocation and %d native method samples", exec, alloc, native)
	}
	if f := events[0].Values.StackTrace.Frames[0]; f.Native() {
		t.Errorf("%s is not native", f.MethodName())
	}
	top := events[0].Values.StackTrace.Frames[0]
	if top.MethodName() == "" || top.Type == "" {
		t.Errorf("top frame %+v", top)
	}
	if _, err := ParseJFRJSON([]byte(`{"recording": `)); err == nil {
		t.Error("truncated JSON parsed")
	}
}
