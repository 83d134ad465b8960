//go:build linux

package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jvmkit/jvmkit/internal/testutil"
	"github.com/jvmkit/jvmkit/perfmap"
)

// perfRecord records the JVM with perf (cpu-clock, call graphs) for a few seconds and returns the data
// file.
func perfRecord(t *testing.T, perf string, pid int) string {
	t.Helper()
	data := filepath.Join(t.TempDir(), "perf.data")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rec := exec.CommandContext(ctx, perf, "record", "-q", "-k", "mono", "-o", data, "-e", "cpu-clock", "-F", "499", "-g",
		"-p", strconv.Itoa(pid), "--", "sleep", "2")
	if out, err := rec.CombinedOutput(); err != nil {
		t.Fatalf("perf record: %v\n%s", err, out)
	}
	return data
}

// perfSymbols runs perf script on data and counts the samples by their leaf symbol.
func perfSymbols(t *testing.T, perf, data string) (leaves map[string]int, total int, text string) {
	t.Helper()
	out, err := exec.Command(perf, "script", "-i", data, "-F", "comm,tid,ip,sym,dso").Output()
	if err != nil {
		t.Fatalf("perf script: %v", err)
	}
	leaves = map[string]int{}
	leaf := true
	for _, line := range strings.Split(string(out), "\n") {
		switch {
		case strings.TrimSpace(line) == "":
			leaf = true
		case strings.HasPrefix(line, "\t") || strings.HasPrefix(line, " "):
			if leaf {
				f := strings.Fields(line)
				if len(f) >= 2 {
					leaves[strings.Join(f[1:len(f)-1], " ")]++
					total++
				}
			}
			leaf = false
		}
	}
	return leaves, total, string(out)
}

// TestPerfEachStrategy: with a map from each strategy, perf script names the hot Java method of a
// recording of Busy (run with -XX:+PreserveFramePointer) on every JDK.
func TestPerfEachStrategy(t *testing.T) {
	testutil.MustHaveRoot(t)
	perf := testutil.MustHaveTool(t, "perf")
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		t.Parallel() // two JDKs at a time: what this checks does not depend on the machine's load
		// DebugNonSafepoints: PcDescs everywhere, so that unfolded ranges are exact.
		j := testutil.StartJVM(t, jdk, testutil.JVMOptions{Main: "Busy", JVMArgs: []string{
			"-XX:+PreserveFramePointer", "-XX:+UnlockDiagnosticVMOptions", "-XX:+DebugNonSafepoints", testutil.PrintCompilation}})
		t.Cleanup(func() { _, _ = perfmap.Clean(context.Background(), j.PID) })
		j.WaitCompiled(t, "Busy::spin", 4, time.Minute)
		data := perfRecord(t, perf, j.PID)
		pid := strconv.Itoa(j.PID)
		strategies := []string{"vmstructs", "jcmd", "agent"}
		if jdk.Feature < 17 {
			strategies = []string{"vmstructs", "agent"}
		}
		for _, strategy := range strategies {
			for _, unfold := range []bool{false, true} {
				if unfold && strategy == "jcmd" {
					continue
				}
				args := []string{"-p", pid, "--strategy", strategy, "--annotate", "--json"}
				if unfold {
					args = append(args, "--unfold")
				}
				if code, s, stderr := run(t, args...); code != 0 {
					t.Fatalf("gjmaps %q: exit %d, %+v, %s", args, code, s, stderr)
				}
				leaves, total, _ := perfSymbols(t, perf, data)
				busy, step := 0, 0
				for sym, n := range leaves {
					if strings.Contains(sym, "Busy.spin") || strings.Contains(sym, "Busy;::spin") || strings.Contains(sym, "Busy::spin") {
						busy += n
					}
					if strings.Contains(sym, "->") && strings.Contains(sym, "step") {
						step += n
					}
				}
				t.Logf("%s unfold=%v: %d of %d samples in Busy.spin, %d in Busy.step inlined into it", strategy, unfold, busy, total, step)
				if unfold && step == 0 {
					t.Errorf("%s --unfold: no sample is named by an inlining chain with Busy.step", strategy)
				}
				// The spinning thread is one of the JVM's threads and the only busy one.
				if total == 0 || busy*2 < total {
					t.Errorf("%s unfold=%v: perf names Busy.spin in %d of %d samples", strategy, unfold, busy, total)
				}
			}
		}
	})
}

// TestPerfNamespace: host-side perf script resolves the Java frames of a JVM in its own pid and mount
// namespaces with a private /tmp, from the map gjmaps wrote on the host under the JVM's host pid.
func TestPerfNamespace(t *testing.T) {
	testutil.MustHaveRoot(t)
	perf := testutil.MustHaveTool(t, "perf")
	jdk := testutil.JDK17(t)
	j := testutil.StartJVM(t, jdk, testutil.JVMOptions{Main: "Busy", Namespace: true, JVMArgs: []string{"-XX:+PreserveFramePointer", testutil.PrintCompilation}})
	t.Cleanup(func() { _, _ = perfmap.Clean(context.Background(), j.PID) })
	if j.NSPID == j.PID {
		t.Fatalf("the JVM has the same pid in its namespace: %d", j.PID)
	}
	j.WaitCompiled(t, "Busy::spin", 4, time.Minute)
	data := perfRecord(t, perf, j.PID)
	leaves, _, _ := perfSymbols(t, perf, data)
	if n := leaves["long Busy.spin(long, int)"]; n > 0 {
		t.Fatalf("perf named Busy.spin before gjmaps ran (%d samples): a stale map?", n)
	}
	if code, s, stderr := run(t, "-p", strconv.Itoa(j.PID), "--json"); code != 0 || len(s.JVMs[0].Paths) != 2 {
		t.Fatalf("gjmaps: exit %d, %+v, %s", code, s, stderr)
	}
	leaves, total, _ := perfSymbols(t, perf, data)
	busy := leaves["long Busy.spin(long, int)"]
	t.Logf("namespaced JVM (host pid %d, pid %d inside): %d of %d samples named Busy.spin", j.PID, j.NSPID, busy, total)
	if busy*2 < total {
		t.Errorf("host perf names Busy.spin in %d of %d samples", busy, total)
	}
}
