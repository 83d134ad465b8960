package parquet_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	pq "github.com/parquet-go/parquet-go"

	"github.com/jvmkit/jvmkit/internal/testutil"
	"github.com/jvmkit/jvmkit/jfr"
	"github.com/jvmkit/jvmkit/jfr/parquet"
)

// TestValuesNotNull reads the tables of a recording back (parquet-go) and counts, per scalar column, the
// values that are there against the JDK's own jfr print --json of the same file (JDK 25, in testdata):
// a false, a 0 or an empty string is a value, not a null (parquet-go writes an optional column's zero
// value as null unless it is given through a pointer). Stack frames' bytecodeIndex and lineNumber and a
// stack's truncated flag are counted too.
func TestValuesNotNull(t *testing.T) {
	r, err := jfr.Parse(testutil.ReadGzip(t, filepath.Join("..", "testdata", "demo17.jfr.gz")))
	if err != nil {
		t.Fatal(err)
	}
	var golden struct {
		Recording struct {
			Events []struct {
				Type   string         `json:"type"`
				Values map[string]any `json:"values"`
			} `json:"events"`
		} `json:"recording"`
	}
	if err := json.Unmarshal(testutil.ReadGzip(t, filepath.Join("..", "testdata", "demo17.jdk25.json.gz")), &golden); err != nil {
		t.Fatal(err)
	}
	// want[type][column]: how many events have a scalar there, as the JDK prints them.
	want := map[string]map[string]int{}
	count := func(typ, col string) {
		if want[typ] == nil {
			want[typ] = map[string]int{}
		}
		want[typ][col]++
	}
	for _, e := range golden.Recording.Events {
		for k, v := range e.Values {
			switch v := v.(type) {
			case bool, float64:
				count(e.Type, k)
			case map[string]any:
				if k != "stackTrace" {
					continue
				}
				if _, ok := v["truncated"].(bool); ok {
					count(e.Type, "stackTrace.truncated")
				}
				frames, _ := v["frames"].([]any)
				for _, f := range frames {
					fm, _ := f.(map[string]any)
					for _, c := range []string{"lineNumber", "bytecodeIndex"} {
						if _, ok := fm[c].(float64); ok {
							count(e.Type, "stackTrace.frames."+c)
						}
					}
				}
			}
		}
	}
	dir := t.TempDir()
	if _, err := parquet.Export(r, dir); err != nil {
		t.Fatal(err)
	}
	checked := 0
	for typ, cols := range want {
		f, err := os.Open(filepath.Join(dir, typ+".parquet"))
		if err != nil {
			t.Errorf("%s: %v", typ, err)
			continue
		}
		rows := readRows(t, f)
		f.Close()
		got := map[string]int{}
		for _, row := range rows {
			for col := range cols {
				got[col] += present(row, col)
			}
		}
		for col, n := range cols {
			checked++
			if got[col] != n {
				t.Errorf("%s.%s: %d values, the JDK prints %d (the rest null)", typ, col, got[col], n)
			}
		}
	}
	if checked < 10 {
		t.Fatalf("only %d columns checked", checked)
	}
	t.Logf("%d columns of %d tables: as many values as the JDK prints", checked, len(want))
}

// readRows reads every row of a file with its own schema.
func readRows(t *testing.T, f *os.File) []map[string]any {
	t.Helper()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	pf, err := pq.OpenFile(f, st.Size())
	if err != nil {
		t.Fatalf("%s: %v", f.Name(), err)
	}
	rd := pq.NewGenericReader[map[string]any](f, pf.Schema())
	defer rd.Close()
	rows := make([]map[string]any, pf.NumRows())
	for i := range rows {
		rows[i] = map[string]any{}
	}
	for n := 0; n < len(rows); {
		k, err := rd.Read(rows[n:])
		n += k
		if err != nil {
			if n == len(rows) {
				break
			}
			t.Fatalf("%s: %d of %d rows: %v", f.Name(), n, len(rows), err)
		}
	}
	return rows
}

// present counts the values at col (a.b.c: through groups and lists) that are not null.
func present(row map[string]any, col string) int {
	var walk func(v any, path []string) int
	walk = func(v any, path []string) int {
		switch v := v.(type) {
		case nil:
			return 0
		case map[string]any:
			if len(path) == 0 {
				return 1
			}
			return walk(v[path[0]], path[1:])
		case []any:
			n := 0
			for _, e := range v {
				n += walk(e, path)
			}
			return n
		}
		if len(path) == 0 {
			return 1
		}
		return 0
	}
	return walk(row, splitDots(col))
}

func splitDots(s string) []string {
	var out []string
	start := 0
	for i := range len(s) {
		if s[i] == '.' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}
