package jvmkit

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/jvmkit/jvmkit/cmd/internal/cliutil"
)

// flameTestdata is the flame package's fixtures (see flame/fold_test.go).
var flameTestdata = filepath.Join("..", "..", "..", "flame", "testdata", "fold")

func runJvmkit(t *testing.T, stdin []byte, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	if stdin != nil {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			w.Write(stdin)
			w.Close()
		}()
		old := os.Stdin
		os.Stdin = r
		defer func() { os.Stdin = old; r.Close() }()
	}
	var out, errOut bytes.Buffer
	code = Main(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestFoldCommand(t *testing.T) {
	synthetic := filepath.Join(flameTestdata, "synthetic.txt")
	for _, c := range []struct {
		args   []string
		golden string
	}{
		{[]string{"fold", synthetic}, "synthetic.plain.folded"},
		{[]string{"fold", "--all", "--addrs", synthetic}, "synthetic.all-addrs.folded"},
		{[]string{"fold", "--kernel", "--pid", synthetic}, "synthetic.kernel-pid.folded"},
		{[]string{"fold", "--event-filter=cycles", synthetic}, "synthetic.cycles.folded"},
		{[]string{"fold", "--event", "cycles", synthetic}, "synthetic.cycles.folded"},
		{[]string{"fold", "--no-period", synthetic}, "synthetic.count.folded"},
		{[]string{"fold", "--tid", "--all", filepath.Join(flameTestdata, "jvm-fields.txt")}, "jvm-fields.tid-all.folded"},
		{[]string{"fold", "--jit", "--no-split", filepath.Join(flameTestdata, "jvm-unfold.txt")}, "jvm-unfold.nosplit-jit.folded"},
	} {
		code, out, stderr := runJvmkit(t, nil, c.args...)
		if code != 0 {
			t.Errorf("%q: exit %d: %s", c.args, code, stderr)
			continue
		}
		if want := string(readFile(t, filepath.Join(flameTestdata, c.golden))); out != want {
			t.Errorf("%q: output differs from %s:\n%s", c.args, c.golden, out)
		}
	}

	// Warnings: the other event left out, the sample cut short.
	_, _, stderr := runJvmkit(t, nil, "fold", synthetic)
	for _, want := range []string{"left out 1 of other events (cycles: 1); choose with --event", "ends inside a sample"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr %q lacks %q", stderr, want)
		}
	}

	// Standard input, with and without "-".
	in := readFile(t, synthetic)
	want := string(readFile(t, filepath.Join(flameTestdata, "synthetic.plain.folded")))
	for _, args := range [][]string{{"fold"}, {"fold", "-"}} {
		if code, out, stderr := runJvmkit(t, in, args...); code != 0 || out != want {
			t.Errorf("%q from stdin: exit %d, %s\n%s", args, code, stderr, out)
		}
	}
}

func TestFlameCommand(t *testing.T) {
	dir := t.TempDir()
	fields := filepath.Join(flameTestdata, "jvm-fields.txt")

	// perf script to SVG; the format follows the output's name.
	svg := filepath.Join(dir, "out.svg")
	if code, _, stderr := runJvmkit(t, nil, "flame", fields, "-o", svg, "--title", "Burn <test>", "--reverse"); code != 0 {
		t.Fatalf("svg: exit %d: %s", code, stderr)
	}
	b := readFile(t, svg)
	for _, want := range []string{"<?xml", "Burn &lt;test&gt;", "117 samples of cpu-clock, weighted by period", "<script"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("svg lacks %q", want)
		}
	}

	// Folded input (detected) to pprof.
	pb := filepath.Join(dir, "cpu.pb.gz")
	if code, _, stderr := runJvmkit(t, nil, "flame", filepath.Join(flameTestdata, "jvm-fields.plain.folded"), "-o", pb); code != 0 {
		t.Fatalf("pprof: exit %d: %s", code, stderr)
	}
	p, err := profile.Parse(bytes.NewReader(readFile(t, pb)))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Sample) == 0 || p.SampleType[0].Type != "samples" {
		t.Errorf("profile: %d samples of %v", len(p.Sample), p.SampleType[0])
	}

	// flame folds perf script with --kernel and --jit by default; stdin, folded to stdout.
	_, want, _ := runJvmkit(t, nil, "fold", "--all", fields)
	if code, out, stderr := runJvmkit(t, readFile(t, fields), "flame", "--format", "folded"); code != 0 || out != want {
		t.Errorf("flame --format folded: exit %d, %s; output differs from fold --all", code, stderr)
	}
	// Folded input stays as it is, whatever the fold flags.
	folded := filepath.Join(flameTestdata, "synthetic.all-addrs.folded")
	if code, out, _ := runJvmkit(t, nil, "flame", "--format", "folded", "--pid", folded); code != 0 || out != string(readFile(t, folded)) {
		t.Errorf("folded round trip: exit %d\n%s", code, out)
	}
	// --input perf on folded text fails with the line.
	if code, _, stderr := runJvmkit(t, nil, "flame", "--input", "perf", folded); code != cliutil.ExitFailed || !strings.Contains(stderr, "line 1:") {
		t.Errorf("--input perf on folded: exit %d: %s", code, stderr)
	}
}

