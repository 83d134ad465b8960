package jitlog_test

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/jvmkit/jvmkit/perfmap/jitlog"
)

func sec(s float64) uint64 { return uint64(s * 1e9) }

// symbolizeLog is the log of testdata/symbolize: Foo.a is replaced by Foo.b at the same address at
// 1001 s, Foo.c lives from 1000.2 to 1000.8 s, the interpreter is in the snapshot.
func symbolizeLog() []jitlog.Record {
	return []jitlog.Record{
		snap(sec(1000), 0x7f0000001000, 0x1000, "Interpreter"),
		load(sec(1000.5), 0x7f0000010000, 0x200, "int Foo.a()"),
		load(sec(1001), 0x7f0000010000, 0x100, "int Foo.b()"),
		load(sec(1000.2), 0x7f0000020000, 0x100, "void Foo.c()"),
		unload(sec(1000.8), "void Foo.c()"),
	}
}

func TestSymbolizeGolden(t *testing.T) {
	r := jitlog.NewResolver(symbolizeLog())
	for _, c := range []struct {
		input string
		opts  jitlog.SymbolizeOptions
		want  jitlog.SymbolizeStats
	}{
		{"fields.txt", jitlog.SymbolizeOptions{},
			jitlog.SymbolizeStats{Lines: 22, Samples: 4, JITFrames: 11, Renamed: 7, Fallback: 2, Unresolved: 2, Kept: 0}},
		{"default.txt", jitlog.SymbolizeOptions{},
			jitlog.SymbolizeStats{Lines: 12, Samples: 3, JITFrames: 5, Renamed: 4, Fallback: 1}},
		{"oneline.txt", jitlog.SymbolizeOptions{},
			jitlog.SymbolizeStats{Lines: 3, Samples: 3, JITFrames: 2, Renamed: 1, Fallback: 1}},
		{"untimed.txt", jitlog.SymbolizeOptions{},
			jitlog.SymbolizeStats{Lines: 5, Samples: 2, Untimed: 2, JITFrames: 3, Renamed: 2, Fallback: 1}},
	} {
		t.Run(c.input, func(t *testing.T) {
			in, err := os.ReadFile(filepath.Join("testdata", "symbolize", c.input))
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			st, err := jitlog.Symbolize(&out, bytes.NewReader(in), r, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "symbolize", strings.TrimSuffix(c.input, ".txt")+".golden")
			if *update {
				if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), out.String()); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(c.want, st); diff != "" {
				t.Errorf("stats (-want +got):\n%s", diff)
			}
			checkLayout(t, in, out.Bytes())
		})
	}
}

// checkLayout: the same lines, and every changed line a frame whose text before the symbol and from
// the dso on is unchanged.
func checkLayout(t *testing.T, in, out []byte) {
	t.Helper()
	a, b := bytes.SplitAfter(in, []byte("\n")), bytes.SplitAfter(out, []byte("\n"))
	if len(a) != len(b) {
		t.Fatalf("%d lines in, %d out", len(a), len(b))
	}
	for i := range a {
		if bytes.Equal(a[i], b[i]) {
			continue
		}
		open := bytes.LastIndex(a[i], []byte(" ("))
		open2 := bytes.LastIndex(b[i], []byte(" ("))
		if open < 0 || open2 < 0 || !bytes.Equal(a[i][open:], b[i][open2:]) {
			t.Errorf("line %d changed outside the symbol:\n%q\n%q", i+1, a[i], b[i])
		}
	}
}

