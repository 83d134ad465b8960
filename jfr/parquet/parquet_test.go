package parquet_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jvmkit/jvmkit/internal/testutil"
	"github.com/jvmkit/jvmkit/jfr"
	"github.com/jvmkit/jvmkit/jfr/parquet"
)

func TestMain(m *testing.M) { testutil.Main(m) }

// duckDBNode is where the set-up installs DuckDB's Node.js bindings (npm @duckdb/node-api, with its
// prebuilt library); $JVMKIT_DUCKDB_NODE overrides it.
func duckDBNode(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("JVMKIT_DUCKDB_NODE")
	if dir == "" {
		cache := os.Getenv("JVMKIT_CACHE")
		if cache == "" {
			cache = "/var/cache/jvmkit"
		}
		dir = filepath.Join(cache, "duckdb-node")
	}
	testutil.MustHaveTool(t, "node")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@duckdb", "node-api")); err != nil {
		testutil.Skipf(t, "DuckDB for Node.js is not installed in %s (sudo scripts/setup installs it)", dir)
	}
	return dir
}

// duckDBCounts reads every file with DuckDB, all columns of every row, and returns the rows per file.
func duckDBCounts(t *testing.T, node string, files []string) map[string]int64 {
	t.Helper()
	script, err := filepath.Abs(filepath.Join("testdata", "duckdb_counts.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", append([]string{script}, files...)...)
	cmd.Env = append(os.Environ(), "DUCKDB_NODE="+node)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("duckdb: %v\n%s", err, errOut.String())
	}
	counts := map[string]int64{}
	if err := json.Unmarshal(out.Bytes(), &counts); err != nil {
		t.Fatalf("duckdb output %q: %v", out.String(), err)
	}
	return counts
}

// checkExport exports a recording and reads every table back with DuckDB: one table per event type
// with events, each with as many rows as jfr summary counts events.
func checkExport(t *testing.T, node string, r *jfr.Recording) {
	t.Helper()
	dir := t.TempDir()
	files, err := parquet.Export(r, dir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{}
	for _, tc := range r.Summary().Types {
		if tc.Count > 0 && tc.Name != "jdk.Metadata" && tc.Name != "jdk.Checkpoint" {
			want[filepath.Join(dir, tc.Name+".parquet")] = tc.Count
		}
	}
	got := duckDBCounts(t, node, files)
	for f, n := range want {
		if got[f] != n {
			t.Errorf("%s: DuckDB reads %d rows, jfr summary counts %d events", filepath.Base(f), got[f], n)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d tables, %d event types with events", len(got), len(want))
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".*"))
	if len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
	t.Logf("%d tables read back by DuckDB with the summary's counts", len(got))
}

func TestDuckDBGolden(t *testing.T) {
	node := duckDBNode(t)
	data := testutil.ReadGzip(t, filepath.Join("..", "testdata", "small17.jfr.gz"))
	r, err := jfr.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	checkExport(t, node, r)
}

// TestDuckDBLive exports a profile recording of the Demo workload on JDK 17: some eighty event types.
func TestDuckDBLive(t *testing.T) {
	node := duckDBNode(t)
	jdk := testutil.JDK17(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "demo.jfr")
	testutil.StartJVM(t, jdk, testutil.JVMOptions{Main: "Demo", JVMArgs: []string{"-Xmx128m",
		"-XX:StartFlightRecording=settings=profile,duration=4s,filename=" + path}})
	var r *jfr.Recording
	for end := time.Now().Add(90 * time.Second); ; {
		// The JVM writes the file when the recording stops; until it has, the file is missing or
		// unfinished.
		var err error
		if r, err = jfr.Open(path); err == nil {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("recording %s: %v", path, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	defer r.Close()
	if !strings.Contains(strings.Join(typeNames(r), ","), "jdk.ExecutionSample") {
		t.Fatalf("no execution samples in %v", typeNames(r))
	}
	checkExport(t, node, r)
}

func typeNames(r *jfr.Recording) []string {
	var out []string
	for _, tc := range r.Summary().Types {
		if tc.Count > 0 {
			out = append(out, tc.Name)
		}
	}
	return out
}
