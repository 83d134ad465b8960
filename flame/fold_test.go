package flame_test

import (
	"bytes"
	"errors"
	"flag"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/jvmkit/jvmkit/flame"
)

var (
	update = flag.Bool("update", false, "rewrite the golden files under testdata/fold")
	// With -stackcollapse=/path/to/stackcollapse-perf.pl (brendangregg/FlameGraph, not in this
	// repository: it is CDDL), TestFoldGolden also runs the script on each input whose case says it is
	// compatible, and requires its output to equal ours line for line.
	stackcollapse = flag.String("stackcollapse", "", "stackcollapse-perf.pl to compare Fold with")
)

// foldCases are the golden tests. The inputs:
//   - jvm-default.txt: `perf script` (default fields) of a real JDK 17 recording of testdata/Burn.java
//     (see testdata/record.sh), every 100th sample, JIT frames named by Compiler.perfmap;
//   - jvm-fields.txt: the same recording, `perf script -F comm,pid,tid,time,period,event,ip,sym,dso --ns`,
//     every 50th sample;
//   - jvm-unfold.txt: as jvm-fields.txt, JIT frames named by `gjmaps --unfold --annotate` ("->" chains);
//   - synthetic.txt: by hand: kernel, vdso and vmlinux frames, [unknown], "->" chains, two events, odd
//     names (quotes, ";", <, >, &, UTF-8, Go methods, anonymous namespaces), comms with blanks, period 0,
//     no period, an empty sample and a sample cut short at the end of the input.
//
// A case with perl arguments was checked line for line against stackcollapse-perf.pl (FlameGraph commit
// 41fee1f) run with those arguments; the others use options the script does not have.
var foldCases = []struct {
	input, name string
	opts        flame.FoldOptions
	perl        []string // stackcollapse-perf.pl arguments giving the same output; nil: none does
}{
	{"jvm-default.txt", "plain", flame.FoldOptions{}, []string{}},
	{"jvm-default.txt", "pid", flame.FoldOptions{PID: true}, []string{"--pid"}},
	{"jvm-default.txt", "all", flame.FoldOptions{Kernel: true, JIT: true}, []string{"--all"}},
	{"jvm-fields.txt", "plain", flame.FoldOptions{}, []string{}},
	{"jvm-fields.txt", "tid-all", flame.FoldOptions{TID: true, Kernel: true, JIT: true}, []string{"--tid", "--all"}},
	{"jvm-fields.txt", "count", flame.FoldOptions{Count: true}, nil},
	{"jvm-unfold.txt", "plain", flame.FoldOptions{}, []string{}},
	{"jvm-unfold.txt", "all", flame.FoldOptions{Kernel: true, JIT: true}, []string{"--all"}},
	{"jvm-unfold.txt", "nosplit-jit", flame.FoldOptions{JIT: true, NoSplit: true}, nil},
	{"synthetic.txt", "plain", flame.FoldOptions{}, []string{}},
	{"synthetic.txt", "all-addrs", flame.FoldOptions{Kernel: true, JIT: true, Addrs: true}, []string{"--all", "--addrs"}},
	{"synthetic.txt", "kernel-pid", flame.FoldOptions{Kernel: true, PID: true}, []string{"--kernel", "--pid"}},
	{"synthetic.txt", "jit-tid", flame.FoldOptions{JIT: true, TID: true}, []string{"--jit", "--tid"}},
	{"synthetic.txt", "cycles", flame.FoldOptions{Event: "cycles"}, []string{"--event-filter=cycles"}},
	{"synthetic.txt", "count", flame.FoldOptions{Count: true}, nil},
}

func TestFoldGolden(t *testing.T) {
	for _, c := range foldCases {
		t.Run(strings.TrimSuffix(c.input, ".txt")+"/"+c.name, func(t *testing.T) {
			input := filepath.Join("testdata", "fold", c.input)
			golden := filepath.Join("testdata", "fold", strings.TrimSuffix(c.input, ".txt")+"."+c.name+".folded")
			got := foldFile(t, input, c.opts)
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if diff := cmp.Diff(lines(want), lines(got)); diff != "" {
				t.Errorf("%s differs from %s (-want +got):\n%s", input, golden, diff)
			}
			if *stackcollapse != "" && c.perl != nil {
				out, err := exec.Command("perl", append(append([]string{*stackcollapse}, c.perl...), input)...).Output()
				if err != nil {
					t.Fatalf("stackcollapse-perf.pl %s: %v", strings.Join(c.perl, " "), err)
				}
				if diff := cmp.Diff(lines(out), lines(got)); diff != "" {
					t.Errorf("stackcollapse-perf.pl %s %s differs (-perl +Fold):\n%s", strings.Join(c.perl, " "), input, diff)
				}
			}
		})
	}
}