func TestSymbolizePIDOption(t *testing.T) {
	r := jitlog.NewResolver(symbolizeLog())
	in := "java 4250 1001.5: 1 cpu-clock:\n\t7f0000010010 [unknown] ([unknown])\n\n" +
		"java 4242/4250 1001.5: 1 cpu-clock:\n\t7f0000010010 [unknown] ([unknown])\n\n" +
		"java 77/78 1001.5: 1 cpu-clock:\n\t7f0000010010 [unknown] ([unknown])\n"
	var out bytes.Buffer
	st, err := jitlog.Symbolize(&out, strings.NewReader(in), r, jitlog.SymbolizeOptions{PID: 4242})
	if err != nil {
		t.Fatal(err)
	}
	want := "java 4250 1001.5: 1 cpu-clock:\n\t7f0000010010 int Foo.b() ([unknown])\n\n" +
		"java 4242/4250 1001.5: 1 cpu-clock:\n\t7f0000010010 int Foo.b() ([unknown])\n\n" +
		"java 77/78 1001.5: 1 cpu-clock:\n\t7f0000010010 [unknown] ([unknown])\n"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
	if st.Other != 1 || st.Renamed != 2 {
		t.Errorf("stats %+v", st)
	}
	// Without --pid, in a log of two processes, a sample with neither pid nor main thread nor perf map
	// is left alone.
	other := load(sec(1000), 0x1000, 0x10, "x")
	other.PID = 5
	r2 := jitlog.NewResolver(append(symbolizeLog(), other))
	out.Reset()
	st, err = jitlog.Symbolize(&out, strings.NewReader("java 4250 1001.5: 1 cpu-clock:\n\t7f0000010010 [unknown] ([unknown])\n"), r2, jitlog.SymbolizeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st.NoPID != 1 || !strings.Contains(out.String(), "[unknown] ([unknown])") {
		t.Errorf("stats %+v, output %q", st, out.String())
	}
}

// TestSymbolizeLongLine: lines longer than the parser takes pass through.
func TestSymbolizeLongLine(t *testing.T) {
	r := jitlog.NewResolver(symbolizeLog())
	in := "java 4242/4250 1001.5: 1 cpu-clock:\n\t7f0000010010 " + strings.Repeat("x", 3<<20) + " (/tmp/perf-4242.map)\n" +
		"\t7f0000010010 [unknown] (/tmp/perf-4242.map)\n"
	var out bytes.Buffer
	if _, err := jitlog.Symbolize(&out, strings.NewReader(in), r, jitlog.SymbolizeOptions{}); err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(in, "[unknown]", "int Foo.b()", 1)
	if out.String() != want {
		t.Errorf("long line: output differs (%d bytes, want %d)", out.Len(), len(want))
	}
}

// TestSymbolizeLostLoad: with A's LOAD lost in damage, a sample before A's UNLOAD is named A, marked
// uncertain, whatever perf named it (its perf map, written at the end, has B there); one after B's
// LOAD is B; one between the two, when nothing was live there, gets a marked name or keeps perf's,
// marked.
func TestSymbolizeLostLoad(t *testing.T) {
	r := jitlog.NewResolver(lostLoadLog(t))
	sample := func(tm, sym string) string {
		return "java 4242/4250 " + tm + ": 1 cpu-clock:\n\t    1010 " + sym + " (/tmp/perf-4242.map)\n\n"
	}
	in := sample("9.000000000", "[unknown]") + sample("9.000000000", "int B.b()+0x10") +
		sample("11.000000000", "[unknown]") + sample("11.000000000", "int B.b()+0x10") +
		sample("13.000000000", "[unknown]")
	want := sample("9.000000000", "[?] int A.a()+0x10") + sample("9.000000000", "[?] int A.a()+0x10") +
		sample("11.000000000", "[?] int A.a()+0x10") + sample("11.000000000", "[?] int B.b()+0x10") +
		sample("13.000000000", "int B.b()+0x10")
	var out bytes.Buffer
	st, err := jitlog.Symbolize(&out, strings.NewReader(in), r, jitlog.SymbolizeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
	if st.Renamed != 1 || st.Uncertain != 2 || st.Fallback != 1 || st.Kept != 1 {
		t.Errorf("stats %+v", st)
	}
	// Symbolizing again changes nothing.
	var again bytes.Buffer
	if _, err := jitlog.Symbolize(&again, bytes.NewReader(out.Bytes()), r, jitlog.SymbolizeOptions{}); err != nil || again.String() != out.String() {
		t.Errorf("a second run: %v\n%s", err, again.String())
	}
}

// TestSymbolizeCutMidLine: real perf script output cut inside its last line (a killed perf script, a
// full disk) is copied unchanged up to the cut, renamed as the whole input is, and the cut reported;
// a cut header is not counted as a sample. A last line that is whole without its newline is no cut.
func TestSymbolizeCutMidLine(t *testing.T) {
	r := jitlog.NewResolver(symbolizeLog())
	for _, name := range []string{"fields.txt", "default.txt", "oneline.txt"} {
		in, err := os.ReadFile(filepath.Join("testdata", "symbolize", name))
		if err != nil {
			t.Fatal(err)
		}
		for k := 1; k < len(in); k++ {
			var out, before bytes.Buffer
			st, err := jitlog.Symbolize(&out, bytes.NewReader(in[:k]), r, jitlog.SymbolizeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			// The whole lines are renamed as they are without the cut one.
			lineStart := bytes.LastIndexByte(in[:k], '\n') + 1
			bst, err := jitlog.Symbolize(&before, bytes.NewReader(in[:lineStart]), r, jitlog.SymbolizeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			part := in[lineStart:k]
			// (A frame whole but for its newline may show perf's offsets, which change the renaming of
			// the frames before it.)
			if !bytes.HasPrefix(out.Bytes(), before.Bytes()) && !bytes.HasSuffix(part, []byte(")")) {
				t.Fatalf("%s cut at %d: lines before the cut differ", name, k)
			}
			last := out.Bytes()[before.Len():]
			trimmed := bytes.TrimRight(part, " ")
			want := len(part) > 0 && in[k] != '\n' && part[0] != '#' &&
				!bytes.HasSuffix(trimmed, []byte(":")) && !bytes.HasSuffix(trimmed, []byte(")"))
			if st.Truncated != want {
				t.Errorf("%s cut at %d (%q): Truncated %v, want %v", name, k, part, st.Truncated, want)
			}
			if st.Truncated && (!bytes.Equal(last, part) || st.Samples != bst.Samples || st.Untimed != bst.Untimed) {
				t.Errorf("%s cut at %d: cut line %q written as %q; %+v, without it %+v", name, k, part, last, st, bst)
			}
		}
	}
	// The last line without its newline but whole is renamed; a cut header is no sample.
	in := "java 4242/4250 1001.5: 1 cpu-clock:\n\t7f0000010010 [unknown] (/tmp/perf-4242.map)"
	var out bytes.Buffer
	st, err := jitlog.Symbolize(&out, strings.NewReader(in), r, jitlog.SymbolizeOptions{})
	if err != nil || st.Truncated || st.Renamed != 1 || !strings.HasSuffix(out.String(), "int Foo.b() (/tmp/perf-4242.map)") {
		t.Errorf("whole last line: %v, %+v, %q", err, st, out.String())
	}
	out.Reset()
	st, err = jitlog.Symbolize(&out, strings.NewReader(in+"\n\njava 4242/4250 1001.5"), r, jitlog.SymbolizeOptions{})
	if err != nil || !st.Truncated || st.Samples != 1 || st.Untimed != 0 || !strings.HasSuffix(out.String(), "\n\njava 4242/4250 1001.5") {
		t.Errorf("cut header: %v, %+v, %q", err, st, out.String())
	}
}

func FuzzSymbolize(f *testing.F) {
	for _, name := range []string{"fields.txt", "default.txt", "oneline.txt", "untimed.txt"} {
		b, err := os.ReadFile(filepath.Join("testdata", "symbolize", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, 0)
	}
	f.Add([]byte("java 4242/4250 1001.5:\n\t7f0000010010 [unknown] (/tmp/perf-4242.map)"), 4242)
	f.Add([]byte(" 99999999999999999999.9: \t ffffffffffffffff +0x (/tmp/perf-0.map)\n"), 0)
	f.Add([]byte("java 4242/4250 1001.5: 1 cpu-clock:\n\t7f0000010010 [unknown] (/tmp/perf-4242.map)\n\njava 4242/4250 1001.6: 1 cpu-clock:\n\t7f000001"), 0) // cut mid-line
	r := jitlog.NewResolver(symbolizeLog())
	f.Fuzz(func(t *testing.T, in []byte, pid int) {
		var out bytes.Buffer
		if _, err := jitlog.Symbolize(&out, bytes.NewReader(in), r, jitlog.SymbolizeOptions{PID: pid}); err != nil {
			t.Fatal(err)
		}
		checkLayout(t, in, out.Bytes())
		// Renamed frames name code of the log; frames whose name is kept may be marked uncertain.
		a, b := bytes.SplitAfter(in, []byte("\n")), bytes.SplitAfter(out.Bytes(), []byte("\n"))
		for i := range a {
			if bytes.Equal(bytes.Replace(b[i], []byte(jitlog.MarkUncertain), nil, 1), a[i]) {
				continue
			}
			if !bytes.Equal(a[i], b[i]) && !bytes.Contains(b[i], []byte("Foo.")) && !bytes.Contains(b[i], []byte("Interpreter")) {
				t.Errorf("line %d renamed to no name of the log: %q", i+1, b[i])
			}
		}
	})
}

// benchInput makes perf script text like a JVM's: n samples of 20 frames, 6 of them JIT code.
func benchInput(n int, recs []jitlog.Record) []byte {
	rng := rand.New(rand.NewPCG(5, 6))
	var b bytes.Buffer
	last := recs[len(recs)-1].Time
	for range n {
		t := recs[0].Time + uint64(rng.Int64N(int64(last-recs[0].Time)))
		fmt.Fprintf(&b, "java 4242/4250 %d.%09d:    1001001 cpu-clock: \n", t/1e9, t%1e9)
		for k := range 20 {
			if k < 6 {
				r := recs[rng.IntN(len(recs))]
				fmt.Fprintf(&b, "\t    %x [unknown] (/tmp/perf-4242.map)\n", r.Start+uint64(rng.IntN(int(r.Size))))
			} else {
				fmt.Fprintf(&b, "\t          %x JavaCalls::call_helper (/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so)\n", 0x8282d2+k)
			}
		}
		b.WriteString("\n")
	}
	return b.Bytes()
}

// BenchmarkSymbolize: lines per second through Symbolize, with a log of 100k loads.
func BenchmarkSymbolize(b *testing.B) {
	rng := rand.New(rand.NewPCG(7, 8))
	var recs []jitlog.Record
	for i := range 100_000 {
		recs = append(recs, load(sec(1000)+uint64(i)*100_000, 0x7f0000000000+uint64(rng.IntN(64<<20))&^15,
			uint64(64+rng.IntN(4096)), fmt.Sprintf("int Foo.m%d(java.lang.String, int)", i)))
	}
	r := jitlog.NewResolver(recs)
	in := benchInput(5000, recs)
	lines := bytes.Count(in, []byte("\n"))
	b.SetBytes(int64(len(in)))
	b.ResetTimer()
	for range b.N {
		if _, err := jitlog.Symbolize(io.Discard, bytes.NewReader(in), r, jitlog.SymbolizeOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(lines)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
}
