package jfr

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/jvmkit/jvmkit/internal/testutil"
)

// Comparing our JSON lines with the JDK's `jfr print --json`: values, not text (the JDK indents and
// escapes "/" and non-ASCII). Numbers compare as exact decimals, and floats also as text, which is
// Java's (1.0E-7, 20.0); keys in order.

// jdkCompat tells what an older JDK's tool prints differently (see doc.go): unsigned numbers with
// their sign, and a Long.MAX_VALUE timespan in milliseconds; JDK 11's places some instants up to a
// millisecond away from JDK 25's.
type jdkCompat struct {
	signedUnsigned bool
	instantSkew    time.Duration // instants this far apart are equal
	// floatValues compares floats by value only: before JDK 19, Double.toString did not always
	// write the shortest digits. Otherwise a float's text must be the JDK's ("20.0", "1.0E-7").
	floatValues bool
}

// diffJSON returns the first difference between want (the JDK's) and got, or "".
func diffJSON(path string, want, got any, compat jdkCompat) string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: want an object, got %v", path, brief(got))
		}
		if len(g) != len(w) {
			return fmt.Sprintf("%s: want keys %v, got %v", path, keys(w), keys(g))
		}
		for _, k := range keys(w) {
			if _, ok := g[k]; !ok {
				return fmt.Sprintf("%s: no key %q", path, k)
			}
			if d := diffJSON(path+"."+k, w[k], g[k], compat); d != "" {
				return d
			}
		}
		return ""
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return fmt.Sprintf("%s: want %d elements, got %v", path, len(w), brief(got))
		}
		for i := range w {
			if d := diffJSON(fmt.Sprintf("%s[%d]", path, i), w[i], g[i], compat); d != "" {
				return d
			}
		}
		return ""
	case json.Number:
		g, ok := got.(json.Number)
		if !ok {
			return fmt.Sprintf("%s: want %s, got %v", path, w, brief(got))
		}
		a, aok := new(big.Rat).SetString(string(w))
		b, bok := new(big.Rat).SetString(string(g))
		if !aok || !bok {
			return fmt.Sprintf("%s: numbers %s and %s", path, w, g)
		}
		if a.Cmp(b) == 0 {
			if !compat.floatValues && strings.ContainsAny(string(w), ".eE") && string(w) != string(g) {
				return fmt.Sprintf("%s: want %s, got %s (the same value, not as Java writes it)", path, w, g)
			}
			return ""
		}
		if compat.signedUnsigned && a.Sign() < 0 && a.IsInt() && b.IsInt() {
			// The old tool's signed reading of an unsigned field: equal modulo 2^64.
			mod := new(big.Int).Lsh(big.NewInt(1), 64)
			if new(big.Int).Add(a.Num(), mod).Cmp(b.Num()) == 0 {
				return ""
			}
		}
		return fmt.Sprintf("%s: want %s, got %s", path, w, g)
	case string:
		if g, ok := got.(string); ok && (g == w || compat.signedUnsigned && w == "PT2562047788015H12M55.807S" && g == "PT2562047788015215H30M7.999999999S") {
			return ""
		}
		if g, ok := got.(string); ok && compat.instantSkew > 0 {
			a, aerr := time.Parse(time.RFC3339Nano, w)
			b, berr := time.Parse(time.RFC3339Nano, g)
			if aerr == nil && berr == nil && a.Sub(b).Abs() <= compat.instantSkew {
				return ""
			}
		}
		return fmt.Sprintf("%s: want %q, got %v", path, w, brief(got))
	default:
		if fmt.Sprint(want) == fmt.Sprint(got) {
			return ""
		}
		return fmt.Sprintf("%s: want %v, got %v", path, want, brief(got))
	}
}

func brief(v any) string {
	s := fmt.Sprintf("%#v", v)
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// jdkEvents reads `jfr print --json` output.
func jdkEvents(t testing.TB, r io.Reader) []any {
	t.Helper()
	dec := json.NewDecoder(r)
	dec.UseNumber()
	var doc struct {
		Recording struct {
			Events []any `json:"events"`
		} `json:"recording"`
	}
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("jfr print --json output: %v", err)
	}
	return doc.Recording.Events
}

