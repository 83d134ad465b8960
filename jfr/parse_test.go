package jfr

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/jvmkit/jvmkit/internal/testutil"
)

func jsonLines(t *testing.T, r *Recording, ordered bool) []string {
	t.Helper()
	var b bytes.Buffer
	w := r.NewJSONWriter(&b, JSONOptions{})
	for e, err := range r.Events(EventOptions{Ordered: ordered}) {
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
}

// The values are worked out by hand from the JDK's rules (see doc.go): two ticks a nanosecond, the
// first chunk's start for both chunks, +01:00, a node that refers back to itself, thread 1 renamed in
// chunk 2 (the first chunk's value wins), markers for "forever" and "no value".
var syntheticWant = []string{
	`{"type":"test.Event","values":{"startTime":"2023-11-14T23:13:20.000000500+01:00","duration":"PT0S","eventThread":{"osName":"worker-os","javaName":"","javaThreadId":22},"message":"","numbers":[],"flag":false,"letter":"\u0000","small":0,"medium":0,"ratio":null,"precise":null,"unsigned":7,"wall":"1970-01-01T01:00+01:00","wait":"PT2562047788015215H30M7.999999999S","node":{"name":"eight","next":{"name":"seven","next":null}}}}`,
	`{"type":"test.Event","values":{"startTime":"2023-11-14T23:13:20.000001+01:00","duration":"PT0.00000025S","eventThread":{"osName":"main","javaName":"main","javaThreadId":1},"message":"héllo \"wörld\"\n","numbers":[1,-2,3],"flag":true,"letter":"x","small":-5,"medium":-300,"ratio":0.1,"precise":1.0E-7,"unsigned":4294967295,"wall":"2023-11-14T23:13:20.123+01:00","wait":"PT1.5S","node":{"name":"seven","next":null}}}`,
	`{"type":"test.Event","values":{"startTime":"2023-11-14T23:13:21.000000500+01:00","duration":"PT0.000000001S","eventThread":{"osName":"main","javaName":"main","javaThreadId":1},"message":"second","numbers":[],"flag":false,"letter":"\u0000","small":0,"medium":0,"ratio":0.0,"precise":0.0,"unsigned":0,"wall":"1970-01-01T01:00+01:00","wait":"PT-2562047788015215H-30M-8S","node":{"name":"nine","next":null}}}`,
}

func TestSynthetic(t *testing.T) {
	for _, fixed := range []bool{false, true} {
		data := syntheticRecording(fixed)
		r, err := Parse(data)
		if err != nil {
			t.Fatalf("fixed=%v: %v", fixed, err)
		}
		if len(r.Chunks) != 2 {
			t.Fatalf("fixed=%v: %d chunks", fixed, len(r.Chunks))
		}
		// Ordered: the second event ends before the first. Node 8 is read first, so its cycle
		// closes at node 8 (the JDK's result depends on the order of resolution too).
		if diff := cmp.Diff(syntheticWant, jsonLines(t, r, true)); diff != "" {
			t.Errorf("fixed=%v: JSON lines (-want +got):\n%s", fixed, diff)
		}
		s := r.Summary()
		counts := map[string]int64{}
		for _, tc := range s.Types {
			counts[tc.Name] = tc.Count
		}
		if want := map[string]int64{"jdk.Metadata": 2, "jdk.Checkpoint": 3, "test.Event": 3}; s.Chunks != 2 || !cmp.Equal(counts, want) {
			t.Errorf("fixed=%v: summary %+v, want counts %v", fixed, s, want)
		}
	}
}

func TestFilter(t *testing.T) {
	m := &Type{Name: "jdk.GarbageCollection", Category: []string{"Java Virtual Machine", "GC", "Collector"}}
	for spec, want := range map[[2]string]bool{
		{"GarbageCollection", ""}: true, {"jdk.GarbageCollection", ""}: true, {"jdk.Garbage*", ""}: true,
		{"Garbage?ollection", ""}: true, {"CPULoad,GarbageCollection", ""}: true, {"Garbage", ""}: false,
		{"", "GC"}: true, {"", "JVM"}: true, {"", "Java*"}: true, {"", "OS"}: false,
	} {
		if got := Filter(spec[0], spec[1])(m); got != want {
			t.Errorf("Filter(%q, %q) = %v, want %v", spec[0], spec[1], got, want)
		}
	}
	if Filter("", "") != nil {
		t.Error("empty filter is not nil")
	}
}

func TestNotJFR(t *testing.T) {
	for _, data := range [][]byte{nil, []byte("FL"), []byte("PK\x03\x04 a zip file"), []byte("FLR")} {
		r, err := Parse(data)
		if len(data) < 4 && bytes.HasPrefix(magic, data) {
			// A prefix of the magic: a recording cut before its first header.
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Errorf("Parse(%q) = %v, want a FormatError", data, err)
			}
			continue
		}
		if r != nil || !errors.Is(err, ErrNotJFR) {
			t.Errorf("Parse(%q) = %v, %v; want ErrNotJFR", data, r, err)
		}
	}
}

