// Package scripts holds the project's shell workflows; its tests run them end to end.
package scripts

import (
	"bytes"
	"encoding/xml"
	"errors"
	"image"
	_ "image/png" // the screenshot
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jvmkit/jvmkit/internal/testutil"
)

func TestMain(m *testing.M) { testutil.Main(m) }

// buildTools builds gjmaps and jvmkit into a temporary directory.
func buildTools(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("go", "build", "-trimpath", "-o", dir+"/", "../cmd/gjmaps", "../cmd/jvmkit").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return dir
}

// TestJavaFlames runs scripts/java-flames on the demo workload and checks what it makes: folded stacks
// with the workload's Java frames named, an SVG that is well-formed XML and that headless Chromium
// renders, and a pprof profile that `go tool pprof -top` reads.
func TestJavaFlames(t *testing.T) {
	testutil.MustHaveRoot(t)
	testutil.MustHaveTool(t, "perf")
	goTool := testutil.MustHaveTool(t, "go")
	chromium := testutil.MustHaveTool(t, "chromium")
	bin := buildTools(t)
	jdk := testutil.JDK17(t)
	j := testutil.StartJVM(t, jdk, testutil.JVMOptions{Main: "Demo", Args: []string{"40"}, JVMArgs: []string{"-XX:+PreserveFramePointer"}})
	t.Cleanup(func() {
		_ = exec.Command(bin+"/gjmaps", "--clean", "-p", strconv.Itoa(j.PID)).Run()
	})
	time.Sleep(3 * time.Second)
	out := filepath.Join(t.TempDir(), "flames")
	cmd := exec.Command("./java-flames", "-p", strconv.Itoa(j.PID), "-d", "3", "-F", "199", "-o", out)
	cmd.Env = append(os.Environ(), "JVMKIT_BIN="+bin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("java-flames: %v\n%s", err, stderr.String())
	}
	t.Logf("java-flames: %s%s", stdout, stderr.String())

	folded, err := os.ReadFile(filepath.Join(out, "perf.folded"))
	if err != nil {
		t.Fatal(err)
	}
	var total, java, demo int64
	for _, line := range strings.Split(strings.TrimSpace(string(folded)), "\n") {
		i := strings.LastIndexByte(line, ' ')
		n, err := strconv.ParseInt(line[i+1:], 10, 64)
		if i < 0 || err != nil {
			t.Fatalf("bad folded line %q", line)
		}
		total += n
		if strings.Contains(line, "_[j]") {
			java += n
		}
		if strings.Contains(line, "Demo") {
			demo += n
		}
	}
	t.Logf("folded: %d weight, %.0f%% with JIT frames, %.0f%% in Demo code", total, 100*float64(java)/float64(total), 100*float64(demo)/float64(total))
	if java*5 < total || demo == 0 {
		t.Errorf("too few named Java frames: %d JIT and %d Demo of %d", java, demo, total)
	}

	svgPath := filepath.Join(out, "flame.svg")
	svg, err := os.ReadFile(svgPath)
	if err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(bytes.NewReader(svg))
	rects := 0
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("flame.svg is not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "rect" {
			rects++
		}
	}
	if rects < 10 || !bytes.Contains(svg, []byte("Demo")) {
		t.Errorf("flame.svg: %d rects, Demo named: %v", rects, bytes.Contains(svg, []byte("Demo")))
	}
	png := filepath.Join(t.TempDir(), "flame.png")
	shot := exec.Command(chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+t.TempDir(), "--window-size=1200,900", "--screenshot="+png, "file://"+svgPath)
	if b, err := shot.CombinedOutput(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, b)
	}
	f, err := os.Open(png)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, _, err := image.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	colours := map[[3]uint32]bool{}
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y += 4 {
		for x := bounds.Min.X; x < bounds.Max.X; x += 4 {
			r, g, b, _ := img.At(x, y).RGBA()
			colours[[3]uint32{r >> 8, g >> 8, b >> 8}] = true
		}
	}
	t.Logf("screenshot %v: %d colours", bounds.Size(), len(colours))
	if len(colours) < 8 {
		t.Errorf("the rendered flame graph has %d colours: blank?", len(colours))
	}

	top, err := exec.Command(goTool, "tool", "pprof", "-top", filepath.Join(out, "profile.pb.gz")).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof -top: %v\n%s", err, top)
	}
	if !strings.Contains(string(top), "flat%") || !strings.Contains(string(top), "_[j]") && !strings.Contains(string(top), "Demo") && !strings.Contains(string(top), "java") {
		t.Errorf("go tool pprof -top shows no Java frame:\n%s", top)
	}
}

