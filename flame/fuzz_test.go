package flame

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// stackcollapse-perf.pl's header patterns, Perl's \s spelled out; parseHeader must agree with them.
var (
	headerRE = regexp.MustCompile(`^(\S.+?)[\t\n\v\f\r ]+(\d+)/*(\d+)*[\t\n\v\f\r ]+`)
	eventRE  = regexp.MustCompile(`:[\t\n\v\f\r ]*(\d+)*[\t\n\v\f\r ]+([^\t\n\v\f\r ]+):[\t\n\v\f\r ]*$`)
)

// checkLine compares the hand-written line parsers with the regular expressions they stand for.
func checkLine(t *testing.T, line []byte) {
	h, ok := parseHeader(line)
	m := headerRE.FindSubmatch(line)
	if ok != (m != nil) || ok && (h.comm != string(m[1]) || h.pid != string(m[2]) || h.tid != string(m[3])) {
		t.Fatalf("header %q: parseHeader %v %+v, regexp %q", line, ok, h, m)
	}
	if ok {
		e := eventRE.FindSubmatch(line)
		if h.hasEvent != (e != nil) || h.hasEvent && (h.period != string(e[1]) || h.event != string(e[2])) {
			t.Fatalf("header %q: event %+v, regexp %q", line, h, e)
		}
	}
	fr, ok := parseFrame(line)
	slow, sok := parseFrameSlow(line)
	if ok != sok || fr != slow {
		t.Fatalf("frame %q: parseFrame %v %+v, regexp %v %+v", line, ok, fr, sok, slow)
	}
}

func seedFiles(f *testing.F, glob string, max int) {
	paths, err := filepath.Glob(glob)
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b[:min(len(b), max)], uint16(0))
	}
}

func FuzzFold(f *testing.F) {
	seedFiles(f, filepath.Join("testdata", "fold", "*.txt"), 2<<10)
	f.Fuzz(func(t *testing.T, data []byte, flags uint16) {
		opts := FoldOptions{
			PID: flags&1 != 0, TID: flags&2 != 0, Kernel: flags&4 != 0, JIT: flags&8 != 0,
			Addrs: flags&16 != 0, Count: flags&32 != 0, NoSplit: flags&64 != 0, Lenient: flags&128 != 0,
		}
		if flags&256 != 0 {
			opts.Event = "cycles"
		}
		for _, line := range bytes.Split(data, []byte("\n")) {
			checkLine(t, line)
		}
		folded, st, err := Fold(bytes.NewReader(data), opts)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || opts.Lenient && !isTooLong(err) && pe.Msg != "period out of range" {
				t.Fatalf("Fold: %v", err)
			}
			return
		}
		var keys []string
		for _, s := range folded.Stacks {
			if s.Count <= 0 || len(s.Frames) == 0 {
				t.Fatalf("stack %+v", s)
			}
			keys = append(keys, strings.Join(s.Frames, ";"))
		}
		if !slices.IsSorted(keys) || len(slices.Compact(slices.Clone(keys))) != len(keys) {
			t.Fatalf("stacks not sorted or not unique: %q", keys)
		}
		if st.Samples < len(folded.Stacks) {
			t.Fatalf("%d samples for %d stacks", st.Samples, len(folded.Stacks))
		}
		// What Fold writes, ParseFolded reads back unchanged, unless a name has a line break or a count
		// is zero ("\r" and ";" inside names survive: only "\n" splits lines).
		var buf bytes.Buffer
		if err := WriteFolded(&buf, folded); err != nil {
			t.Fatal(err)
		}
		back, err := ParseFolded(&buf)
		if err != nil {
			t.Fatalf("ParseFolded(WriteFolded(Fold)): %v", err)
		}
		if len(back.Stacks) != len(folded.Stacks) {
			t.Fatalf("round trip: %d stacks, want %d", len(back.Stacks), len(folded.Stacks))
		}
	})
}

func isTooLong(err error) bool {
	return err != nil && strings.Contains(err.Error(), "longer than")
}

func FuzzParseFolded(f *testing.F) {
	seedFiles(f, filepath.Join("testdata", "fold", "*.folded"), 2<<10)
	f.Add([]byte("a;b 1\na;b 2\n\nc 3\r\n"), uint16(0))
	f.Add([]byte("a;b 1 2\n"), uint16(0))
	f.Add([]byte("a;<b>&\"'; 9223372036854775807\n"), uint16(1))
	f.Fuzz(func(t *testing.T, data []byte, flags uint16) {
		folded, err := ParseFolded(bytes.NewReader(data))
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := WriteFolded(&buf, folded); err != nil {
			t.Fatal(err)
		}
		again, err := ParseFolded(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatalf("ParseFolded(WriteFolded): %v\n%q", err, buf.Bytes())
		}
		var buf2 bytes.Buffer
		WriteFolded(&buf2, again)
		if !bytes.Equal(buf.Bytes(), buf2.Bytes()) {
			t.Fatalf("not stable:\n%q\n%q", buf.Bytes(), buf2.Bytes())
		}
		// Any names make a well-formed SVG.
		var svg bytes.Buffer
		if err := WriteSVG(&svg, folded, SVGOptions{Reverse: flags&1 != 0, MinWidth: float64(flags>>1) / 100}); err != nil {
			t.Fatal(err)
		}
		dec := xml.NewDecoder(&svg)
		for {
			if _, err := dec.Token(); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("SVG not well-formed: %v", err)
			}
		}
		if _, err := Pprof(folded, PprofOptions{}); err != nil {
			t.Fatal(err)
		}
	})
}