// TestTruncated cuts the synthetic recording at every offset: Parse never fails to say where, and the
// events it yields are the recording's own (the same JSON), in file order, a prefix of them per chunk.
func TestTruncated(t *testing.T) {
	data := syntheticRecording(false)
	full, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	all := jsonLines(t, full, false)
	for n := 0; n < len(data); n++ {
		r, err := Parse(data[:n])
		var fe *FormatError
		boundary := n == int(full.Chunks[0].End)
		if n > 0 && !boundary && !errors.As(err, &fe) {
			t.Fatalf("cut at %d: error %v, want a FormatError", n, err)
		}
		if fe != nil && (fe.Offset < 0 || fe.Offset > int64(n)) {
			t.Fatalf("cut at %d: damage offset %d outside the data", n, fe.Offset)
		}
		if fe != nil && strings.Contains(err.Error(), "bytes are left in the chunk") && !strings.Contains(err.Error(), "cut short") {
			t.Fatalf("cut at %d: %v: does not say the recording is cut short", n, err)
		}
		if r == nil {
			continue
		}
		var got []string
		var b bytes.Buffer
		w := r.NewJSONWriter(&b, JSONOptions{})
		for e, err := range r.Events(EventOptions{}) {
			if err != nil {
				break
			}
			w.Write(e)
		}
		w.Flush()
		if s := strings.TrimSuffix(b.String(), "\n"); s != "" {
			got = strings.Split(s, "\n")
		}
		for i, line := range got {
			// A cut chunk lacks checkpoints: their constants are lost, other values as they are.
			if d, _ := sameOrLost(t, line, all[i]); d != "" {
				t.Fatalf("cut at %d: event %d: %s\n%s\nwant\n%s", n, i, d, line, all[i])
			}
		}
	}
}