// TestJavaFlamesUsage: bad arguments are refused with exit 2 and nothing recorded.
func TestJavaFlamesUsage(t *testing.T) {
	for _, args := range [][]string{{}, {"-d", "x", "-a"}, {"--bogus"}, {"-a", "--log"}, {"-p", "1;2"}} {
		err := exec.Command("./java-flames", args...).Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Errorf("java-flames %q: %v, want exit 2", args, err)
		}
	}
}

// jitFrames counts the frames of perf script text in perf maps: all, those with a name, and the
// names per line index (for comparing two texts of the same samples).
func jitFrames(text string) (total, named int, names map[int]string) {
	names = map[int]string{}
	for i, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "\t") && !strings.HasPrefix(line, " ") || !strings.HasSuffix(line, ".map)") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 3 || !strings.HasPrefix(f[len(f)-1], "(/tmp/perf-") {
			continue
		}
		name := strings.Join(f[1:len(f)-1], " ")
		if j := strings.LastIndex(name, "+0x"); j > 0 {
			name = name[:j]
		}
		name = strings.TrimSuffix(strings.TrimSuffix(name, "_[j]"), "_[i]") // gjmaps --annotate
		total++
		if name != "[unknown]" {
			named++
		}
		names[i] = name
	}
	return total, named, names
}

