package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/jvmkit/jvmkit/internal/cli"
	"github.com/jvmkit/jvmkit/internal/testutil"
	"github.com/jvmkit/jvmkit/perfmap"
)

func TestMain(m *testing.M) { testutil.Main(m) }

type summary struct {
	Schema string `json:"schema"`
	JVMs   []struct {
		PID      int      `json:"pid"`
		Strategy string   `json:"strategy"`
		Entries  int      `json:"entries"`
		Paths    []string `json:"paths"`
		Error    string   `json:"error"`
	} `json:"jvms"`
}

func run(t *testing.T, args ...string) (int, summary, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := cli.GjmapsMain(args, &out, &errOut)
	var s summary
	if containsJSON(args) {
		if err := json.Unmarshal(out.Bytes(), &s); err != nil {
			t.Fatalf("gjmaps %q: bad JSON: %v\n%s\n%s", args, err, out.String(), errOut.String())
		}
	}
	return code, s, errOut.String()
}

func containsJSON(args []string) bool {
	for _, a := range args {
		if a == "--json" {
			return true
		}
	}
	return false
}

func TestGjmaps(t *testing.T) {
	testutil.MustHaveRoot(t)
	jdk := testutil.JDK17(t)
	j := testutil.StartJVM(t, jdk, testutil.JVMOptions{Main: "Busy"})
	t.Cleanup(func() { _, _ = perfmap.Clean(context.Background(), j.PID) })
	pid := strconv.Itoa(j.PID)
	for _, strategy := range []string{"auto", "vmstructs", "jcmd"} {
		code, s, stderr := run(t, "-p", pid, "--strategy", strategy, "--json")
		if code != 0 || len(s.JVMs) != 1 || s.Schema != "jvmkit.gjmaps/v1" {
			t.Fatalf("%s: exit %d, %+v, %s", strategy, code, s, stderr)
		}
		r := s.JVMs[0]
		want := strategy
		if strategy == "auto" {
			want = "vmstructs"
		}
		if r.Strategy != want || r.Entries == 0 || len(r.Paths) != 1 || r.Paths[0] != "/tmp/perf-"+pid+".map" {
			t.Errorf("%s: %+v", strategy, r)
		}
	}
	// A failing pid does not stop the others; the exit status says one failed.
	code, s, _ := run(t, "-p", "999999999,"+pid, "--json")
	if code != 1 || len(s.JVMs) != 2 || s.JVMs[0].Error == "" || s.JVMs[1].Error != "" {
		t.Errorf("mixed: exit %d, %+v", code, s)
	}
	code, s, _ = run(t, "-p", pid, "--clean", "--json")
	if code != 0 || len(s.JVMs) != 1 || len(s.JVMs[0].Paths) != 1 {
		t.Errorf("clean: exit %d, %+v", code, s)
	}
	if code, _, stderr := run(t, "-p", pid, "--strategy", "agent"); code != 2 {
		t.Errorf("agent: exit %d, %s", code, stderr)
	}
}
