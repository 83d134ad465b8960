package guard

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func sampleRecord() *Record {
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	return &Record{
		JVM: Process{PID: 1234, Start: 5678},
		Changes: []Change{{Kind: KindBoolFlag, Name: "DTraceAllocProbes", Old: "false", New: "true",
			By: "jvmkit alloc --switch-flags", At: at,
			Holders: []Holder{{Process: Process{PID: 99, Start: 7}, By: "jvmkit alloc --switch-flags", Guardian: 100}}}},
		Log: []Entry{{At: at, What: "set", Kind: KindBoolFlag, Name: "DTraceAllocProbes", Old: "false", New: "true",
			By: "jvmkit alloc --switch-flags", PID: 99}},
	}
}

func TestRecordRoundTrip(t *testing.T) {
	r := sampleRecord()
	b, err := r.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	got, err := Parse(b, r.JVM)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(r, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if _, err := Parse(b, Process{PID: 1234, Start: 1}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a record of another process with the same pid: %v", err)
	}
	if c := got.Find(KindBoolFlag, "DTraceAllocProbes"); c == nil || Holders(c) != "jvmkit alloc --switch-flags (pid 99)" {
		t.Errorf("Find/Holders: %+v", c)
	}
}

func TestParseRejects(t *testing.T) {
	for name, text := range map[string]string{
		"schema":   `{"schema":"other","jvm":{"pid":1,"start":2},"changes":[]}`,
		"pid":      `{"schema":"jvmkit.changes/v1","jvm":{"pid":0,"start":2},"changes":[]}`,
		"kind":     `{"schema":"jvmkit.changes/v1","jvm":{"pid":1,"start":2},"changes":[{"kind":"agent","name":"x","old":"a","new":"b"}]}`,
		"value":    `{"schema":"jvmkit.changes/v1","jvm":{"pid":1,"start":2},"changes":[{"kind":"bool-flag","name":"X","old":"1","new":"true"}]}`,
		"name":     `{"schema":"jvmkit.changes/v1","jvm":{"pid":1,"start":2},"changes":[{"kind":"bool-flag","name":"X=1","old":"false","new":"true"}]}`,
		"holder":   `{"schema":"jvmkit.changes/v1","jvm":{"pid":1,"start":2},"changes":[{"kind":"bool-flag","name":"X","old":"false","new":"true","holders":[{"pid":-1}]}]}`,
		"not json": `{"schema":`,
	} {
		if _, err := Parse([]byte(text), Process{}); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestFileName(t *testing.T) {
	p := Process{PID: 42, Start: 123456}
	if got, ok := parseFileName(fileName(p)); !ok || got != p {
		t.Errorf("parseFileName(%q) = %v, %v", fileName(p), got, ok)
	}
	for _, n := range []string{"lock", "42.json", "-1-2.json", "42-x.json", "042-1.json", ".42-1.json.abc", "42-1.json.tmp"} {
		if _, ok := parseFileName(n); ok {
			t.Errorf("parseFileName(%q) accepted", n)
		}
	}
}

func TestLogBounded(t *testing.T) {
	r := &Record{}
	for i := range 3 * maxLog {
		r.log(Entry{PID: i})
	}
	if len(r.Log) != maxLog || r.Log[0].PID != 2*maxLog || r.Last("", "").PID != 3*maxLog-1 {
		t.Errorf("log of %d entries, first pid %d", len(r.Log), r.Log[0].PID)
	}
}

func FuzzParse(f *testing.F) {
	b, _ := sampleRecord().Marshal()
	f.Add(b)
	seeds, _ := filepath.Glob("testdata/*.json")
	for _, s := range seeds {
		if b, err := os.ReadFile(s); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := Parse(b, Process{})
		if err != nil {
			return
		}
		out, err := r.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Parse(out, r.JVM); err != nil {
			t.Fatalf("a parsed record does not parse again: %v\n%s", err, out)
		}
	})
}