func foldFile(t *testing.T, path string, opts flame.FoldOptions) []byte {
	t.Helper()
	in, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	f, _, err := flame.Fold(in, opts)
	if err != nil {
		t.Fatalf("Fold %s: %v", path, err)
	}
	var out bytes.Buffer
	if err := flame.WriteFolded(&out, f); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func lines(b []byte) []string { return strings.SplitAfter(string(b), "\n") }

func TestFoldStats(t *testing.T) {
	in, err := os.Open(filepath.Join("testdata", "fold", "synthetic.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	f, st, err := flame.Fold(in, flame.FoldOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := flame.FoldStats{
		Samples:   7,
		Filtered:  1,
		Events:    map[string]int{"cpu-clock": 8, "cycles": 1},
		Truncated: true,
	}
	if diff := cmp.Diff(want, st); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}
	if f.Event != "cpu-clock" || !f.Period {
		t.Errorf("Event %q, Period %v; want cpu-clock, true", f.Event, f.Period)
	}
	// 5 samples of 1001001 and two of period 0 or none, which count 1.
	if got, want := f.Total(), int64(5*1001001+2); got != want {
		t.Errorf("Total %d, want %d", got, want)
	}
}

func TestFoldErrors(t *testing.T) {
	for _, c := range []struct {
		name, input string
		line        int
	}{
		{"garbage", "java 1 2.0: 1 cpu-clock:\n\t7f00 f (dso)\n\nthis is not perf script\n", 4},
		{"blanks", "java 1 2.0: 1 cpu-clock:\n  \t\n", 2},
		{"nosym", "java 1 2.0: 1 cpu-clock:\n\t7f00\n", 2},
		{"period", "java 1 2.0: 99999999999999999999 cpu-clock:\n", 1},
		{"long", "java 1 2.0: 1 cpu-clock:\n\t7f00 " + strings.Repeat("x", 5<<20) + " (dso)\n", 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := flame.Fold(strings.NewReader(c.input), flame.FoldOptions{})
			var pe *flame.ParseError
			if !errors.As(err, &pe) || pe.Line != c.line {
				t.Fatalf("Fold: %v; want a *ParseError on line %d", err, c.line)
			}
			if len(pe.Error()) > 300 {
				t.Errorf("error message of %d bytes", len(pe.Error()))
			}
		})
	}
	// Lenient skips what the strict mode refuses, as stackcollapse-perf.pl does.
	f, st, err := flame.Fold(strings.NewReader("java 1 2.0: 1 cpu-clock:\n\t7f00 f (dso)\nnoise\n\n"), flame.FoldOptions{Lenient: true})
	if err != nil || st.Skipped != 1 || len(f.Stacks) != 1 || strings.Join(f.Stacks[0].Frames, ";") != "java;f" {
		t.Errorf("Lenient: %v, %+v, %+v", err, st, f)
	}
}

// TestFoldCutMidLine cuts real perf script output (a killed perf script, a full disk) at every offset
// of its first samples and at random offsets of the whole, most of them inside a line: Fold must fold
// the samples complete before the cut, as if the input ended at the blank line after the last of them,
// and report the rest as Truncated, in the strict and the lenient mode. stackcollapse-perf.pl does the
// same (it prints complete stacks only, with a warning).
func TestFoldCutMidLine(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, name := range []string{"jvm-fields.txt", "jvm-default.txt", "jvm-unfold.txt"} {
		data, err := os.ReadFile(filepath.Join("testdata", "fold", name))
		if err != nil {
			t.Fatal(err)
		}
		head := 2 << 10
		head += bytes.Index(data[head:], []byte("\n\n")) + 2
		var cuts []int
		for k := 0; k <= head; k++ {
			cuts = append(cuts, k)
		}
		for range 50 {
			cuts = append(cuts, head+r.IntN(len(data)-head))
		}
		want := make(map[int]*flame.Folded) // by the end of the complete samples
		for _, k := range cuts {
			in := data[:k]
			complete := 0 // after the blank line of the last complete sample
			if i := bytes.LastIndex(in, []byte("\n\n")); i >= 0 {
				complete = i + 2
			}
			if want[complete] == nil {
				f, _, err := flame.Fold(bytes.NewReader(data[:complete]), flame.FoldOptions{Kernel: true, JIT: true})
				if err != nil {
					t.Fatalf("%s up to %d: %v", name, complete, err)
				}
				want[complete] = f
			}
			for _, lenient := range []bool{false, true} {
				opts := flame.FoldOptions{Kernel: true, JIT: true, Lenient: lenient}
				got, st, err := flame.Fold(bytes.NewReader(in), opts)
				if err != nil {
					t.Fatalf("%s cut at %d (lenient %v): %v", name, k, lenient, err)
				}
				if diff := cmp.Diff(want[complete].Stacks, got.Stacks); diff != "" {
					t.Fatalf("%s cut at %d (lenient %v): stacks differ from those of the %d bytes before (-want +got):\n%s", name, k, lenient, complete, diff)
				}
				if st.Truncated != (complete < k) || st.Skipped != 0 {
					t.Fatalf("%s cut at %d (lenient %v): %+v; want Truncated %v", name, k, lenient, st, complete < k)
				}
			}
		}
	}
}

