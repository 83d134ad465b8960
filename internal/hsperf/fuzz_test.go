package hsperf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"testing"
	"unicode/utf16"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// FuzzParse checks that Parse never panics, that its errors are classified, that partial results
// are usable, and that whatever it decodes survives being laid out again by buildFile. The seed
// corpus (real JDK 17 and 25 files, truncated copies, synthetic files of both byte orders, an
// empty file) is in testdata/fuzz/FuzzParse and is rewritten by TestFuzzSeedCorpus -update.
func FuzzParse(f *testing.F) {
	f.Add(buildFile(long("a", 1, Constant), str("b", "x", 4)))
	f.Fuzz(func(t *testing.T, b []byte) {
		in := bytes.Clone(b)
		d, err := Parse(b)
		if !bytes.Equal(in, b) {
			t.Fatal("Parse modified its input")
		}
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrVersion) {
				t.Fatalf("unclassified error %v", err)
			}
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
		}
		if d == nil {
			if err == nil {
				t.Fatal("nil Data without an error")
			}
			return
		}
		if len(d.Entries) > max(d.NumEntries, 0) {
			t.Fatalf("%d entries, prologue says %d", len(d.Entries), d.NumEntries)
		}
		var out bytes.Buffer
		if err := WritePerfCounters(&out, d); err != nil {
			t.Fatal(err)
		}
		d.JavaCommand()
		d.AttachSupported()
		d.VMVersion()

		// Round trip through the generator; entries of types we do not decode keep their
		// padding in Bytes, so they cannot be compared.
		known := slices.DeleteFunc(slices.Clone(d.Entries), func(e Entry) bool { return !e.isLong() && !e.isString() })
		bo := binary.ByteOrder(binary.LittleEndian)
		if d.BigEndian {
			bo = binary.BigEndian
		}
		d2, err := Parse(buildFileOrder(bo, known...))
		if err != nil {
			t.Fatalf("rebuilt file: %v", err)
		}
		if !slices.EqualFunc(known, d2.Entries, entryEqual) {
			t.Fatalf("round trip mismatch (-first +second):\n%s", cmp.Diff(known, d2.Entries, cmpopts.EquateEmpty()))
		}
	})
}

// FuzzJavaCompare checks javaCompare's fast paths against the definition: String.compareTo
// compares UTF-16 code units, and invalid UTF-8 decodes to U+FFFD per byte.
func FuzzJavaCompare(f *testing.F) {
	f.Add("sun.cls.time", "sun.cls.time.self")
	f.Add("\xc3", "é")
	f.Add("x\U0001F600", "x\uff21")
	f.Fuzz(func(t *testing.T, a, b string) {
		want := slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
		if got := javaCompare(a, b); (got < 0) != (want < 0) || (got > 0) != (want > 0) {
			t.Fatalf("javaCompare(%q, %q) = %d, want sign of %d", a, b, got, want)
		}
	})
}
