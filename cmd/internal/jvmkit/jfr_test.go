package jvmkit

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jvmkit/jvmkit/flame"
	"github.com/jvmkit/jvmkit/internal/testutil"
	"github.com/jvmkit/jvmkit/jfr"
)

// jfrFixture unpacks one of the jfr package's recordings (jfr/testdata/README.md) into a temporary
// directory.
func jfrFixture(t *testing.T, name string) string {
	t.Helper()
	data := testutil.ReadGzip(t, filepath.Join("..", "..", "..", "jfr", "testdata", name+".jfr.gz"))
	path := filepath.Join(t.TempDir(), name+".jfr")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestJfrSummaryPrint(t *testing.T) {
	rec := jfrFixture(t, "demo17")
	code, out, stderr := runJvmkit(t, nil, "jfr", "summary", rec)
	if code != 0 || !strings.Contains(out, " Version: 2.1\n") || !strings.Contains(out, " jdk.ExecutionSample ") {
		t.Fatalf("summary: %d %q %q", code, out, stderr)
	}
	code, out, stderr = runJvmkit(t, nil, "--json", "jfr", "summary", rec)
	var sum struct {
		Schema string
		Data   struct {
			Types []struct {
				Name  string
				Count int
			}
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &sum) != nil || sum.Schema != "jvmkit.jfr.summary/v1" {
		t.Fatalf("summary --json: %d %q %q", code, out, stderr)
	}
	samples := -1
	for _, ty := range sum.Data.Types {
		if ty.Name == "jdk.ExecutionSample" {
			samples = ty.Count
		}
	}
	code, out, stderr = runJvmkit(t, nil, "jfr", "print", "--json", "--events", "ExecutionSample", rec)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != samples {
		t.Fatalf("print --json: exit %d, %d lines for %d samples; %s", code, len(lines), samples, stderr)
	}
	for _, l := range lines {
		var e struct {
			Type   string
			Values map[string]any
		}
		if err := json.Unmarshal([]byte(l), &e); err != nil || e.Type != "jdk.ExecutionSample" || e.Values["stackTrace"] == nil {
			t.Fatalf("line %q: %v", l, err)
		}
	}
	code, out, _ = runJvmkit(t, nil, "jfr", "print", "--categories", "Java Application", "--stack-depth", "2", rec)
	if code != 0 || !strings.Contains(out, "jdk.ThreadSleep {") || strings.Contains(out, "jdk.ExecutionSample {") || !strings.Contains(out, "    ...\n") {
		t.Errorf("print text: %d\n%.2000s", code, out)
	}
}

func TestJfrDamaged(t *testing.T) {
	rec := jfrFixture(t, "demo17")
	data, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(t.TempDir(), "cut.jfr")
	if err := os.WriteFile(cut, data[:len(data)-3000], 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runJvmkit(t, nil, "jfr", "print", "--json", cut)
	if code != 1 || !strings.Contains(stderr, "jvmkit: "+cut+": chunk 0, offset ") || strings.Count(out, "\n") == 0 {
		t.Errorf("cut recording: exit %d, %d lines, stderr %q", code, strings.Count(out, "\n"), stderr)
	}
	notJFR := filepath.Join(t.TempDir(), "x.jfr")
	os.WriteFile(notJFR, []byte("hello"), 0o644)
	if code, _, stderr := runJvmkit(t, nil, "jfr", "summary", notJFR); code != 1 || !strings.Contains(stderr, "not a flight recording") {
		t.Errorf("not a recording: exit %d %q", code, stderr)
	}
	if code, _, stderr := runJvmkit(t, nil, "jfr", "flame", "--event", "bogus", rec); code != 2 {
		t.Errorf("bad --event: exit %d %q", code, stderr)
	}
}

func TestJfrLeaks(t *testing.T) {
	rec := jfrFixture(t, "small17")
	code, out, stderr := runJvmkit(t, nil, "jfr", "leaks", rec)
	first, _, _ := strings.Cut(strings.SplitN(out, "\n#2 ", 2)[0], "allocated at")
	if code != 0 || !strings.Contains(first, ".LEAK (static) -> java.util.ArrayList") || !strings.Contains(first, "Leak$LeakedItem") {
		t.Fatalf("leaks: %d %s\n%s", code, stderr, out)
	}
	code, out, _ = runJvmkit(t, nil, "--json", "jfr", "leaks", rec)
	var doc struct {
		Data struct {
			Samples int
			Groups  []jfr.LeakGroup
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || doc.Data.Samples == 0 || doc.Data.Groups[0].Root == nil {
		t.Fatalf("leaks --json: %d %.500s", code, out)
	}
}

// TestJfrFlame writes the CPU samples of the Demo recording in every format: the folded stacks sum to
// the samples, go tool pprof reads the profile, and the SVG renders in Chromium.
func TestJfrFlame(t *testing.T) {
	rec := jfrFixture(t, "demo17")
	dir := t.TempDir()
	folded := filepath.Join(dir, "cpu.folded")
	if code, _, stderr := runJvmkit(t, nil, "jfr", "flame", rec, "--event", "cpu", "-o", folded); code != 0 {
		t.Fatalf("flame folded: %d %s", code, stderr)
	}
	f, err := os.Open(folded)
	if err != nil {
		t.Fatal(err)
	}
	fl, err := flame.ParseFolded(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	_, out, _ := runJvmkit(t, nil, "jfr", "print", "--json", "--events", "jdk.ExecutionSample", rec)
	if n := int64(strings.Count(out, "\n")); fl.Total() != n || n == 0 {
		t.Errorf("folded stacks sum to %d, the recording has %d execution samples", fl.Total(), n)
	}
	for _, kind := range []string{"alloc", "lock", "wall"} {
		if code, _, stderr := runJvmkit(t, nil, "jfr", "flame", rec, "--event", kind, "-o", filepath.Join(dir, kind+".folded")); code != 0 {
			t.Errorf("flame --event %s: %d %s", kind, code, stderr)
		}
	}

	pb := filepath.Join(dir, "cpu.pb.gz")
	if code, _, stderr := runJvmkit(t, nil, "jfr", "flame", rec, "-o", pb); code != 0 {
		t.Fatalf("flame pprof: %d %s", code, stderr)
	}
	goTool := testutil.MustHaveTool(t, "go")
	top, err := exec.Command(goTool, "tool", "pprof", "-top", pb).CombinedOutput()
	if err != nil || !strings.Contains(string(top), "Type: samples") || !strings.Contains(string(top), "Demo.") {
		t.Errorf("go tool pprof -top: %v\n%s", err, top)
	}

	svg := filepath.Join(dir, "cpu.svg")
	if code, _, stderr := runJvmkit(t, nil, "jfr", "flame", rec, "-o", svg); code != 0 {
		t.Fatalf("flame svg: %d %s", code, stderr)
	}
	chromium := testutil.MustHaveTool(t, "chromium")
	shot := filepath.Join(dir, "shot.png")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--screenshot="+shot, "--window-size=1200,800", "file://"+svg)
	cmd.WaitDelay = 10 * time.Second
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, b)
	}
	b, err := os.ReadFile(shot)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	// Java frames are green: count the pixels whose green dominates, the colour of JIT and
	// interpreted frames in flame.js's palette.
	green := 0
	bd := img.Bounds()
	for y := bd.Min.Y; y < bd.Max.Y; y++ {
		for x := bd.Min.X; x < bd.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if g>>8 > 150 && r>>8 < 140 && bl>>8 < 110 {
				green++
			}
		}
	}
	if green < 2000 {
		t.Errorf("the SVG shows %d green (Java frame) pixels", green)
	}
}

// TestJfrCutLost: a recording cut where the stack traces' methods are still to come prints them as
// lost, not as nulls, and says how many events are affected; the flame graph names the loss.
func TestJfrCutLost(t *testing.T) {
	rec := jfrFixture(t, "demo17")
	data, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(t.TempDir(), "cut.jfr")
	if err := os.WriteFile(cut, data[:110000], 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runJvmkit(t, nil, "jfr", "print", "--events", "ExecutionSample", cut)
	if code != 1 || !strings.Contains(out, "[lost: constant pool cut off] line: ") || !strings.Contains(stderr, "events printed have") {
		t.Errorf("print: exit %d, stderr %q\n%.1000s", code, stderr, out)
	}
	code, out, stderr = runJvmkit(t, nil, "jfr", "print", "--json", "--events", "ExecutionSample", cut)
	if code != 1 || !strings.Contains(out, `{"lost":"constant pool cut off","type":"jdk.types.Method","key":`) || !strings.Contains(out, `},"lost":`) {
		t.Errorf("print --json: exit %d, stderr %q\n%.1000s", code, stderr, out)
	}
	folded := filepath.Join(t.TempDir(), "cpu.folded")
	code, _, stderr = runJvmkit(t, nil, "jfr", "flame", "--event", "cpu", "-o", folded, cut)
	b, _ := os.ReadFile(folded)
	if code != 1 || !strings.Contains(string(b), ";[method lost: recording cut off]") || strings.Contains(string(b), "[unknown]") || !strings.Contains(stderr, "refer to constants the damage lost") {
		t.Errorf("flame: exit %d, stderr %q\n%.1000s", code, stderr, b)
	}
}

// TestJfrCPUTime: a JDK 25 recording with both samplers draws jdk.CPUTimeSample, says that it left
// jdk.ExecutionSample out and how many samples the JVM lost; print --json writes doubles as Java does.
func TestJfrCPUTime(t *testing.T) {
	rec := jfrFixture(t, "cpu25")
	code, _, stderr := runJvmkit(t, nil, "jfr", "flame", "--event", "cpu", "-o", filepath.Join(t.TempDir(), "cpu.folded"), rec)
	if code != 0 || !strings.Contains(stderr, " jdk.CPUTimeSample") || !strings.Contains(stderr, "jdk.ExecutionSample events not drawn") || !strings.Contains(stderr, "samples lost by the JVM (jdk.CPUTimeSamplesLost)") {
		t.Errorf("flame: exit %d, stderr %q", code, stderr)
	}
	code, out, _ := runJvmkit(t, nil, "jfr", "print", "--json", "--events", "DoubleFlag", rec)
	if code != 0 || !strings.Contains(out, `"value":20.0,`) {
		t.Errorf("print --json: exit %d\n%.1000s", code, out)
	}
}
