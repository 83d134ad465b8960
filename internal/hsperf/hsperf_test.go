package hsperf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden and the FuzzParse seed corpus")

// buildFile lays out a little-endian hsperfdata image the way HotSpot's PerfData::create_entry
// does: header, NUL-terminated name, padding to the element size, value, padding to 8 bytes.
func buildFile(entries ...Entry) []byte {
	return buildFileOrder(binary.LittleEndian, entries...)
}

func buildFileOrder(bo binary.ByteOrder, entries ...Entry) []byte {
	b := make([]byte, prologueSize)
	for _, e := range entries {
		dataOff := entryHeaderSize + len(e.Name) + 1
		vlen := e.VectorLength
		var data []byte
		switch {
		case e.Type == TypeLong && vlen == 0:
			dataOff = alignUp(dataOff, 8)
			data = make([]byte, 8)
			bo.PutUint64(data, uint64(e.Long))
		case e.Type == TypeByte:
			n := len(e.Bytes)
			if e.Units == UnitsString && vlen < n {
				n++ // room for the terminating NUL, unless the string fills the given capacity
			}
			vlen = max(vlen, n, 1)
			data = make([]byte, vlen)
			copy(data, e.Bytes)
		default:
			data = e.Bytes
		}
		length := alignUp(dataOff+len(data), 8)
		ent := make([]byte, length)
		bo.PutUint32(ent[0:], uint32(length))
		bo.PutUint32(ent[4:], entryHeaderSize)
		bo.PutUint32(ent[8:], uint32(vlen))
		ent[12] = e.Type
		if e.Supported {
			ent[13] = flagSupported
		}
		ent[14], ent[15] = byte(e.Units), byte(e.Variability)
		bo.PutUint32(ent[16:], uint32(dataOff))
		copy(ent[entryHeaderSize:], e.Name)
		copy(ent[dataOff:], data)
		b = append(b, ent...)
	}
	binary.BigEndian.PutUint32(b, magic)
	if bo == binary.LittleEndian {
		b[4] = 1
	}
	b[5], b[6], b[7] = 2, 0, 1
	bo.PutUint32(b[8:], uint32(len(b)))
	bo.PutUint64(b[16:], 0x0102030405060708)
	bo.PutUint32(b[24:], prologueSize)
	bo.PutUint32(b[28:], uint32(len(entries)))
	return b
}

func alignUp(n, a int) int { return (n + a - 1) / a * a }

func long(name string, v int64, vari Variability) Entry {
	return Entry{Name: name, Type: TypeLong, Units: UnitsTicks, Variability: vari, Supported: true, Long: v}
}

func str(name, v string, capacity int) Entry {
	return Entry{Name: name, Type: TypeByte, Units: UnitsString, Variability: Constant, Supported: true,
		VectorLength: capacity, Bytes: []byte(v)}
}

// sample are entries shaped like a real JVM's.
func sample() []Entry {
	return []Entry{
		long("sun.os.hrt.frequency", 1000000000, Constant),
		str("sun.rt.javaCommand", "Sleeper", 0),
		str("sun.rt.jvmCapabilities", "1100", 65),
		long("sun.rt.safepoints", -3, Monotonic),
		str("java.property.java.vm.version", "17.0.15+6", 0),
		str("sun.gc.cause", "", 64),
	}
}

// normalized is what Parse is expected to return for entries given to buildFile.
func normalized(entries []Entry) []Entry {
	out := make([]Entry, len(entries))
	for i, e := range entries {
		if e.Type == TypeByte && e.Units == UnitsString {
			e.VectorLength = max(e.VectorLength, len(e.Bytes)+1)
			if len(e.Bytes) == 0 {
				e.Bytes = nil
			}
		}
		out[i] = e
	}
	return out
}

