package jfrexport_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jvmkit/jvmkit/cmd/internal/jfrexport"
	jvmkitcli "github.com/jvmkit/jvmkit/cmd/internal/jvmkit"
	"github.com/jvmkit/jvmkit/internal/testutil"
)

func fixture(t *testing.T) string {
	t.Helper()
	data := testutil.ReadGzip(t, filepath.Join("..", "..", "..", "jfr", "testdata", "demo17.jfr.gz"))
	path := filepath.Join(t.TempDir(), "demo17.jfr")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func jvmkit(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := jvmkitcli.Main(args, &out, &errOut, jfrexport.Command)
	return code, out.String(), errOut.String()
}

// TestExport: jvmkit jfr export, merged into jvmkit jfr next to its other subcommands, writes a table
// per event type with events (jfr/parquet's tests read them back with DuckDB).
func TestExport(t *testing.T) {
	rec := fixture(t)
	dir := filepath.Join(t.TempDir(), "out")
	code, out, stderr := jvmkit("jfr", "export", rec, "--format", "parquet", "-o", dir)
	files := strings.Fields(out)
	if code != 0 || len(files) < 5 {
		t.Fatalf("export: %d %q %q", code, out, stderr)
	}
	for _, f := range files {
		if fi, err := os.Stat(f); err != nil || fi.Size() == 0 || filepath.Dir(f) != dir {
			t.Errorf("%s: %v", f, err)
		}
	}
	if code, _, stderr := jvmkit("jfr", "export", rec, "--format", "csv", "-o", dir); code != 2 || !strings.Contains(stderr, "parquet") {
		t.Errorf("--format csv: %d %q", code, stderr)
	}
	if code, out, _ := jvmkit("jfr", "summary", rec); code != 0 || !strings.Contains(out, "jdk.ExecutionSample") {
		t.Errorf("jfr summary next to export: %d", code)
	}
}