// TestFoldCommandCutInput: perf script output cut in the middle of a line (a killed perf script, a full
// disk: head -c 100000) folds its complete samples, with the warning of a sample cut at a line end.
func TestFoldCommandCutInput(t *testing.T) {
	data := readFile(t, filepath.Join(flameTestdata, "jvm-fields.txt"))
	cut := data[:100000]
	if cut[len(cut)-1] == '\n' {
		t.Fatal("the cut falls on a line end; choose another")
	}
	dir := t.TempDir()
	trunc, complete := filepath.Join(dir, "trunc.txt"), filepath.Join(dir, "complete.txt")
	if err := os.WriteFile(trunc, cut, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(complete, cut[:bytes.LastIndex(cut, []byte("\n\n"))+2], 0o644); err != nil {
		t.Fatal(err)
	}
	_, want, _ := runJvmkit(t, nil, "fold", complete)
	for _, args := range [][]string{
		{"fold", trunc},
		{"fold", "--lenient", trunc},
		{"flame", "--kernel=false", "--jit=false", "--format", "folded", trunc},
	} {
		code, out, stderr := runJvmkit(t, nil, args...)
		if code != 0 || out != want || !strings.Contains(stderr, "the input ends inside a sample; left it out") {
			t.Errorf("%q: exit %d, stderr %q; output equal to the complete samples' %v", args, code, stderr, out == want)
		}
	}
}

func TestFlameCommandErrors(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.txt")
	if err := os.WriteFile(garbage, []byte("java 1 2.0: 1 cpu-clock:\n\t7f00 f (dso)\n\nthis is not perf script\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.txt")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	fields := filepath.Join(flameTestdata, "jvm-fields.txt")
	for _, c := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"flame", "--format", "png", fields}, cliutil.ExitUsage, `--format "png"`},
		{[]string{"flame", "--input", "json", fields}, cliutil.ExitUsage, `--input "json"`},
		{[]string{"flame", "--width", "50", fields}, cliutil.ExitUsage, "--width 50"},
		{[]string{"flame", fields, fields}, cliutil.ExitUsage, "arg(s)"},
		{[]string{"fold", "--bogus", fields}, cliutil.ExitUsage, "unknown flag"},
		{[]string{"fold", filepath.Join(dir, "missing.txt")}, cliutil.ExitFailed, "no such file"},
		{[]string{"fold", garbage}, cliutil.ExitFailed, "line 4: neither a sample header nor a frame"},
		{[]string{"flame", garbage, "-o", filepath.Join(dir, "g.svg")}, cliutil.ExitFailed, "line 4"},
		{[]string{"flame", empty}, cliutil.ExitFailed, "no stacks to draw"},
	} {
		code, _, stderr := runJvmkit(t, nil, c.args...)
		if code != c.code || !strings.Contains(stderr, c.stderr) || !strings.HasPrefix(stderr, "jvmkit: ") {
			t.Errorf("%q: exit %d, stderr %q; want %d, %q", c.args, code, stderr, c.code, c.stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "g.svg")); !os.IsNotExist(err) {
		t.Errorf("output of a failed run: %v", err)
	}
	// --lenient skips the garbage.
	if code, out, stderr := runJvmkit(t, nil, "fold", "--lenient", garbage); code != 0 || out != "java;f 1\n" || !strings.Contains(stderr, "skipped 1") {
		t.Errorf("--lenient: exit %d, %q, %s", code, out, stderr)
	}
}