// TestCutRecording cuts the real recordings of testdata at many offsets: the events before the cut
// have the whole recording's values, except references to constants past the cut, which are lost
// markers (never null, where the whole recording has a value), as many as the event's "lost" says;
// and flame graphs draw those events' stacks under [stack lost: recording cut off], not
// [no stack trace].
func TestCutRecording(t *testing.T) {
	allLostStacks := 0
	for _, name := range []string{"demo17", "small17"} {
		data := testutil.ReadGzip(t, filepath.Join("testdata", name+".jfr.gz"))
		full, err := Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		all := jsonLines(t, full, false)
		var cuts, events, lostEvents, lostStacks int
		for n := HeaderSize + 1000; n < len(data); n += len(data) / 37 {
			r, _ := Parse(data[:n])
			if r == nil {
				t.Fatalf("cut at %d: no recording", n)
			}
			var b bytes.Buffer
			w := r.NewJSONWriter(&b, JSONOptions{})
			var lost []int
			for e, err := range r.Events(EventOptions{}) {
				if err != nil {
					break
				}
				w.Write(e)
				lost = append(lost, e.Lost)
			}
			w.Flush()
			var got []string
			if s := strings.TrimSuffix(b.String(), "\n"); s != "" {
				got = strings.Split(s, "\n")
			}
			cuts++
			// Per kind: events whose stack the whole recording has none of, and those whose stack
			// is past the cut.
			noStack, stackLost := map[FlameKind]int{}, map[FlameKind]int{}
			for i, line := range got {
				d, markers := sameOrLost(t, line, all[i])
				if d != "" {
					t.Fatalf("cut at %d: event %d: %s\n%s\nwant\n%s", n, i, d, line, all[i])
				}
				if markers != lost[i] {
					t.Fatalf("cut at %d: event %d has %d lost markers, Event.Lost %d: %s", n, i, markers, lost[i], line)
				}
				events++
				if markers > 0 {
					lostEvents++
				}
				var g, w struct {
					Type   string
					Values struct {
						StackTrace any
						Weight     int64
					}
				}
				json.Unmarshal([]byte(line), &g)
				json.Unmarshal([]byte(all[i]), &w)
				kind := map[string]FlameKind{"jdk.ExecutionSample": FlameCPU, "jdk.ObjectAllocationSample": FlameAlloc}[g.Type]
				if kind == "" || kind == FlameAlloc && g.Values.Weight <= 0 {
					continue
				}
				if w.Values.StackTrace == nil {
					noStack[kind]++
				} else if m, ok := g.Values.StackTrace.(map[string]any); ok && m["lost"] != nil {
					stackLost[kind]++
				}
			}
			for _, kind := range []FlameKind{FlameCPU, FlameAlloc} {
				f, st, _ := Flame(r, FlameOptions{Kind: kind})
				// cpu counts events; alloc weighs them by bytes, so only whether there are any.
				var lostWeight int64
				for _, s := range f.Stacks {
					if slices.Contains(s.Frames, "[stack lost: recording cut off]") {
						lostWeight += s.Count
					}
				}
				if st.NoStack != noStack[kind] {
					t.Errorf("cut at %d: %s flame: %d events drawn as %s, the whole recording has %d without a stack", n, kind, st.NoStack, FrameNoStack, noStack[kind])
				}
				if kind == FlameCPU && lostWeight != int64(stackLost[kind]) || (lostWeight > 0) != (stackLost[kind] > 0) {
					t.Errorf("cut at %d: %s flame: weight %d under [stack lost: recording cut off], %d events with a lost stack", n, kind, lostWeight, stackLost[kind])
				}
				lostStacks += stackLost[kind]
			}
		}
		t.Logf("%s: %d cuts, %d events compared, %d with lost references, %d sampled stacks lost", name, cuts, events, lostEvents, lostStacks)
		if lostEvents == 0 {
			t.Errorf("%s: no cut lost a reference: the test tests nothing", name)
		}
		allLostStacks += lostStacks
	}
	if allLostStacks == 0 {
		t.Error("no cut lost a sample's stack: the flame graph checks test nothing")
	}
}