// ourEvents reads our JSON lines.
func ourEvents(t testing.TB, r io.Reader) []any {
	t.Helper()
	var out []any
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 256<<20)
	for sc.Scan() {
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("line %d: %v", len(out)+1, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// compareEvents fails the test at the first event that differs, and reports how many of each type
// were compared.
func compareEvents(t testing.TB, want, got []any, compat jdkCompat) map[string]int {
	t.Helper()
	if len(want) != len(got) {
		t.Errorf("the JDK printed %d events, we printed %d", len(want), len(got))
	}
	types := map[string]int{}
	for i := range min(len(want), len(got)) {
		typ, _ := want[i].(map[string]any)["type"].(string)
		if d := diffJSON(fmt.Sprintf("event %d (%s)", i, typ), want[i], got[i], compat); d != "" {
			t.Fatalf("%s", d)
		}
		types[typ]++
	}
	return types
}

// TestGolden: two small JDK 17 recordings (see testdata/README.md) printed as JDK 25's
// `jfr print --json --stack-depth 100000` prints them. Live tests make fresh recordings of every kind
// on every JDK; these run without a JDK.
func TestGolden(t *testing.T) {
	for _, name := range []string{"small17", "demo17", "cpu25"} {
		data := testutil.ReadGzip(t, filepath.Join("testdata", name+".jfr.gz"))
		r, err := Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		w := r.NewJSONWriter(&b, JSONOptions{})
		for e, err := range r.Events(EventOptions{Ordered: true}) {
			if err != nil {
				t.Fatal(err)
			}
			w.Write(e)
		}
		w.Flush()
		want := jdkEvents(t, bytes.NewReader(testutil.ReadGzip(t, filepath.Join("testdata", name+".jdk25.json.gz"))))
		types := compareEvents(t, want, ourEvents(t, &b), jdkCompat{})
		switch name {
		case "small17":
			if types["jdk.OldObjectSample"] == 0 {
				t.Errorf("no Old Object Samples compared: %v", types)
			}
			groups, n, err := Leaks(r)
			if err != nil || n == 0 || len(groups) == 0 {
				t.Fatalf("leaks: %d samples, %d groups, %v", n, len(groups), err)
			}
			if g := groups[0]; g.Root == nil || !strings.Contains(chainKey(&g.Samples[0]), "LEAK") {
				t.Errorf("first group is not the Leak workload's: %+v", g.Chain)
			}
		case "demo17":
			if types["jdk.ExecutionSample"] == 0 || types["jdk.ObjectAllocationSample"] == 0 {
				t.Errorf("no samples compared: %v", types)
			}
			checkFlame(t, r, want, "jdk.ExecutionSample")
		case "cpu25":
			// Both samplers: cpu draws jdk.CPUTimeSample and says what it left out.
			if types["jdk.CPUTimeSample"] == 0 || types["jdk.ExecutionSample"] == 0 || types["jdk.CPUTimeSamplesLost"] == 0 || types["jdk.DoubleFlag"] == 0 {
				t.Errorf("not every sampler compared: %v", types)
			}
			st := checkFlame(t, r, want, "jdk.CPUTimeSample")
			var lost int64
			for _, e := range want {
				if m := e.(map[string]any); m["type"] == "jdk.CPUTimeSamplesLost" {
					n, _ := m["values"].(map[string]any)["lostSamples"].(json.Number).Int64()
					lost += n
				}
			}
			if st.Unused["jdk.ExecutionSample"] != int64(types["jdk.ExecutionSample"]) || st.LostSamples != lost || lost == 0 {
				t.Errorf("cpu flame stats %+v: want %d execution samples unused and %d samples lost", st, types["jdk.ExecutionSample"], lost)
			}
		}
	}
}

var updateSeeds = flag.Bool("update-seeds", false, "rewrite testdata/fuzz/FuzzParse")

// TestSeeds writes the seed corpus with -update-seeds: synthetic recordings (compressed and fixed-width
// integers), cut inside each chunk, with corrupt bytes in the metadata, a checkpoint and an event, and
// the start of a real recording.
func TestSeeds(t *testing.T) {
	if !*updateSeeds {
		return // a generator, not a check: go test -run TestSeeds -update-seeds ./jfr/ rewrites the corpus
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzParse")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) {
		content := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d := syntheticRecording(false)
	write("synthetic", d)
	write("synthetic-fixed", syntheticRecording(true))
	write("cut-chunk1", d[:900])
	write("cut-chunk2", d[:len(d)-40])
	corrupt := func(at int) []byte {
		c := bytes.Clone(d)
		c[at] ^= 0xff
		return c
	}
	r, err := Parse(d)
	if err != nil {
		t.Fatal(err)
	}
	c0 := r.Chunks[0]
	write("corrupt-metadata", corrupt(int(c0.Header.MetadataOffset)+40))
	write("corrupt-checkpoint", corrupt(int(c0.Header.ConstantPoolOffset)+9))
	write("corrupt-event", corrupt(int(c0.events[0].off)+6))
	real := testutil.ReadGzip(t, filepath.Join("testdata", "small17.jfr.gz"))
	write("real-cut", real[:HeaderSize+300])
}

func FuzzParse(f *testing.F) {
	for _, fixed := range []bool{false, true} {
		d := syntheticRecording(fixed)
		f.Add(d)
		f.Add(d[:len(d)/2])
		f.Add(d[:len(d)-7])
	}
	real := testutil.ReadGzip(f, filepath.Join("testdata", "small17.jfr.gz"))
	f.Add(real[:HeaderSize+200])
	f.Fuzz(func(t *testing.T, data []byte) {
		readAll(t, data)
	})
}

// checkFlame: the CPU flame graph has every sample (of type typ) of the JDK's output, each stack with
// its count, and nothing else.
func checkFlame(t *testing.T, r *Recording, want []any, typ string) FlameStats {
	t.Helper()
	expect := map[string]int64{}
	for _, e := range want {
		m := e.(map[string]any)
		if m["type"] != typ {
			continue
		}
		v := m["values"].(map[string]any)
		thread := v["sampledThread"]
		if typ == "jdk.CPUTimeSample" {
			thread = v["eventThread"]
		}
		frames := []string{jsonThreadName(thread)}
		if st, ok := v["stackTrace"].(map[string]any); !ok {
			if v["failed"] == true {
				frames = append(frames, FrameStackFailed)
			} else {
				frames = append(frames, FrameNoStack)
			}
		} else {
			if st["truncated"] == true {
				frames = append(frames, FrameTruncated)
			}
			fs := st["frames"].([]any)
			for i := len(fs) - 1; i >= 0; i-- {
				frames = append(frames, jsonFrameLabel(fs[i].(map[string]any)))
			}
		}
		expect[strings.Join(frames, ";")]++
	}
	f, st, err := Flame(r, FlameOptions{Kind: FlameCPU})
	if err != nil {
		t.Fatal(err)
	}
	gotStacks := map[string]int64{}
	for _, s := range f.Stacks {
		gotStacks[strings.Join(s.Frames, ";")] = s.Count
	}
	if diff := cmp.Diff(expect, gotStacks); diff != "" {
		t.Errorf("cpu flame stacks (-from jfr print +ours):\n%s", diff)
	}
	if len(expect) == 0 || st.Events[typ] == 0 || len(st.Events) != 1 {
		t.Errorf("no %s drawn, or others: %+v", typ, st)
	}
	return st
}

func jsonThreadName(v any) string {
	m, _ := v.(map[string]any)
	if n, _ := m["javaName"].(string); n != "" {
		return n
	}
	if n, _ := m["osName"].(string); n != "" {
		return n
	}
	return "[unknown thread]"
}

// jsonFrameLabel names a frame of the JDK's JSON by the rule of Frame.Label, from the JDK's values.
func jsonFrameLabel(f map[string]any) string {
	m, _ := f["method"].(map[string]any)
	name := "[unknown]"
	if m != nil {
		cls := ""
		if ty, ok := m["type"].(map[string]any); ok {
			n, _ := ty["name"].(string)
			cls = ClassName(n)
		}
		name, _ = m["name"].(string)
		if cls != "" {
			name = cls + "." + name
		}
	}
	switch ty, _ := f["type"].(string); {
	case ty == "Inlined":
		return name + "_[i]"
	case strings.Contains(ty, "compiled"):
		return name + "_[j]"
	}
	return name
}