// TestJavaFlamesLog runs scripts/java-flames --log on JitChurn, whose JIT code is replaced and unloaded
// all the time: the JIT log recorded around perf record names the frames that the perf map written at
// the end names wrongly or not at all. It prints the share of perf map frames named before and after
// jvmkit symbolize, and checks that symbolize renamed frames and that the folded stacks name JitChurn's
// Java frames.
func TestJavaFlamesLog(t *testing.T) {
	testutil.MustHaveRoot(t)
	testutil.MustHaveTool(t, "perf")
	bin := buildTools(t)
	jdk := testutil.JDK17(t)
	j := testutil.StartJVM(t, jdk, testutil.JVMOptions{Main: "JitChurn",
		JVMArgs: []string{"-XX:+PreserveFramePointer", "-XX:ReservedCodeCacheSize=16m", "-Xmx256m"}})
	t.Cleanup(func() {
		_ = exec.Command(bin+"/gjmaps", "--clean", "-p", strconv.Itoa(j.PID)).Run()
	})
	out := filepath.Join(t.TempDir(), "flames")
	cmd := exec.Command("./java-flames", "-p", strconv.Itoa(j.PID), "-d", "5", "-F", "199", "--log", "-o", out)
	cmd.Env = append(os.Environ(), "JVMKIT_BIN="+bin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("java-flames --log: %v\n%s", err, stderr.String())
	}
	t.Logf("java-flames --log: %s%s", stdout, stderr.String())
	if !strings.Contains(stderr.String(), "loads") {
		t.Errorf("java-flames --log did not print the recorder's summary")
	}

	read := func(name string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	raw, symd := read("perf.raw.script"), read("perf.script")
	total, rawNamed, rawNames := jitFrames(raw)
	total2, logNamed, logNames := jitFrames(symd)
	if total != total2 || strings.Count(raw, "\n") != strings.Count(symd, "\n") {
		t.Fatalf("symbolize changed the layout: %d perf map frames before, %d after", total, total2)
	}
	var renamed, corrected int
	for i, before := range rawNames {
		if after := logNames[i]; after != before {
			renamed++
			if before != "[unknown]" {
				corrected++ // the end-of-profile map named other code
			}
		}
	}
	pct := func(n int) float64 { return 100 * float64(n) / float64(max(total, 1)) }
	t.Logf("%d perf map frames: named %.1f%% by the map alone, %.1f%% with the log; symbolize renamed %d (%.1f%%), %d of them named otherwise by the map",
		total, pct(rawNamed), pct(logNamed), renamed, pct(renamed), corrected)
	if total == 0 || renamed == 0 || logNamed < rawNamed {
		t.Errorf("symbolize renamed %d of %d perf map frames (named: %d before, %d after)", renamed, total, rawNamed, logNamed)
	}

	var weight, churn int64
	for _, line := range strings.Split(strings.TrimSpace(read("perf.folded")), "\n") {
		i := strings.LastIndexByte(line, ' ')
		n, err := strconv.ParseInt(line[i+1:], 10, 64)
		if i < 0 || err != nil {
			t.Fatalf("bad folded line %q", line)
		}
		weight += n
		if strings.Contains(line, "JitChurnHot") {
			churn += n
		}
	}
	t.Logf("folded: %.1f%% of the weight in JitChurnHot code", 100*float64(churn)/float64(max(weight, 1)))
	if churn*5 < weight {
		t.Errorf("folded: %d of %d in JitChurnHot frames, want at least a fifth", churn, weight)
	}
}

// TestJavaFlamesArguments: combinations that would give a wrong flame graph are refused before anything
// runs (--log renames JIT frames by compiled method, which would drop --unfold's inlining chains).
func TestJavaFlamesArguments(t *testing.T) {
	for _, args := range [][]string{{"-p", "1", "--log", "--unfold"}, {"--log", "-a"}} {
		var stderr bytes.Buffer
		cmd := exec.Command("./java-flames", args...)
		cmd.Stderr = &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(stderr.String(), "--log") {
			t.Errorf("java-flames %v: %v, %q; want exit 2 naming --log", args, err, stderr.String())
		}
	}
}

// TestJavaFlamesJVMExits: the JVM exits while perf records it (perf record then ends early with status
// 143): the script still makes the flame graph of what was recorded, the JIT log naming the JVM's
// frames, instead of stopping with nothing (a user trial's container killed mid-profile).
func TestJavaFlamesJVMExits(t *testing.T) {
	testutil.MustHaveRoot(t)
	testutil.MustHaveTool(t, "perf")
	bin := buildTools(t)
	jdk := testutil.JDK17(t)
	j := testutil.StartJVM(t, jdk, testutil.JVMOptions{Main: "Demo", Args: []string{"60"}})
	t.Cleanup(func() {
		_ = exec.Command(bin+"/gjmaps", "--clean", "-p", strconv.Itoa(j.PID)).Run()
	})
	out := filepath.Join(t.TempDir(), "flames")
	cmd := exec.Command("./java-flames", "-p", strconv.Itoa(j.PID), "-d", "20", "-F", "199", "--log", "-o", out)
	cmd.Env = append(os.Environ(), "JVMKIT_BIN="+bin)
	var stderr testutil.SyncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Stopped once perf records (the script says so before it starts perf).
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(stderr.String(), "recording -p") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // samples to show
	j.Stop()
	err := cmd.Wait()
	t.Logf("java-flames: %v\n%s", err, stderr.String())
	if err != nil {
		t.Fatalf("java-flames with a JVM that exited: %v", err)
	}
	if !strings.Contains(stderr.String(), "ended early") {
		t.Errorf("java-flames did not say that perf record ended early")
	}
	folded, err := os.ReadFile(filepath.Join(out, "perf.folded"))
	if err != nil || !strings.Contains(string(folded), "Demo") {
		t.Errorf("perf.folded without the JVM's Java frames (%v):\n%.1000s", err, folded)
	}
	if st, err := os.Stat(filepath.Join(out, "flame.svg")); err != nil || st.Size() == 0 {
		t.Errorf("flame.svg: %v", err)
	}
}
