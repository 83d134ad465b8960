package flame_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/jvmkit/jvmkit/flame"
	"github.com/jvmkit/jvmkit/internal/testutil"
)

func foldedFile(t *testing.T, path string, opts flame.FoldOptions) *flame.Folded {
	t.Helper()
	in, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	f, _, err := flame.Fold(in, opts)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// topLeaves are the frames with the largest flat count, blanks trimmed as pprof -top prints them.
func topLeaves(f *flame.Folded) map[string]bool {
	flat := make(map[string]int64)
	var max int64
	for _, s := range f.Stacks {
		name := strings.TrimSpace(s.Frames[len(s.Frames)-1])
		flat[name] += s.Count
		max = maxInt(max, flat[name])
	}
	top := make(map[string]bool)
	for name, n := range flat {
		if n == max {
			top[name] = true
		}
	}
	return top
}

func maxInt(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

func TestWritePprof(t *testing.T) {
	for _, c := range []struct {
		name      string
		opts      flame.FoldOptions
		typ, unit string
	}{
		{"period", flame.FoldOptions{JIT: true}, "cpu", "nanoseconds"},
		{"count", flame.FoldOptions{Count: true}, "samples", "count"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := foldedFile(t, filepath.Join("testdata", "fold", "jvm-unfold.txt"), c.opts)
			var buf bytes.Buffer
			if err := flame.WritePprof(&buf, f, flame.PprofOptions{}); err != nil {
				t.Fatal(err)
			}
			if b := buf.Bytes(); len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
				t.Fatal("not gzipped")
			}
			p, err := profile.Parse(bytes.NewReader(buf.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			if len(p.SampleType) != 1 || p.SampleType[0].Type != c.typ || p.SampleType[0].Unit != c.unit {
				t.Errorf("sample type %v, want %s/%s", p.SampleType[0], c.typ, c.unit)
			}
			if len(p.Sample) != len(f.Stacks) {
				t.Fatalf("%d samples, want %d", len(p.Sample), len(f.Stacks))
			}
			names := make(map[string]bool)
			for _, fn := range p.Function {
				if names[fn.SystemName] {
					t.Errorf("function %q twice", fn.SystemName)
				}
				names[fn.SystemName] = true
				if strings.Contains(fn.Name, "_[") {
					t.Errorf("function name %q keeps its annotation", fn.Name)
				}
			}
			if len(p.Location) != len(p.Function) {
				t.Errorf("%d locations for %d functions", len(p.Location), len(p.Function))
			}
			// Samples come back in order, their locations leaf first.
			var total int64
			for i, s := range p.Sample {
				want := f.Stacks[i]
				var got []string
				for j := len(s.Location) - 1; j >= 0; j-- {
					got = append(got, s.Location[j].Line[0].Function.SystemName)
				}
				if strings.Join(got, ";") != strings.Join(want.Frames, ";") || s.Value[0] != want.Count {
					t.Fatalf("sample %d: %q %d, want %q %d", i, got, s.Value[0], want.Frames, want.Count)
				}
				total += s.Value[0]
			}
			if total != f.Total() {
				t.Errorf("total %d, want %d", total, f.Total())
			}
		})
	}
}

// TestPprofTool runs go tool pprof -top on a written profile and checks its top function.
func TestPprofTool(t *testing.T) {
	goTool := testutil.MustHaveTool(t, "go")
	f := foldedFile(t, filepath.Join("testdata", "fold", "jvm-fields.txt"), flame.FoldOptions{})
	path := filepath.Join(t.TempDir(), "cpu.pb.gz")
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := flame.WritePprof(out, f, flame.PprofOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(goTool, "tool", "pprof", "-top", "-nodecount=3", path)
	cmd.Env = append(os.Environ(), "PPROF_TMPDIR="+t.TempDir())
	top, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof: %v\n%s", err, top)
	}
	// The first row after the "flat flat% sum% cum cum%" header names the top function.
	lines := strings.Split(string(top), "\n")
	var row string
	for i, l := range lines {
		if strings.Contains(l, "flat%") && i+1 < len(lines) {
			row = lines[i+1]
			break
		}
	}
	fields := strings.Fields(row)
	if len(fields) < 6 {
		t.Fatalf("no top row in:\n%s", top)
	}
	if got, want := strings.Join(fields[5:], " "), topLeaves(f); !want[got] {
		t.Errorf("top function %q, want one of %v\n%s", got, want, top)
	}
	if !strings.Contains(string(top), "Type: cpu") {
		t.Errorf("no cpu type:\n%s", top)
	}
}

// TestPprofCPUPeriod: counts of cpu-clock samples get a cpu/nanoseconds sample type (count x period,
// the default), the period and the window, so that pprof shows time (a user trial found Period: 0).
func TestPprofCPUPeriod(t *testing.T) {
	f := &flame.Folded{Stacks: []flame.Stack{{Frames: []string{"main", "a"}, Count: 3}, {Frames: []string{"main", "b"}, Count: 1}}}
	start := time.Unix(1700000000, 0)
	p, err := flame.Pprof(f, flame.PprofOptions{SampleType: "samples", Unit: "count", CPUPeriod: 10 * time.Millisecond,
		Start: start, End: start.Add(20 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.SampleType) != 2 || p.SampleType[1].Type != "cpu" || p.DefaultSampleType != "cpu" || p.Period != 1e7 ||
		p.PeriodType == nil || p.PeriodType.Unit != "nanoseconds" || p.DurationNanos != 20e9 || p.TimeNanos != start.UnixNano() {
		t.Fatalf("profile: types %v default %q period %d %v duration %d time %d", p.SampleType, p.DefaultSampleType, p.Period,
			p.PeriodType, p.DurationNanos, p.TimeNanos)
	}
	for _, s := range p.Sample {
		if s.Value[1] != s.Value[0]*1e7 {
			t.Errorf("sample %v: cpu value is not count x period", s.Value)
		}
	}
}
