package perfmap_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/jvmkit/jvmkit/perfmap"
)

func TestParseRoundTrip(t *testing.T) {
	in := []perfmap.Entry{
		{Start: 0x7f0000001000, Size: 0x120, Name: "int java.lang.String.hashCode()"},
		{Start: 0x7f0000002000, Size: 0x1, Name: "Interpreter"},
		{Start: 0, Size: 0, Name: "x"},
	}
	var buf bytes.Buffer
	if err := perfmap.Write(&buf, in); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(buf.String(), "7f0000001000 120 int java.lang.String.hashCode()\n") {
		t.Errorf("unexpected format:\n%s", buf.String())
	}
	out, err := perfmap.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(in, out); d != "" {
		t.Errorf("round trip (-want +got):\n%s", d)
	}
}

func TestParseJVMFormat(t *testing.T) {
	// As HotSpot's Compiler.perfmap writes it.
	in := "0x00007f1c2d000100 0x0000000000000080 Interpreter\n\n0x00007f1c2d0a0000 0x00000000000001e0 void Busy.main(java.lang.String[])\r\n"
	got, err := perfmap.Parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []perfmap.Entry{
		{Start: 0x7f1c2d000100, Size: 0x80, Name: "Interpreter"},
		{Start: 0x7f1c2d0a0000, Size: 0x1e0, Name: "void Busy.main(java.lang.String[])"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

func TestParseErrors(t *testing.T) {
	for _, in := range []string{"zz 10 a\n", "10 10\n", "10\n", "-1 1 a\n", "1 0x a\n", "10000000000000000 1 a\n"} {
		if _, err := perfmap.Parse(strings.NewReader(in)); err == nil {
			t.Errorf("Parse(%q) succeeded", in)
		}
	}
}

func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*.map")
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("0x10 0x20 a b c\n"))
	f.Add([]byte("1 2\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := perfmap.Parse(bytes.NewReader(b))
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := perfmap.Write(&buf, e); err != nil {
			t.Fatal(err)
		}
		e2, err := perfmap.Parse(&buf)
		if err != nil {
			t.Fatalf("re-parse: %v", err)
		}
		if d := cmp.Diff(e, e2); d != "" {
			t.Fatalf("round trip (-first +second):\n%s", d)
		}
	})
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	e := []perfmap.Entry{{Start: 0x1000, Size: 0x10, Name: "a"}}
	if err := perfmap.WriteFileAtomic(dir, "perf-1.map", e, os.Getuid(), os.Getgid()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "perf-1.map"))
	if err != nil || string(b) != "1000 10 a\n" {
		t.Fatalf("got %q, %v", b, err)
	}
	// Replaced atomically.
	if err := perfmap.WriteFileAtomic(dir, "perf-1.map", nil, os.Getuid(), os.Getgid()); err != nil {
		t.Fatal(err)
	}
	// A symbolic link is refused and its target untouched.
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(dir, "perf-2.map")); err != nil {
		t.Fatal(err)
	}
	err = perfmap.WriteFileAtomic(dir, "perf-2.map", e, os.Getuid(), os.Getgid())
	if !errors.Is(err, perfmap.ErrNotRegular) {
		t.Fatalf("write through symlink: %v, want ErrNotRegular", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Errorf("symlink target changed: %q", b)
	}
	ents, _ := os.ReadDir(dir)
	for _, d := range ents {
		if strings.HasSuffix(d.Name(), ".tmp") {
			t.Errorf("temporary file left: %s", d.Name())
		}
	}
}