func TestParseSynthetic(t *testing.T) {
	for _, bo := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
		t.Run(bo.String(), func(t *testing.T) {
			b := buildFileOrder(bo, sample()...)
			d, err := Parse(b)
			if err != nil {
				t.Fatal(err)
			}
			want := &Data{
				Major: 2, Minor: 0, BigEndian: bo == binary.BigEndian, Accessible: true,
				Used: len(b), ModTimeStamp: 0x0102030405060708, NumEntries: len(sample()), Size: len(b),
				Entries: normalized(sample()),
			}
			if diff := cmp.Diff(want, d); diff != "" {
				t.Errorf("Parse mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAccessors(t *testing.T) {
	d, err := Parse(buildFile(sample()...))
	if err != nil {
		t.Fatal(err)
	}
	if got := d.JavaCommand(); got != "Sleeper" {
		t.Errorf("JavaCommand() = %q", got)
	}
	if s, k := d.AttachSupported(); !s || !k {
		t.Errorf("AttachSupported() = %v, %v; want true, true", s, k)
	}
	if got := d.VMVersion(); got != "17.0.15+6" {
		t.Errorf("VMVersion() = %q", got)
	}
	if v, ok := d.Long("sun.rt.safepoints"); !ok || v != -3 {
		t.Errorf("Long(sun.rt.safepoints) = %d, %v", v, ok)
	}
	if _, ok := d.Long("sun.rt.javaCommand"); ok {
		t.Error("Long of a string counter succeeded")
	}
	if _, ok := d.String("sun.os.hrt.frequency"); ok {
		t.Error("String of a long counter succeeded")
	}
	if s, ok := d.String("sun.gc.cause"); !ok || s != "" {
		t.Errorf("String(sun.gc.cause) = %q, %v", s, ok)
	}
	if _, ok := d.Lookup("nope"); ok {
		t.Error("Lookup(nope) succeeded")
	}

	d, err = Parse(buildFile(str("sun.rt.jvmCapabilities", "0100", 0), str("x", "first", 0), str("x", "second", 0)))
	if err != nil {
		t.Fatal(err)
	}
	if s, k := d.AttachSupported(); s || !k {
		t.Errorf("AttachSupported() = %v, %v; want false, true", s, k)
	}
	if s, _ := d.String("x"); s != "second" {
		t.Errorf("duplicate name: String(x) = %q, want the later entry", s)
	}
	var nilData *Data
	if s, k := nilData.AttachSupported(); s || k || nilData.JavaCommand() != "" || nilData.Counters() != nil {
		t.Error("nil *Data is not empty")
	}
}

func TestEntryString(t *testing.T) {
	for _, tc := range []struct {
		e    Entry
		want string
	}{
		{long("a", -42, Constant), "-42"},
		{str("a", `say "hi"`, 9), `"say "hi""`}, // jcmd escapes nothing
		{Entry{Type: TypeByte, VectorLength: 8, Bytes: []byte("ab\x00cd")}, `"ab"`},
		{Entry{Type: 'D', Bytes: make([]byte, 8)}, `<unsupported type 'D' vector length 0>`},
	} {
		if got := tc.e.String(); got != tc.want {
			t.Errorf("%+v.String() = %s, want %s", tc.e, got, tc.want)
		}
	}
}

func TestCountersAndWrite(t *testing.T) {
	b := buildFile(
		long("sun.cls.appClassLoadTime.self", 1, Variable),
		long("sun.cls.appClassLoadTime", 2, Variable),
		str("java.property.java.vm.name", "OpenJDK", 0),
		long("sun.perfdata.used", 7, Variable), // a file entry replaces a pseudo counter
		long("b\U0001F600", 3, Constant),       // a supplementary character sorts before U+FF21 in Java
		long("b\uff21", 4, Constant),
	)
	d, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WritePerfCounters(&buf, d); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`b`+"\U0001F600"+`=3
b`+"\uff21"+`=4
java.property.java.vm.name="OpenJDK"
sun.cls.appClassLoadTime=2
sun.cls.appClassLoadTime.self=1
sun.perfdata.majorVersion=2
sun.perfdata.minorVersion=0
sun.perfdata.overflow=0
sun.perfdata.size=%d
sun.perfdata.timestamp=72623859790382856
sun.perfdata.used=7
`, len(b))
	if diff := cmp.Diff(want, buf.String()); diff != "" {
		t.Errorf("WritePerfCounters mismatch (-want +got):\n%s", diff)
	}
}

func TestJavaCompare(t *testing.T) {
	sign := func(n int) int { return min(max(n, -1), 1) }
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"a", "a", 0},
		{"a", "a.b", -1},
		{"a.b", "a_b", -1},
		{"B", "a", -1},
		{"\U0001F600", "\uff21", -1}, // UTF-16: D83D < FF21; UTF-8 bytes would say the opposite
		{"\U0001F600", "\U0001F601", -1},
		{"\U0001F600", "\U00020000", -1},
		{"é", "z", 1},
	} {
		if got := sign(javaCompare(tc.a, tc.b)); got != tc.want {
			t.Errorf("javaCompare(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if got := sign(javaCompare(tc.b, tc.a)); got != -tc.want {
			t.Errorf("javaCompare(%q, %q) = %d, want %d", tc.b, tc.a, got, -tc.want)
		}
	}
}

func TestJavaCompareReference(t *testing.T) {
	ref := func(a, b string) int {
		ua, ub := utf16.Encode([]rune(a)), utf16.Encode([]rune(b))
		return slices.Compare(ua, ub)
	}
	words := []string{"", "a", "ab", "a.b", "a_b", "é", "éa", "\xc3", "\xc3\xa9", "\xa9", "a\xff", "\uffff",
		"\U0001F600", "\U0001F601", "x\U0001F600y", "x\uff21", "\ud7ff", "\ue000", "sun.gc.x", "sun.gc\u00e9"}
	sign := func(n int) int { return min(max(n, -1), 1) }
	for _, a := range words {
		for _, b := range words {
			if got, want := sign(javaCompare(a, b)), sign(ref(a, b)); got != want {
				t.Errorf("javaCompare(%q, %q) = %d, UTF-16 order says %d", a, b, got, want)
			}
		}
	}
}

// entryAt returns the offset of entry i of a buildFile image.
func entryAt(b []byte, i int) int {
	off := prologueSize
	for range i {
		off += int(binary.LittleEndian.Uint32(b[off:]))
	}
	return off
}

func TestParseCorrupt(t *testing.T) {
	le := binary.LittleEndian
	good := buildFile(sample()...)
	second := entryAt(good, 1)
	for _, tc := range []struct {
		name    string
		mutate  func(b []byte) []byte
		entries int    // entries returned with the error; -1: nil Data
		want    string // in the error message
		version bool   // ErrVersion instead of ErrCorrupt
	}{
		{"empty", func([]byte) []byte { return nil }, -1, "shorter than the 32-byte prologue", false},
		{"bad magic", func(b []byte) []byte { b[0] = 0; return b }, -1, "bad magic", false},
		{"bad byte order", func(b []byte) []byte { b[4] = 7; return b }, -1, "bad byte order 7", false},
		{"version 3", func(b []byte) []byte { b[5] = 3; return b }, 0, "version 3.0", true},
		{"entry offset past end", func(b []byte) []byte { le.PutUint32(b[24:], 1<<20); return b }, 0, "entry offset", false},
		{"entry offset in prologue", func(b []byte) []byte { le.PutUint32(b[24:], 8); return b }, 0, "entry offset", false},
		{"entry offset misaligned", func(b []byte) []byte { le.PutUint32(b[24:], 34); return b }, 0, "not 4-byte aligned", false},
		{"negative count", func(b []byte) []byte { le.PutUint32(b[28:], 0xffffffff); return b }, 0, "negative entry count", false},
		{"count too large", func(b []byte) []byte { le.PutUint32(b[28:], 1<<30); return b }, len(sample()), "entry 6 at", false},
		{"count too large, zero padding", func(b []byte) []byte {
			le.PutUint32(b[28:], uint32(len(sample())+1))
			return append(b, make([]byte, 64)...)
		}, len(sample()), "zero length", false},
		{"zero length", func(b []byte) []byte { le.PutUint32(b[second:], 0); return b }, 1, "entry 1 at 0x58: zero length", false},
		{"length past end", func(b []byte) []byte { le.PutUint32(b[second:], 1<<20); return b }, 1, "length 1048576 out of range", false},
		{"negative length", func(b []byte) []byte { le.PutUint32(b[second:], 0xfffffff0); return b }, 1, "out of range", false},
		{"length unaligned", func(b []byte) []byte { le.PutUint32(b[second:], 42); return b }, 1, "not a multiple of 4", false},
		{"name offset", func(b []byte) []byte { le.PutUint32(b[second+4:], 1000); return b }, 1, "name offset 1000", false},
		{"name offset in header", func(b []byte) []byte { le.PutUint32(b[second+4:], 4); return b }, 1, "name offset 4", false},
		{"data offset", func(b []byte) []byte { le.PutUint32(b[second+16:], 1000); return b }, 1, "data offset 1000", false},
		{"negative vector", func(b []byte) []byte { le.PutUint32(b[second+8:], 0xffffffff); return b }, 1, "negative vector length", false},
		{"vector too long", func(b []byte) []byte { le.PutUint32(b[second+8:], 1000); return b }, 1, "runs past the entry", false},
		{"units", func(b []byte) []byte { b[second+14] = 9; return b }, 1, "invalid units 9", false},
		{"variability", func(b []byte) []byte { b[second+15] = 0; return b }, 1, "invalid variability 0", false},
		{"empty name", func(b []byte) []byte { b[second+entryHeaderSize] = 0; return b }, 1, "empty name", false},
		{"unterminated name", func(b []byte) []byte {
			dataOff := int(le.Uint32(b[second+16:]))
			for i := second + entryHeaderSize; i < second+dataOff; i++ {
				b[i] = 'x'
			}
			return b
		}, 1, "not NUL-terminated", false},
		{"long past entry", func(b []byte) []byte {
			le.PutUint32(b[prologueSize+16:], le.Uint32(b[prologueSize:])-4)
			return b
		}, 0, "long value runs past the entry", false},
		{"truncated in header", func(b []byte) []byte { return b[:second+10] }, 1, "header runs past the end", false},
		{"truncated in entry", func(b []byte) []byte { return b[:second+30] }, 1, "out of range", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Parse(tc.mutate(bytes.Clone(good)))
			sentinel := ErrCorrupt
			if tc.version {
				sentinel = ErrVersion
			}
			if !errors.Is(err, sentinel) {
				t.Fatalf("Parse error = %v, want %v", err, sentinel)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
			if tc.entries < 0 {
				if d != nil {
					t.Errorf("got Data %+v, want nil", d)
				}
				return
			}
			if d == nil {
				t.Fatal("got nil Data")
			}
			if diff := cmp.Diff(normalized(sample())[:tc.entries], d.Entries, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("partial entries mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseUnknownType(t *testing.T) {
	odd := Entry{Name: "x.double", Type: 'D', Units: UnitsNone, Variability: Constant, Bytes: []byte{1, 2, 3, 4, 5, 6, 7, 8}}
	d, err := Parse(buildFile(odd, long("after", 5, Constant)))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Entries) != 2 || d.Entries[0].Type != 'D' || !bytes.HasPrefix(d.Entries[0].Bytes, odd.Bytes) {
		t.Fatalf("entries = %+v", d.Entries)
	}
	if v, _ := d.Long("after"); v != 5 {
		t.Errorf("entry after an unknown type: %d", v)
	}
}

// realFiles are hsperfdata images copied from live JVMs by TestLiveParity -capture.
func realFiles(t testing.TB) []string {
	files, err := filepath.Glob("testdata/*.hsperfdata")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/*.hsperfdata: %v", err)
	}
	return files
}

func TestRealTruncated(t *testing.T) {
	for _, file := range realFiles(t) {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		full, err := Parse(b)
		if err != nil {
			t.Fatal(err)
		}
		used := full.Used
		for n := 0; n < used; n++ {
			d, err := Parse(b[:n])
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%s[:%d]: error %v, want ErrCorrupt", file, n, err)
			}
			if d == nil {
				continue
			}
			if len(d.Entries) >= len(full.Entries) || !slices.EqualFunc(d.Entries, full.Entries[:len(d.Entries)], entryEqual) {
				t.Fatalf("%s[:%d]: entries are not a strict prefix of the full parse", file, n)
			}
		}
	}
}

func TestGolden(t *testing.T) {
	for _, file := range realFiles(t) {
		base := strings.TrimSuffix(file, ".hsperfdata")
		t.Run(filepath.Base(base), func(t *testing.T) {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			d, err := Parse(b)
			if err != nil {
				t.Fatal(err)
			}
			if !d.Accessible || len(d.Entries) != d.NumEntries || d.Overflow != 0 {
				t.Errorf("accessible %v, %d entries, prologue says %d, overflow %d",
					d.Accessible, len(d.Entries), d.NumEntries, d.Overflow)
			}
			if d.JavaCommand() != "Sleeper" {
				t.Errorf("JavaCommand() = %q", d.JavaCommand())
			}
			if s, k := d.AttachSupported(); !s || !k {
				t.Errorf("AttachSupported() = %v, %v", s, k)
			}
			var out bytes.Buffer
			if err := WritePerfCounters(&out, d); err != nil {
				t.Fatal(err)
			}
			golden := base + ".golden"
			if *update {
				if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update)", err)
			}
			if diff := cmp.Diff(string(want), out.String()); diff != "" {
				t.Errorf("WritePerfCounters differs from %s (-want +got):\n%s", golden, diff)
			}

			// The jcmd output captured right after the file: same names, same order, and the
			// same values wherever the counter cannot change.
			jout, err := os.ReadFile(base + ".jcmd")
			if err != nil {
				t.Fatal(err)
			}
			jc, err := parseJcmd(string(jout))
			if err != nil {
				t.Fatal(err)
			}
			compareWithJcmd(t, d, jc)
		})
	}
}

// entryEqual is cmp.Equal for entries, fast enough for the thousands of prefixes of a real file.
func entryEqual(a, b Entry) bool {
	return a.Name == b.Name && a.Type == b.Type && a.Units == b.Units && a.Variability == b.Variability &&
		a.Supported == b.Supported && a.VectorLength == b.VectorLength && a.Long == b.Long && bytes.Equal(a.Bytes, b.Bytes)
}

type counterLine struct{ name, value string }

var jcmdLine = regexp.MustCompile(`^([A-Za-z0-9_.$-]+)=(.*)$`)

// parseJcmd splits the output of jcmd <pid> PerfCounter.print into counters. jcmd escapes
// nothing, so a line that does not start with a name continues the previous value.
func parseJcmd(out string) ([]counterLine, error) {
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) == 0 || !strings.HasSuffix(lines[0], ":") {
		return nil, fmt.Errorf("jcmd output does not start with <pid>: %.100q", out)
	}
	if _, err := strconv.Atoi(strings.TrimSuffix(lines[0], ":")); err != nil {
		return nil, fmt.Errorf("jcmd output does not start with <pid>: %.100q", out)
	}
	var cs []counterLine
	for _, l := range lines[1:] {
		if m := jcmdLine.FindStringSubmatch(l); m != nil {
			cs = append(cs, counterLine{m[1], m[2]})
			continue
		}
		if len(cs) == 0 {
			return nil, fmt.Errorf("unexpected jcmd line %q", l)
		}
		cs[len(cs)-1].value += "\n" + l
	}
	return cs, nil
}

func compareWithJcmd(t *testing.T, d *Data, jc []counterLine) {
	t.Helper()
	ours := d.Counters()
	var ourNames, theirNames []string
	for _, e := range ours {
		ourNames = append(ourNames, e.Name)
	}
	for _, c := range jc {
		theirNames = append(theirNames, c.name)
	}
	if diff := cmp.Diff(theirNames, ourNames); diff != "" {
		t.Fatalf("counter names or order differ from jcmd (-jcmd +ours):\n%s", diff)
	}
	constants := 0
	for i, e := range ours {
		if e.Variability != Constant {
			continue
		}
		constants++
		if got := e.String(); got != jc[i].value {
			t.Errorf("%s: ours %s, jcmd %s", e.Name, got, jc[i].value)
		}
	}
	t.Logf("%d counters, %d constant ones compared by value", len(ours), constants)
}

// seeds are the FuzzParse seed corpus, written to testdata/fuzz/FuzzParse by -update.
func seeds(t testing.TB) map[string][]byte {
	m := map[string][]byte{
		"empty":        {},
		"littleendian": buildFile(sample()...),
		"bigendian":    buildFileOrder(binary.BigEndian, sample()...),
	}
	for _, file := range realFiles(t) {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(file), ".hsperfdata")
		m[name] = b
		// Cut in the middle of an entry, where a torn read of a live file could end.
		m[name+"-truncated"] = b[:len(b)/8+13]
	}
	return m
}

func TestFuzzSeedCorpus(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzParse")
	for name, b := range seeds(t) {
		path := filepath.Join(dir, name)
		if *update {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			data := "go test fuzz v1\n[]byte(" + strconv.Quote(string(b)) + ")\n"
			if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update)", err)
		}
		body, ok := strings.CutPrefix(string(data), "go test fuzz v1\n[]byte(")
		if !ok {
			t.Fatalf("%s: not a go test fuzz v1 []byte file", path)
		}
		got, err := strconv.Unquote(strings.TrimSuffix(strings.TrimSpace(body), ")"))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if got != string(b) {
			t.Errorf("%s is stale (run with -update)", path)
		}
	}
}

func BenchmarkParse(b *testing.B) {
	img, err := os.ReadFile(realFiles(b)[0])
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(img)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(img); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWritePerfCounters(b *testing.B) {
	img, err := os.ReadFile(realFiles(b)[0])
	if err != nil {
		b.Fatal(err)
	}
	d, err := Parse(img)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var buf bytes.Buffer
	for b.Loop() {
		buf.Reset()
		if err := WritePerfCounters(&buf, d); err != nil {
			b.Fatal(err)
		}
	}
}
