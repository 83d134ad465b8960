package jfr

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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
	`{"type":"test.Event","values":{"startTime":"2023-11-14T23:13:20.000001+01:00","duration":"PT0.00000025S","eventThread":{"osName":"main","javaName":"main","javaThreadId":1},"message":"héllo \"wörld\"\n","numbers":[1,-2,3],"flag":true,"letter":"x","small":-5,"medium":-300,"ratio":0.1,"precise":1e-07,"unsigned":4294967295,"wall":"2023-11-14T23:13:20.123+01:00","wait":"PT1.5S","node":{"name":"seven","next":null}}}`,
	`{"type":"test.Event","values":{"startTime":"2023-11-14T23:13:21.000000500+01:00","duration":"PT0.000000001S","eventThread":{"osName":"main","javaName":"main","javaThreadId":1},"message":"second","numbers":[],"flag":false,"letter":"\u0000","small":0,"medium":0,"ratio":0,"precise":0,"unsigned":0,"wall":"1970-01-01T01:00+01:00","wait":"PT-2562047788015215H-30M-8S","node":{"name":"nine","next":null}}}`,
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
			// A cut chunk lacks checkpoints: their constants read as null, other values as they are.
			if !sameOrNull(t, line, all[i]) {
				t.Fatalf("cut at %d: event %d is\n%s\nwant\n%s", n, i, line, all[i])
			}
		}
	}
}

// sameOrNull compares JSON values, letting got have null where want has anything: a cut chunk lacks
// checkpoints, and their constants (threads, stack traces, methods, pooled strings) read as null.
func sameOrNull(t *testing.T, got, want string) bool {
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("%v: %s", err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%v: %s", err, want)
	}
	var same func(g, w any) bool
	same = func(g, w any) bool {
		if g == nil {
			return true
		}
		switch wv := w.(type) {
		case map[string]any:
			gm, ok := g.(map[string]any)
			if !ok || len(gm) != len(wv) {
				return false
			}
			for k := range wv {
				if !same(gm[k], wv[k]) {
					return false
				}
			}
			return true
		case []any:
			ga, ok := g.([]any)
			if !ok || len(ga) != len(wv) {
				return false
			}
			for i := range wv {
				if !same(ga[i], wv[i]) {
					return false
				}
			}
			return true
		}
		return cmp.Equal(g, w)
	}
	return same(g, w)
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