// sameOrLost compares an event's JSON line from a cut recording with the whole recording's: the same,
// except that a constant past the cut may be a lost marker ({"lost":...}) where want has a value or
// null (a constant the JVM never wrote: the cut part cannot tell), and the line has "lost", the number
// of markers, when there are some. It returns the first difference, or "", and the number of markers
// where want has a value.
func sameOrLost(t *testing.T, got, want string) (string, int) {
	var g, w map[string]any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("%v: %s", err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%v: %s", err, want)
	}
	markers, nullLost := 0, 0
	var diff func(path string, g, w any) string
	diff = func(path string, g, w any) string {
		if m, ok := g.(map[string]any); ok && m["lost"] == "constant pool cut off" {
			// Where the whole recording has null, the constant was never written (the JVM refers to
			// constants it does not always write): the cut part cannot tell that from one written later.
			markers++
			if w == nil {
				nullLost++
			}
			return ""
		}
		switch wv := w.(type) {
		case map[string]any:
			gm, ok := g.(map[string]any)
			if !ok || len(gm) != len(wv) {
				return fmt.Sprintf("%s: %v, want %v", path, g, w)
			}
			for k := range wv {
				if d := diff(path+"."+k, gm[k], wv[k]); d != "" {
					return d
				}
			}
			return ""
		case []any:
			ga, ok := g.([]any)
			if !ok || len(ga) != len(wv) {
				return fmt.Sprintf("%s: %v, want %v", path, g, w)
			}
			for i := range wv {
				if d := diff(fmt.Sprintf("%s[%d]", path, i), ga[i], wv[i]); d != "" {
					return d
				}
			}
			return ""
		}
		if !cmp.Equal(g, w) {
			return fmt.Sprintf("%s: %v, want %v", path, g, w)
		}
		return ""
	}
	n, _ := g["lost"].(float64)
	delete(g, "lost")
	if d := diff("", g, w); d != "" {
		return d, markers
	}
	if int(n) != markers {
		return fmt.Sprintf(`"lost": %v, but %d lost markers`, g["lost"], markers), markers
	}
	return "", markers - nullLost
}

// TestCorrupt flips every byte of the synthetic recording: Parse and reading every event never panic,
// and errors carry offsets inside the data.
func TestCorrupt(t *testing.T) {
	data := syntheticRecording(false)
	for i := range data {
		flips := []byte{0xff}
		if i%3 == 0 {
			flips = append(flips, 0x80, 0x01)
		}
		for _, x := range flips {
			d := bytes.Clone(data)
			d[i] ^= x
			readAll(t, d)
		}
	}
}

// readAll does everything a command does with a recording; it must not panic on any input.
func readAll(t testing.TB, data []byte) {
	r, err := Parse(data)
	var fe *FormatError
	if errors.As(err, &fe) && (fe.Offset < 0 || fe.Offset > int64(len(data))) {
		t.Fatalf("damage offset %d outside %d bytes", fe.Offset, len(data))
	}
	if r == nil {
		return
	}
	var b bytes.Buffer
	jw := r.NewJSONWriter(&b, JSONOptions{StackDepth: 3})
	tw := r.NewTextWriter(&b, JSONOptions{})
	for e, err := range r.Events(EventOptions{Ordered: true}) {
		if err != nil {
			if errors.As(err, &fe) && (fe.Offset < 0 || fe.Offset > int64(len(data))) {
				t.Fatalf("event damage offset %d outside %d bytes", fe.Offset, len(data))
			}
			break
		}
		jw.Write(e)
		tw.Write(e)
		_ = e.StartTime()
		_ = e.Duration()
		b.Reset()
	}
	_ = r.Summary()
	_, _, _ = Leaks(r)
	for _, k := range FlameKinds {
		_, _, _ = Flame(r, FlameOptions{Kind: k})
	}
}

