package jitlog_test

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/jvmkit/jvmkit/perfmap/jitlog"
)

var update = flag.Bool("update", false, "rewrite golden files")

// testRec is the i-th record of a synthetic log.
func testRec(i int) jitlog.Record {
	return jitlog.Record{
		Time: uint64(1e9 + i*1000), PID: 4242, Kind: jitlog.Load,
		Start: 0x7f0000000000 + uint64(i%1000)*0x100, Size: 0x80,
		Name: fmt.Sprintf("void Foo.m%d(int)", i), Source: jitlog.SourceUSDT,
	}
}

func testRecs(n int) []jitlog.Record {
	recs := make([]jitlog.Record, n)
	for i := range recs {
		recs[i] = testRec(i)
	}
	return recs
}

func encode(t testing.TB, recs []jitlog.Record) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := jitlog.NewWriter(&buf, jitlog.WriterOptions{BatchSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Append(recs...); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func readAll(t testing.TB, b []byte) ([]jitlog.Record, []jitlog.Damage) {
	t.Helper()
	recs, dmg, err := jitlog.ReadAll(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("ReadAll: %v", err)
	}
	return recs, dmg
}

// recordOffsets returns where each record starts in an encoded log.
func recordOffsets(recs []jitlog.Record) []int {
	off := 16
	var out []int
	for _, r := range recs {
		out = append(out, off)
		off += 40 + len(r.Name) + len(r.Source)
	}
	return append(out, off)
}

func TestRoundTrip(t *testing.T) {
	recs := []jitlog.Record{
		{Time: 1, PID: 1, Kind: jitlog.Snapshot, Start: 0x1000, Size: 0x10, Name: "Interpreter", Source: jitlog.SourcePerfMap},
		{Time: 2, PID: 2147483647, Kind: jitlog.Load, Start: 1<<64 - 1, Size: 1<<64 - 1, Name: "int java.lang.String.hashCode()", Source: "usdt"},
		{Time: 1<<64 - 1, PID: 0, Kind: jitlog.Unload, Name: "ünïcödé 名前"},
		{Kind: jitlog.Load, Name: "", Source: ""},
		{Kind: jitlog.Load, Name: "JR JR JR" + strings.Repeat("JR", 100), Source: "JR"},
	}
	got, dmg := readAll(t, encode(t, recs))
	if diff := cmp.Diff(recs, got); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
	if len(dmg) != 0 {
		t.Errorf("damage in a good log: %v", dmg)
	}
}

func TestLongNamesAreCut(t *testing.T) {
	long := strings.Repeat("é", jitlog.MaxName) // 2 bytes each: cut in the middle of a rune
	got, _ := readAll(t, encode(t, []jitlog.Record{{Kind: jitlog.Load, Name: long, Source: strings.Repeat("s", 300)}}))
	if len(got) != 1 {
		t.Fatalf("got %d records, want 1", len(got))
	}
	if n := len(got[0].Name); n != jitlog.MaxName-1 || !strings.HasPrefix(long, got[0].Name) {
		t.Errorf("name cut to %d bytes, want %d (a whole rune less than MaxName)", n, jitlog.MaxName-1)
	}
	if len(got[0].Source) != jitlog.MaxSource {
		t.Errorf("source cut to %d bytes, want %d", len(got[0].Source), jitlog.MaxSource)
	}
}

func TestAppendRejects(t *testing.T) {
	w, err := jitlog.NewWriter(io.Discard, jitlog.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []jitlog.Record{{Kind: 0}, {Kind: 4}, {Kind: jitlog.Load, PID: -1}, {Kind: jitlog.Load, PID: 1 << 31}} {
		if err := w.Append(testRec(0), r); err == nil {
			t.Errorf("Append(%+v) succeeded", r)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Append(testRec(0)); err == nil {
		t.Error("Append after Close succeeded")
	}
}

// TestGolden pins the on-disk format: the writer's bytes for a fixed log, and the reader on them.
func TestGolden(t *testing.T) {
	recs := []jitlog.Record{
		{Time: 1000, PID: 4242, Kind: jitlog.Snapshot, Start: 0x7f0000001000, Size: 0x500, Name: "Interpreter", Source: jitlog.SourceVMStructs},
		{Time: 2000, PID: 4242, Kind: jitlog.Load, Start: 0x7f0000002000, Size: 0x220, Name: "int java.lang.String.hashCode()", Source: jitlog.SourceUSDT},
		{Time: 3000, PID: 4242, Kind: jitlog.Unload, Name: "int java.lang.String.hashCode()", Source: jitlog.SourceUSDT},
	}
	b := encode(t, recs)
	golden := filepath.Join("testdata", "v1.jitlog")
	if *update {
		if err := os.WriteFile(golden, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, want) {
		t.Errorf("the writer's bytes differ from %s (a format change needs a new version; -update after one)", golden)
	}
	got, dmg := readAll(t, want)
	if diff := cmp.Diff(recs, got); diff != "" || len(dmg) != 0 {
		t.Errorf("reading %s (-want +got):\n%s\ndamage: %v", golden, diff, dmg)
	}
}

func TestHeaderErrors(t *testing.T) {
	good := encode(t, nil)
	for _, c := range []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, jitlog.ErrNotLog},
		{"text", []byte("7f0000 100 foo\n"), jitlog.ErrNotLog},
		{"perf map", []byte("JVMKJLO\n"), jitlog.ErrNotLog},
	} {
		if _, err := jitlog.NewReader(bytes.NewReader(c.data)); !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
	v2 := bytes.Clone(good)
	v2[8] = 2
	var ve *jitlog.VersionError
	if _, err := jitlog.NewReader(bytes.NewReader(v2)); !errors.As(err, &ve) || ve.Version != 2 {
		t.Errorf("version 2: got %v, want *VersionError", err)
	}
	// A header cut short by a writer killed at once is an empty log with damage.
	for n := 1; n < 16; n++ {
		recs, dmg := readAll(t, good[:n])
		if len(recs) != 0 || len(dmg) != 1 || !dmg[0].AtEnd || dmg[0].Length != int64(n) {
			t.Errorf("header cut to %d bytes: %d records, damage %v", n, len(recs), dmg)
		}
	}
}

// TestTruncated cuts a log at every byte: the records read are those before the cut, and a cut inside
// a record is damage at the end.
func TestTruncated(t *testing.T) {
	recs := testRecs(20)
	b := encode(t, recs)
	offs := recordOffsets(recs)
	for n := 16; n <= len(b); n++ {
		got, dmg := readAll(t, b[:n])
		whole := 0
		for whole < len(recs) && offs[whole+1] <= n {
			whole++
		}
		if diff := cmp.Diff(recs[:whole], got, cmpEmpty); diff != "" {
			t.Fatalf("cut at %d: records (-want +got):\n%s", n, diff)
		}
		inside := n != offs[whole]
		if inside != (len(dmg) == 1) || len(dmg) > 1 {
			t.Fatalf("cut at %d (inside a record: %v): damage %v", n, inside, dmg)
		}
		if inside {
			d := dmg[0]
			if d.Offset != int64(offs[whole]) || d.Length != int64(n-offs[whole]) || !d.AtEnd {
				t.Fatalf("cut at %d: damage %+v, want offset %d length %d at the end", n, d, offs[whole], n-offs[whole])
			}
		}
	}
}

var cmpEmpty = cmp.Comparer(func(a, b []jitlog.Record) bool { return len(a) == 0 && len(b) == 0 || cmp.Equal(a, b) })

// TestCorruptMiddle flips each byte of one record: that record is skipped with damage at its offset,
// and every other record is read.
func TestCorruptMiddle(t *testing.T) {
	recs := testRecs(5)
	b := encode(t, recs)
	offs := recordOffsets(recs)
	const k = 2
	for i := offs[k]; i < offs[k+1]; i++ {
		c := bytes.Clone(b)
		c[i] ^= 0x5a
		got, dmg := readAll(t, c)
		want := append(append([]jitlog.Record{}, recs[:k]...), recs[k+1:]...)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("byte %d flipped: records (-want +got):\n%s", i, diff)
		}
		if len(dmg) != 1 || dmg[0].Offset != int64(offs[k]) || dmg[0].Length != int64(offs[k+1]-offs[k]) || dmg[0].AtEnd {
			t.Fatalf("byte %d flipped: damage %v, want one at %d of %d bytes", i, dmg, offs[k], offs[k+1]-offs[k])
		}
	}
}

func TestGarbageBetweenRecords(t *testing.T) {
	recs := testRecs(4)
	b := encode(t, recs)
	offs := recordOffsets(recs)
	garbage := []byte("JRJRJR garbage JR\x02\x00\x00\x00")
	c := append(append(bytes.Clone(b[:offs[2]]), garbage...), b[offs[2]:]...)
	c = append(c, "JR"...) // and a torn marker at the end
	got, dmg := readAll(t, c)
	if diff := cmp.Diff(recs, got); diff != "" {
		t.Fatalf("records (-want +got):\n%s", diff)
	}
	want := []jitlog.Damage{
		{Offset: int64(offs[2]), Length: int64(len(garbage)), Reason: "the log ends inside a record"},
		{Offset: int64(len(c) - 2), Length: 2, Reason: "the log ends inside a record", AtEnd: true},
	}
	// The reason for the garbage depends on its first bytes; compare offsets and lengths.
	if len(dmg) != 2 || dmg[0].Offset != want[0].Offset || dmg[0].Length != want[0].Length || dmg[0].AtEnd ||
		dmg[1] != want[1] {
		t.Errorf("damage %v, want offsets and lengths of %v", dmg, want)
	}
	for _, d := range dmg {
		if !strings.Contains(d.String(), fmt.Sprintf("offset %d", d.Offset)) {
			t.Errorf("%q does not say the offset", d)
		}
	}
}

// oneByteReader returns one byte per Read, to exercise the Reader's buffering.
type oneByteReader struct{ r io.Reader }

func (o oneByteReader) Read(p []byte) (int, error) { return o.r.Read(p[:min(1, len(p))]) }

func TestReaderSmallReads(t *testing.T) {
	recs := testRecs(50)
	recs[10].Name = strings.Repeat("x", 70000) // cut to MaxName
	b := encode(t, recs)
	b = append(b[:3000:3000], append([]byte("garbage"), b[3000:]...)...)
	got, dmg, err := jitlog.ReadAll(oneByteReader{bytes.NewReader(b)})
	if err != nil {
		t.Fatal(err)
	}
	want, wantDmg := readAll(t, b)
	if diff := cmp.Diff(want, got); diff != "" || !cmp.Equal(dmg, wantDmg) {
		t.Errorf("one byte at a time (-want +got):\n%s\ndamage %v, want %v", diff, dmg, wantDmg)
	}
}

func TestCreate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "jit.log")
	w, err := jitlog.Create(path, jitlog.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Append(testRec(0)); err != nil {
		t.Fatal(err)
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := jitlog.Create(path, jitlog.WriterOptions{}); !errors.Is(err, os.ErrExist) {
		t.Errorf("Create over an existing log: %v, want ErrExist", err)
	}
	// A symbolic link, dangling or not, is never followed.
	target := filepath.Join(dir, "target")
	link := filepath.Join(dir, "link.log")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, err := jitlog.Create(link, jitlog.WriterOptions{}); !errors.Is(err, os.ErrExist) {
		t.Errorf("Create through a dangling link: %v, want ErrExist", err)
	}
	if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the link's target was created: %v", err)
	}
	recs, dmg, err := jitlog.ReadFile(path)
	if err != nil || len(dmg) != 0 || !cmp.Equal(recs, []jitlog.Record{testRec(0)}) {
		t.Errorf("ReadFile: %v %v %v", recs, dmg, err)
	}
}

// TestBatching: records reach the file when the batch is full, on Flush and after FlushInterval.
func TestBatching(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jit.log")
	w, err := jitlog.Create(path, jitlog.WriterOptions{BatchSize: 1000, FlushInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	count := func() int {
		recs, _, err := jitlog.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return len(recs)
	}
	if err := w.Append(testRec(0)); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 0 {
		t.Errorf("%d records on disk before the batch is full", n)
	}
	deadline := time.Now().Add(5 * time.Second)
	for count() != 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := count(); n != 1 {
		t.Errorf("%d records on disk after FlushInterval, want 1", n)
	}
	if err := w.Append(testRecs(30)...); err != nil { // ~57 bytes each: the batch fills
		t.Fatal(err)
	}
	if n := count(); n < 1+17 {
		t.Errorf("%d records on disk after filling the batch, want at least %d", n, 1+17)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 31 {
		t.Errorf("%d records on disk after Flush, want 31", n)
	}
}

// writerHelper appends records to $JITLOG_TEST_LOG for ever, flushing every 100 records, and says
// "ready" after the first flush.
func writerHelper() int {
	w, err := jitlog.Create(os.Getenv("JITLOG_TEST_LOG"), jitlog.WriterOptions{BatchSize: 1 << 20})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for i := 0; ; i++ {
		if err := w.Append(testRec(i)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if i%100 == 99 {
			if err := w.Flush(); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			if i == 99 {
				fmt.Println("ready")
			}
		}
	}
}

// TestKilledWriter kills a writer with SIGKILL at random moments: the log is readable, holds whole
// batches and at most a partial record at the end.
func TestKilledWriter(t *testing.T) {
	for round := range 5 {
		path := filepath.Join(t.TempDir(), "jit.log")
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), helperEnv+"=writer", "JITLOG_TEST_LOG="+path)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		line, _ := bufio.NewReader(out).ReadString('\n')
		if line != "ready\n" {
			t.Fatalf("helper said %q", line)
		}
		time.Sleep(time.Duration(round*7) * time.Millisecond)
		if err := cmd.Process.Kill(); err != nil { // SIGKILL
			t.Fatal(err)
		}
		_ = cmd.Wait()
		recs, dmg, err := jitlog.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) < 100 {
			t.Errorf("round %d: %d records, want at least the first batch of 100", round, len(recs))
		}
		if diff := cmp.Diff(testRecs(len(recs)), recs); diff != "" {
			t.Errorf("round %d: records are not the ones written (-want +got):\n%s", round, diff)
		}
		if len(dmg) > 1 || len(dmg) == 1 && !dmg[0].AtEnd {
			t.Errorf("round %d: damage %v, want at most a cut-off tail", round, dmg)
		}
		t.Logf("round %d: %d records, damage %v", round, len(recs), dmg)
	}
}

func FuzzReadLog(f *testing.F) {
	good := encode(f, []jitlog.Record{testRec(0), testRec(1), {Kind: jitlog.Unload, Name: "x"}})
	f.Add(good)
	f.Add(good[:len(good)-3])
	f.Add(good[:16])
	f.Add(append(bytes.Clone(good[:16]), "JRJRJR\x01\x00"...))
	c := bytes.Clone(good)
	c[30] ^= 1
	f.Add(c)
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, dmg, err := jitlog.ReadAll(bytes.NewReader(b))
		if err != nil {
			return // not a log: the header is wrong
		}
		var sum int64
		for i, d := range dmg {
			if d.Offset < 16 && len(b) >= 16 || d.Length <= 0 || d.Offset+d.Length > int64(len(b)) || d.AtEnd != (d.Offset+d.Length == int64(len(b))) {
				t.Fatalf("damage %+v of a %d-byte log", d, len(b))
			}
			if i > 0 && d.Offset < dmg[i-1].Offset+dmg[i-1].Length {
				t.Fatalf("damage %v overlaps", dmg)
			}
			sum += d.Length
		}
		// Every byte is in a record or in damage.
		n := int64(16) // the header; a cut-off header is damage
		if len(b) < 16 {
			n = 0
		}
		for _, r := range recs {
			n += int64(40 + len(r.Name) + len(r.Source))
		}
		if n+sum != int64(len(b)) {
			t.Fatalf("%d bytes of records and %d of damage in a %d-byte log", n, sum, len(b))
		}
		// What was read writes back as the same records.
		again, dmg2 := readAll(t, encode(t, recs))
		if !cmp.Equal(recs, again, cmpEmpty) || len(dmg2) != 0 {
			t.Fatalf("records do not survive a round trip")
		}
	})
}
