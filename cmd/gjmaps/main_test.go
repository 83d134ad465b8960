//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/cmd/internal/gjmaps"
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
	code := gjmaps.Main(args, &out, &errOut)
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
		// The map lock goes with the run that held it: no lock file per JVM ever mapped piles up in /tmp.
		if _, err := os.Lstat("/tmp/.perf-" + pid + ".map.lock"); err == nil {
			t.Errorf("%s: the map lock file is left in /tmp", strategy)
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
	if code, _, stderr := run(t, "-p", pid, "--strategy", "jcmd", "--unfold"); code != 2 {
		t.Errorf("jcmd --unfold: exit %d, %s", code, stderr)
	}
	if code, _, stderr := run(t, "-p", pid, "--strategy", "bogus"); code != 2 {
		t.Errorf("bogus strategy: exit %d, %s", code, stderr)
	}
	if code, _, stderr := run(t, "-p", pid, "--owner", "no-such-user-here"); code != 2 {
		t.Errorf("bad owner: exit %d, %s", code, stderr)
	}
}

// TestGjmapsAnnotateOwner checks --annotate for each strategy that names methods the JDK's way, and
// --owner with --clean.
func TestGjmapsAnnotateOwner(t *testing.T) {
	testutil.MustHaveRoot(t)
	jdk := testutil.JDK17(t)
	j := testutil.StartJVM(t, jdk, testutil.JVMOptions{Main: "Busy", JVMArgs: []string{testutil.PrintCompilation}})
	t.Cleanup(func() { _, _ = perfmap.CleanOwned(context.Background(), j.PID, 65534) })
	j.WaitCompiled(t, "Busy::spin", 4, time.Minute)
	pid := strconv.Itoa(j.PID)
	path := "/tmp/perf-" + pid + ".map"
	for _, strategy := range []string{"vmstructs", "jcmd"} {
		code, s, stderr := run(t, "-p", pid, "--strategy", strategy, "--annotate", "--owner", "65534:65534", "--json")
		if code != 0 || len(s.JVMs) != 1 {
			t.Fatalf("%s: exit %d, %+v, %s", strategy, code, s, stderr)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "long Busy.spin(long, int)_[j]\n") {
			t.Errorf("%s --annotate: no annotated Busy.spin in the map", strategy)
		}
		if strings.Contains(string(b), "Interpreter_[j]") || strings.Contains(string(b), "StubRoutines (1)_[j]") {
			t.Errorf("%s --annotate: a stub is annotated as Java", strategy)
		}
		var st unix.Stat_t
		if err := unix.Lstat(path, &st); err != nil || st.Uid != 65534 || st.Gid != 65534 {
			t.Errorf("%s --owner: %v, uid %d gid %d", strategy, err, st.Uid, st.Gid)
		}
	}
	// Clean leaves a map of another owner alone unless told the owner.
	if code, s, _ := run(t, "-p", pid, "--clean", "--json"); code != 1 || len(s.JVMs[0].Paths) != 0 {
		t.Errorf("clean without --owner: exit %d, %+v", code, s)
	}
	if code, s, _ := run(t, "-p", pid, "--clean", "--owner", "65534", "--json"); code != 0 || len(s.JVMs[0].Paths) != 1 {
		t.Errorf("clean --owner: exit %d, %+v", code, s)
	}
}

// TestGjmapsAttachDisabled: a JVM that refuses attach gets its map from vmstructs under auto; the
// strategies that need attach fail with a message that says why.
func TestGjmapsAttachDisabled(t *testing.T) {
	testutil.MustHaveRoot(t)
	jdk := testutil.JDK17(t)
	j := testutil.StartJVM(t, jdk, testutil.JVMOptions{Main: "Busy", JVMArgs: []string{"-XX:+DisableAttachMechanism"}})
	t.Cleanup(func() { _, _ = perfmap.Clean(context.Background(), j.PID) })
	pid := strconv.Itoa(j.PID)
	code, s, stderr := run(t, "-p", pid, "--json")
	if code != 0 || s.JVMs[0].Strategy != "vmstructs" || s.JVMs[0].Entries == 0 {
		t.Errorf("auto: exit %d, %+v, %s", code, s, stderr)
	}
	for _, strategy := range []string{"jcmd", "agent"} {
		code, s, _ := run(t, "-p", pid, "--strategy", strategy, "--json")
		if code != 1 || !strings.Contains(s.JVMs[0].Error, "DisableAttachMechanism") {
			t.Errorf("%s: exit %d, %+v", strategy, code, s)
		}
	}
	if !j.Alive() {
		t.Error("the JVM died")
	}
}

// TestGjmapsReadOnlyTmp: a container whose /tmp cannot be written still gets its map on the host, and
// the error names the place that failed.
func TestGjmapsReadOnlyTmp(t *testing.T) {
	testutil.MustHaveRoot(t)
	nsenter := testutil.MustHaveTool(t, "nsenter")
	jdk := testutil.JDK17(t)
	// Without hsperfdata the JVM has no file open for writing in /tmp, which would keep the kernel from
	// making the mount read-only (EBUSY).
	j := testutil.StartJVM(t, jdk, testutil.JVMOptions{Main: "Busy", Namespace: true, JVMArgs: []string{"-XX:-UsePerfData"}})
	t.Cleanup(func() { _, _ = perfmap.Clean(context.Background(), j.PID) })
	pid := strconv.Itoa(j.PID)
	if out, err := exec.Command(nsenter, "-t", pid, "-m", "mount", "-o", "remount,bind,ro", "/tmp").CombinedOutput(); err != nil {
		t.Fatalf("remount the JVM's /tmp read-only: %v\n%s", err, out)
	}
	code, s, stderr := run(t, "-p", pid, "--json")
	host := "/tmp/perf-" + pid + ".map"
	if code != 1 || len(s.JVMs) != 1 || len(s.JVMs[0].Paths) != 1 || s.JVMs[0].Paths[0] != host ||
		!strings.Contains(s.JVMs[0].Error, "read-only file system") {
		t.Errorf("read-only /tmp: exit %d, %+v, %s", code, s, stderr)
	}
	if _, err := os.Stat(host); err != nil {
		t.Errorf("host map: %v", err)
	}
}