func TestClassName(t *testing.T) {
	for in, want := range map[string]string{
		"java/lang/String":     "java.lang.String",
		"[B":                   "byte[]",
		"[[Ljava/lang/Object;": "java.lang.Object[][]",
		"Demo$$Lambda$100+0x00007fe518009660/2086233868":    "Demo$$Lambda$100/0x00007fe518009660",
		"Demo$$Lambda/0x0000000036045428":                   "Demo$$Lambda/0x0000000036045428",
		"Demo$$Lambda$72/1881901842":                        "Demo$$Lambda$72/1881901842",
		"java/lang/invoke/LambdaForm$MH/0x0000000800c04400": "java.lang.invoke.LambdaForm$MH/0x0000000800c04400",
		"": "",
	} {
		if got := ClassName(in); got != want {
			t.Errorf("ClassName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestJavaTime(t *testing.T) {
	for _, c := range []struct {
		sec  int64
		nano int32
		zone int32
		want string
	}{
		{0, 0, 0, "1970-01-01T00:00Z"},
		{1, 0, 0, "1970-01-01T00:00:01Z"},
		{0, 5_000_000, 0, "1970-01-01T00:00:00.005Z"},
		{0, 5_000, 3600, "1970-01-01T01:00:00.000005+01:00"},
		{-1, 999_999_999, -1800, "1969-12-31T23:29:59.999999999-00:30"},
		{253402300800, 0, 0, "+10000-01-01T00:00Z"},
		{-62167219200 - 86400, 0, 0, "-0001-12-31T00:00Z"},
	} {
		if got := string(appendOffsetDateTime(nil, c.sec, c.nano, c.zone)); got != c.want {
			t.Errorf("%d.%09d %+d: %q, want %q", c.sec, c.nano, c.zone, got, c.want)
		}
	}
	for _, c := range []struct {
		d    javaDuration
		want string
	}{
		{javaDuration{}, "PT0S"},
		{javaDuration{sec: 3600*8 + 6*60 + 12, nano: 345_000_000}, "PT8H6M12.345S"},
		{javaDuration{sec: 60}, "PT1M"},
		{durationOfNanos(-1), "PT-0.000000001S"},
		{durationOfNanos(-1_500_000_000), "PT-1.5S"},
	} {
		if got := string(appendJavaDuration(nil, c.d)); got != c.want {
			t.Errorf("%+v: %q, want %q", c.d, got, c.want)
		}
	}
}

// TestJavaFloat: floats and doubles as `jfr print --json` writes them (Double.toString and
// Float.toString); the expected strings are Temurin 25's for the same bits.
func TestJavaFloat(t *testing.T) {
	for _, c := range []struct {
		bits uint64
		want string
	}{
		{0x4034000000000000, "20.0"},
		{0x0, "0.0"},
		{0x8000000000000000, "-0.0"},
		{0x3fb999999999999a, "0.1"},
		{0x3f50624dd2f1a9fc, "0.001"},
		{0x3f5061e273273f09, "9.999E-4"},
		{0x416312d000000000, "1.0E7"},
		{0x416312cfe0000000, "9999999.0"},
		{0x41678c29dccccccd, "1.23456789E7"},
		{0x44b52d02c7e14af6, "1.0E23"},
		{0x3e7ad7f29abcaf48, "1.0E-7"},
		{0x1, "4.9E-324"},
		{0x7fefffffffffffff, "1.7976931348623157E308"},
		{0x3fd5555555555555, "0.3333333333333333"},
		{0x4, "2.0E-323"},
		{0x4059200000000000, "100.5"},
		{0x40fe240c9fbe76c9, "123456.789"},
		{0x3, "1.5E-323"},
		{0x3fd3333333333334, "0.30000000000000004"},
		{0x444b1ae4d6e2ef50, "1.0E21"},
		{0x4011666666666666, "4.35"},
		{0x1b2373498ed353f, "1.7E-300"},
	} {
		if got := string(appendJSONFloat(nil, math.Float64frombits(c.bits), 64)); got != c.want {
			t.Errorf("double %#x: %q, want %q", c.bits, got, c.want)
		}
	}
	for _, c := range []struct {
		bits uint32
		want string
	}{
		{0x41a00000, "20.0"},
		{0x0, "0.0"},
		{0x80000000, "-0.0"},
		{0x3dcccccd, "0.1"},
		{0x3a83126f, "0.001"},
		{0x3a830f14, "9.999E-4"},
		{0x4b189680, "1.0E7"},
		{0x4b18967f, "9999999.0"},
		{0x4ceb79a2, "1.2345678E8"},
		{0x1, "1.4E-45"},
		{0x7f7fffff, "3.4028235E38"},
		{0x3eaaaaab, "0.33333334"},
		{0x2, "2.8E-45"},
		{0x3f000000, "0.5"},
		{0x420554fe, "33.333"},
		{0x800000, "1.1754944E-38"},
		{0x2, "2.8E-45"},
		{0x5, "7.0E-45"},
	} {
		if got := string(appendJSONFloat(nil, float64(math.Float32frombits(c.bits)), 32)); got != c.want {
			t.Errorf("float %#x: %q, want %q", c.bits, got, c.want)
		}
	}
}