// TestFoldCutIsLastLineOnly: only the last line, without its newline, may be cut; a bad line anywhere
// else, or a bad last line that has its newline, is still an error.
func TestFoldCutIsLastLineOnly(t *testing.T) {
	const sample = "java 1/2 3.0: 5 cpu-clock:\n\t7f00 f (/tmp/perf-1.map)\n\n"
	for _, c := range []struct {
		name, input string
		line        int // of the *ParseError; 0: no error, Truncated
		stacks      int
	}{
		{"cut frame", sample + "java 1/2 3.1: 5 cpu-clock:\n\t7f00 g (/tmp/per", 0, 1},
		{"cut header", sample + "java 1", 0, 1},
		{"cut ip", sample + "java 1/2 3.1: 5 cpu-clock:\n\t7f", 0, 1},
		{"cut crlf", strings.ReplaceAll(sample, "\n", "\r\n") + "java 1/2 3.1: 5 cpu-clock:\r\n\t7f00 g (/tm", 0, 1},
		{"cut blanks", sample + "java 1/2 3.1: 5 cpu-clock:\n\t  ", 0, 1},
		{"bad line ended", sample + "java 1/2 3.1: 5 cpu-clock:\n\t7f00 g (/tmp/per\n", 5, 0},
		{"bad line in the middle", sample + "garbage\n" + sample + "java 1", 4, 0},
		{"bad line before the cut", sample + "java 1/2 3.1: 5 cpu-clock:\n\t7f00 g (/tmp/per\n\t7f", 5, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, st, err := flame.Fold(strings.NewReader(c.input), flame.FoldOptions{})
			if c.line > 0 {
				var pe *flame.ParseError
				if !errors.As(err, &pe) || pe.Line != c.line {
					t.Fatalf("Fold: %v; want a *ParseError on line %d", err, c.line)
				}
				return
			}
			if err != nil || !st.Truncated || st.Samples != c.stacks || len(f.Stacks) != c.stacks {
				t.Fatalf("Fold: %v, %+v, %+v; want %d samples and Truncated", err, st, f, c.stacks)
			}
		})
	}
}

// TestFoldHeaders checks the header forms perf script prints and stackcollapse-perf.pl's comments list.
func TestFoldHeaders(t *testing.T) {
	for _, c := range []struct{ header, want string }{
		{"java 25607 4794564.109216: 1 cycles:", "java-?/25607 1"},
		{"java 12688 [002] 6544038.708352: 235 cpu-clock:", "java-?/12688 235"},
		{"V8 WorkerThread 25607 4794564.109216: 104345 cycles:", "V8_WorkerThread-?/25607 104345"},
		{"java 24636/25607 [000] 4794564.109216: 1 cycles:", "java-24636/25607 1"},
		{"java 12688/12764 6544038.708352: 10309278 cpu-clock:", "java-12688/12764 10309278"},
		{"V8 WorkerThread 24636/25607 [000] 94564.109216: 100 cycles:", "V8_WorkerThread-24636/25607 100"},
		{"burn-io 25587/25609  8376.267134341:    1001001 cpu-clock:u: ", "burn-io-25587/25609 1001001"},
		{"java 1/2 3.0: cpu-clock:", "java-1/2 1"},
		{"kworker/0:1 7 3.0: 5 cpu-clock:", "kworker/0:1-?/7 5"},
		{"java 1/2 3.0: 5 cpu-clock: 7f00 f (dso)", "java-1/2 1"}, // no -g: no event, so no period
	} {
		f, _, err := flame.Fold(strings.NewReader(c.header+"\n\t7f00 f (dso)\n\n"), flame.FoldOptions{TID: true})
		if err != nil {
			t.Errorf("%q: %v", c.header, err)
			continue
		}
		var out bytes.Buffer
		flame.WriteFolded(&out, f)
		if got := strings.TrimSuffix(strings.Replace(out.String(), ";f", "", 1), "\n"); got != c.want {
			t.Errorf("%q: got %q, want %q", c.header, got, c.want)
		}
	}
}

