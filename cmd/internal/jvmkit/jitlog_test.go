package jvmkit_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jvmkit/jvmkit/cmd/internal/cliutil"
	jvmkitcli "github.com/jvmkit/jvmkit/cmd/internal/jvmkit"
	"github.com/jvmkit/jvmkit/perfmap/jitlog"
)

const pid = 4242

func sec(s float64) uint64 { return uint64(s * 1e9) }

// symbolizeLog is the log of perfmap/jitlog/testdata/symbolize (see perfmap/jitlog/symbolize_test.go).
func symbolizeLog() []jitlog.Record {
	rec := func(t uint64, kind jitlog.Kind, start, size uint64, name, source string) jitlog.Record {
		return jitlog.Record{Time: t, PID: pid, Kind: kind, Start: start, Size: size, Name: name, Source: source}
	}
	return []jitlog.Record{
		rec(sec(1000), jitlog.Snapshot, 0x7f0000001000, 0x1000, "Interpreter", jitlog.SourceVMStructs),
		rec(sec(1000.5), jitlog.Load, 0x7f0000010000, 0x200, "int Foo.a()", jitlog.SourceUSDT),
		rec(sec(1001), jitlog.Load, 0x7f0000010000, 0x100, "int Foo.b()", jitlog.SourceUSDT),
		rec(sec(1000.2), jitlog.Load, 0x7f0000020000, 0x100, "void Foo.c()", jitlog.SourceUSDT),
		rec(sec(1000.8), jitlog.Unload, 0, 0, "void Foo.c()", jitlog.SourceUSDT),
	}
}

// writeLog writes records as a log file in a test directory.
func writeLog(t *testing.T, recs []jitlog.Record) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "jit.log")
	w, err := jitlog.Create(path, jitlog.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Append(recs...); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func jvmkit(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = jvmkitcli.Main(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestCommandSymbolize(t *testing.T) {
	log := writeLog(t, symbolizeLog())
	dir := filepath.Join("..", "..", "..", "perfmap", "jitlog", "testdata", "symbolize")
	for _, c := range []struct{ input, golden, warn string }{
		{"fields.txt", "fields.golden", ""},
		{"default.txt", "default.golden", ""},
		{"untimed.txt", "untimed.golden", "have no time"},
	} {
		code, out, stderr := jvmkit("symbolize", "--log", log, filepath.Join(dir, c.input))
		want, err := os.ReadFile(filepath.Join(dir, c.golden))
		if err != nil {
			t.Fatal(err)
		}
		if code != 0 || out != string(want) {
			t.Errorf("symbolize %s: exit %d, output differs from %s:\n%s\nstderr: %s", c.input, code, c.golden, out, stderr)
		}
		if c.warn == "" && stderr != "" || c.warn != "" && !strings.Contains(stderr, c.warn) {
			t.Errorf("symbolize %s: stderr %q, want a warning containing %q", c.input, stderr, c.warn)
		}
	}
	// A damaged log: read around the damage, with a warning.
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(t.TempDir(), "cut.log")
	if err := os.WriteFile(cut, b[:len(b)-5], 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := jvmkit("symbolize", "--log", cut, filepath.Join(dir, "fields.txt"))
	if code != 0 || !strings.Contains(stderr, "offset") || !strings.Contains(stderr, "read 4 records") {
		t.Errorf("damaged log: exit %d, stderr %q", code, stderr)
	}
	for _, args := range [][]string{
		{"symbolize", filepath.Join(dir, "fields.txt")},
		{"symbolize", "--log", log, "--pid", "-1"},
		{"jitlog", "perfmap", log, "--at", "1", "--from", "2", "--to", "3"},
		{"jitlog", "perfmap", log, "--from", "2"},
		{"jitlog", "perfmap", log, "--at", "yesterday"},
	} {
		if code, _, stderr := jvmkit(args...); code != cliutil.ExitUsage {
			t.Errorf("%v: exit %d (%s), want %d", args, code, stderr, cliutil.ExitUsage)
		}
	}
	if code, _, stderr := jvmkit("symbolize", "--log", filepath.Join(dir, "fields.txt")); code != cliutil.ExitFailed || !strings.Contains(stderr, "not a JIT log") {
		t.Errorf("a perf script file as log: exit %d, stderr %q", code, stderr)
	}
}

func TestCommandJitlog(t *testing.T) {
	log := writeLog(t, symbolizeLog())
	code, out, _ := jvmkit("jitlog", "dump", log)
	if want := "1000.500000000 4242 LOAD 7f0000010000 200 usdt int Foo.a()\n"; code != 0 || !strings.Contains(out, want) || strings.Count(out, "\n") != 5 {
		t.Errorf("dump: exit %d:\n%s\nwant 5 lines with %q", code, out, want)
	}
	code, out, _ = jvmkit("jitlog", "dump", "--spans", log)
	if want := "- - 4242 7f0000001000 1000 SNAPSHOT Interpreter\n"; code != 0 || !strings.Contains(out, want) ||
		!strings.Contains(out, "1000.500000000 1001.000000000 4242 7f0000010000 200 LOAD int Foo.a()\n") {
		t.Errorf("dump --spans: exit %d:\n%s", code, out)
	}
	code, out, _ = jvmkit("--json", "jitlog", "dump", log)
	var doc struct {
		Schema string
		Data   struct {
			Records []jitlog.Record
			Damage  []jitlog.Damage
			Stats   jitlog.Stats
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 0 || doc.Schema != "jvmkit.jitlog/v1" ||
		len(doc.Data.Records) != 5 || doc.Data.Records[1].Kind != jitlog.Load || doc.Data.Stats.Unloaded != 1 {
		t.Errorf("dump --json: exit %d, %v: %+v", code, err, doc)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--at", "1000.6"}, "7f0000001000 1000 Interpreter\n7f0000010000 200 int Foo.a()\n7f0000020000 100 void Foo.c()\n"},
		{nil, "7f0000001000 1000 Interpreter\n7f0000010000 100 int Foo.b()\n"},
		{[]string{"--from", "1000.1", "--to", "1001.4"}, "7f0000001000 1000 Interpreter\n7f0000010000 200 int Foo.a()\n7f0000020000 100 void Foo.c()\n"}, // a 0.5 s, b 0.4 s
		{[]string{"--from", "1000.1", "--to", "1001.9"}, "7f0000001000 1000 Interpreter\n7f0000010000 100 int Foo.b()\n7f0000020000 100 void Foo.c()\n"}, // b 0.9 s
	} {
		code, out, stderr := jvmkit(append([]string{"jitlog", "perfmap", log}, c.args...)...)
		if code != 0 || out != c.want {
			t.Errorf("perfmap %v: exit %d (%s):\n%s\nwant\n%s", c.args, code, stderr, out, c.want)
		}
	}
	mapFile := filepath.Join(t.TempDir(), "perf-4242.map")
	if code, _, stderr := jvmkit("jitlog", "perfmap", log, "--pid", "4242", "-o", mapFile); code != 0 {
		t.Fatalf("perfmap -o: exit %d: %s", code, stderr)
	}
	if b, err := os.ReadFile(mapFile); err != nil || !strings.Contains(string(b), "int Foo.b()") {
		t.Errorf("perfmap -o wrote %q, %v", b, err)
	}
}
