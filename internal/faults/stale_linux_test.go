package faults_test

import (
	"bytes"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/internal/testutil"
)

// TestStaleMapNotFresh: a JVM that does not run as root, in its own pid and mount namespaces, finds in
// its /tmp a map that root wrote earlier, which it cannot rewrite (JDK 17 says so only in its own log and
// reports success). gjmaps --strategy jcmd must not report that stale map as the JVM's: it hands the JVM a
// file it can write, and reads the map back from that file. The container's copy it then places is the
// JVM's user's, so that the JVM can rewrite it itself.
func TestStaleMapNotFresh(t *testing.T) {
	testutil.MustHaveRoot(t)
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		if jdk.Feature < 17 {
			return // no Compiler.perfmap: TestNoPerfMapCommand
		}
		j := testutil.StartJVM(t, jdk, testutil.JVMOptions{Namespace: true, UID: 1000, GID: 1000})
		pid := strconv.Itoa(j.PID)
		inside := "/proc/" + pid + "/root/tmp/perf-" + strconv.Itoa(j.NSPID) + ".map"
		host := "/tmp/perf-" + pid + ".map"
		t.Cleanup(func() { os.Remove(host) })
		if err := os.WriteFile(inside, []byte("1000 10 jvmkit-stale\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		r := tool(t, "gjmaps", "-p", pid, "--strategy", "jcmd", "--json")
		var m mapsJSON
		if err := json.Unmarshal([]byte(r.stdout), &m); err != nil || r.code != 0 || len(m.JVMs) != 1 || m.JVMs[0].Entries < 50 {
			t.Fatalf("gjmaps --strategy jcmd over a stale map: %v\n%s", err, r)
		}
		for _, p := range []string{inside, host} {
			b, err := os.ReadFile(p)
			if err != nil || bytes.Contains(b, []byte("jvmkit-stale")) || bytes.Count(b, []byte("\n")) != m.JVMs[0].Entries {
				t.Errorf("%s: %v; %d lines, stale %v; want the %d entries reported", p, err, bytes.Count(b, []byte("\n")), bytes.Contains(b, []byte("jvmkit-stale")), m.JVMs[0].Entries)
			}
		}
		var st unix.Stat_t
		if err := unix.Lstat(inside, &st); err != nil || st.Uid != 1000 {
			t.Errorf("the container's copy: %v, uid %d; want the JVM's user (1000), who can rewrite it", err, st.Uid)
		}
		// So the JVM's own Compiler.perfmap rewrites it, as the JVM's user.
		if r := tool(t, "gjcmd", pid, "Compiler.perfmap"); r.code != 0 {
			t.Errorf("%s", r)
		}
		if b, err := os.ReadFile(inside); err != nil || bytes.Count(b, []byte("\n")) < 50 {
			t.Errorf("%s after the JVM's own Compiler.perfmap: %v, %d lines", inside, err, bytes.Count(b, []byte("\n")))
		}
		if !j.Alive() {
			t.Errorf("%s died", j)
		}
	})
}

// TestNoPerfMapCommand: on a JDK without Compiler.perfmap (JDK 11), the jcmd strategy's error names the JDK,
// gjcmd adds it to the JVM's "Unknown diagnostic command", and nothing is prepared in the JVM's /tmp for a
// command it does not have.
func TestNoPerfMapCommand(t *testing.T) {
	testutil.MustHaveRoot(t)
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		if jdk.Feature >= 17 {
			return // it has the command (TestStaleMapNotFresh)
		}
		noPerfMapCommand(t, jdk)
	})
}

func noPerfMapCommand(t *testing.T, old testutil.JDK) {
	j := testutil.StartJVM(t, old, testutil.JVMOptions{})
	pid := strconv.Itoa(j.PID)
	host := "/tmp/perf-" + pid + ".map"
	t.Cleanup(func() { os.Remove(host) })
	want := "JDK " + strconv.Itoa(old.Feature) + " has no Compiler.perfmap"
	if r := tool(t, "gjmaps", "-p", pid, "--strategy", "jcmd"); r.code != 1 || !strings.Contains(r.stderr, want) {
		t.Errorf("want exit 1 saying %q: %s", want, r)
	}
	if err := os.WriteFile(host, []byte("1 1 keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := tool(t, "gjcmd", pid, "Compiler.perfmap"); r.code != 1 || !strings.Contains(r.stderr, want) {
		t.Errorf("want exit 1 saying %q: %s", want, r)
	}
	if b, _ := os.ReadFile(host); string(b) != "1 1 keep\n" {
		t.Errorf("%s changed for a command the JVM does not have: %q", host, b)
	}
	if r := tool(t, "gjmaps", "-p", pid); r.code != 0 || !strings.Contains(r.stdout, "vmstructs") {
		t.Errorf("auto: %s", r)
	}
}