// TestFoldRandom folds random perf-script-like inputs (odd comms, pid forms, periods, symbols, dsos,
// garbage lines, missing blank lines) with several option sets. It checks that Fold is deterministic and
// agrees with its own strict mode where there is no garbage; with -stackcollapse it also requires
// stackcollapse-perf.pl's output (Fold in Lenient mode, as the script skips what it does not know).
func TestFoldRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	comms := []string{"java", "javac", "a", "ab", "V8 WorkerThread", "kworker/0:1", "C2 CompilerThre", "GC Thread#0", "x 12 y", "java 7", "j:1", "0", "tab\there"}
	syms := []string{"foo", "foo+0x1a", "foo+0xZZ", "Lpkg/A;::m", "Lpkg/A;::m->Lpkg/B;::n", "a->b->", "->", "->x", "[unknown]", "(x)", "f(int)", "(anonymous namespace)::f(int)", "ns::(anonymous namespace)::g(int)", "net/http.(*C).Do", "a;b", "q\"u'o", "m_[j]", "m_[i]->n_[i]", "A.f()_[j]->B.g()_[i]", "x (y)", "", " ", "w (z) q", "+0x1", "a+0x1+0x2", "Lfoo", "L/x"}
	dsos := []string{"[kernel.kallsyms]", "/tmp/perf-1.map", "/x/tmp/perf-22.map.y", "/tmp/perf-.map", "[unknown]", "/lib/libc.so.6", "/boot/vmlinux", "[vdso]", "a (b)", "", "x)y", "[x unknown]"}
	events := []string{"cpu-clock", "cycles", "cpu-clock:u", "instructions:ppp"}
	optionSets := []struct {
		args []string
		opts flame.FoldOptions
	}{
		{[]string{}, flame.FoldOptions{}},
		{[]string{"--all", "--tid"}, flame.FoldOptions{Kernel: true, JIT: true, TID: true}},
		{[]string{"--pid", "--addrs", "--kernel"}, flame.FoldOptions{PID: true, Addrs: true, Kernel: true}},
		{[]string{"--jit", "--event-filter=cycles"}, flame.FoldOptions{JIT: true, Event: "cycles"}},
	}
	n := 200
	if *stackcollapse != "" {
		n = 1000
	}
	dir := t.TempDir()
	for i := 0; i < n; i++ {
		var b strings.Builder
		for s := 0; s < 1+r.IntN(8); s++ {
			comm, id := pick(comms...), pick("123", "123/456", "123/0", "0", "12/", "1//2", "7 8")
			switch r.IntN(3) {
			case 0:
				b.WriteString(comm + " " + id + " [001] 1.5: " + pick("", "0", "5", "1001001", "007") + " " + pick(events...) + ":" + pick("", " ", "\t") + "\n")
			case 1:
				b.WriteString(comm + " " + id + "  1.5:    " + pick("1", "3") + " " + pick(events...) + ":\n")
			default:
				b.WriteString(comm + pick(" ", "  ", "\t") + id + " 1.5: " + pick(events...) + ":\n")
			}
			for range r.IntN(6) {
				if r.IntN(12) == 0 {
					b.WriteString(pick("garbage", "  ", "\t7f00", "x y (z)", "\tabc (dso)", "\t7f (a) (b)", "\t7f  f  (d) tail", "\t7f\tf\t(d)") + "\n")
					continue
				}
				b.WriteString("\t" + pick("7f00", "ffffffff81", "abc", "0") + " " + pick(syms...) + " (" + pick(dsos...) + ")\n")
			}
			if r.IntN(10) > 0 {
				b.WriteString("\n")
			}
		}
		input := b.String()
		path := filepath.Join(dir, "in.txt")
		if err := os.WriteFile(path, []byte(input), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, o := range optionSets {
			opts := o.opts
			opts.Lenient = true
			got := foldFile(t, path, opts)
			if again := foldFile(t, path, opts); !bytes.Equal(got, again) {
				t.Fatalf("case %d %v: two folds differ", i, o.args)
			}
			// Strict mode refuses what Lenient skips (some of the "garbage" above is a frame to the
			// script: "x y (z)"), or folds the same.
			f, _, err := flame.Fold(strings.NewReader(input), o.opts)
			var pe *flame.ParseError
			switch {
			case err != nil && !errors.As(err, &pe):
				t.Fatalf("case %d %v: %v", i, o.args, err)
			case err == nil:
				var strict bytes.Buffer
				if err := flame.WriteFolded(&strict, f); err != nil || !bytes.Equal(got, strict.Bytes()) {
					t.Fatalf("case %d %v: strict and lenient folds differ", i, o.args)
				}
			}
			if *stackcollapse == "" {
				continue
			}
			want, err := exec.Command("perl", append(append([]string{*stackcollapse}, o.args...), path)...).Output()
			if err != nil {
				t.Fatalf("stackcollapse-perf.pl: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("case %d %v:\ninput:\n%s\nstackcollapse-perf.pl:\n%s\nFold:\n%s", i, o.args, input, want, got)
			}
		}
	}
}
