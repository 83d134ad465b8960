package jvmkit_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/cmd/internal/cliutil"
	"github.com/jvmkit/jvmkit/cmd/internal/gjmaps"
	jvmkitcli "github.com/jvmkit/jvmkit/cmd/internal/jvmkit"
	"github.com/jvmkit/jvmkit/internal/testutil"
	"github.com/jvmkit/jvmkit/perfmap/jitlog"
	"github.com/jvmkit/jvmkit/perfmap/jitlog/recorder"
)

// readRecorded reads a log that a recorder wrote for pid and checks that it is whole and has a snapshot
// and loads of pid.
func readRecorded(t *testing.T, path string, pid int) []jitlog.Record {
	t.Helper()
	recs, damage, err := jitlog.ReadFile(path)
	if err != nil || len(damage) > 0 {
		t.Fatalf("%s: %v, damage %v", path, err, damage)
	}
	kinds := map[jitlog.Kind]int{}
	for _, r := range recs {
		if r.PID != pid {
			t.Fatalf("%s: a record of process %d: %+v", path, r.PID, r)
		}
		kinds[r.Kind]++
	}
	if kinds[jitlog.Snapshot] == 0 || kinds[jitlog.Load] == 0 {
		t.Errorf("%s: %d records, %v: want a snapshot and loads", path, len(recs), kinds)
	}
	return recs
}

// TestCommandRecord runs jvmkit jitlog record and gjmaps --log on JitChurn, whose JIT code changes all
// the time: the JSON summary, the end by SIGINT (exit 0, a whole log), refused pids, and gjmaps writing
// the map and then a log for --duration.
func TestCommandRecord(t *testing.T) {
	testutil.MustHaveRoot(t)
	jdk := testutil.JDK17(t)
	j := testutil.StartJVM(t, jdk, testutil.JVMOptions{Main: "JitChurn", JVMArgs: []string{"-XX:ReservedCodeCacheSize=16m", "-Xmx256m"}})
	pid := strconv.Itoa(j.PID)
	dir := t.TempDir()

	t.Run("json", func(t *testing.T) {
		log := filepath.Join(dir, "json.log")
		start := time.Now()
		code, out, stderr := jvmkit("--json", "jitlog", "record", "-o", log, "--duration", "2s", pid)
		elapsed := time.Since(start)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		var doc struct {
			Schema string
			Data   recorder.Stats
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("%v:\n%s", err, out)
		}
		if doc.Schema != "jvmkit.jitlog-record/v1" || len(doc.Data.JVMs) != 1 {
			t.Fatalf("JSON %+v", doc)
		}
		st := doc.Data.JVMs[0]
		if st.PID != j.PID || st.Snapshot == 0 || st.Source != jitlog.SourceVMStructs || st.Loads == 0 || st.Err != "" {
			t.Errorf("JSON stats %+v: want a vmstructs snapshot, loads and no error", st)
		}
		if !strings.Contains(stderr, "recording the JIT code of "+pid) || !strings.Contains(stderr, "loads") {
			t.Errorf("stderr %q: want the recording line and the summary", stderr)
		}
		if elapsed < 2*time.Second || elapsed > 20*time.Second {
			t.Errorf("--duration 2s took %v", elapsed)
		}
		recs := readRecorded(t, log, j.PID)
		t.Logf("%d records in %v: %+v", len(recs), elapsed.Round(time.Millisecond), st)
	})

	t.Run("sigint", func(t *testing.T) {
		log := filepath.Join(dir, "sigint.log")
		cmd := exec.Command(os.Args[0], "jitlog", "record", "-o", log, pid)
		cmd.Env = append(os.Environ(), jvmkitcli.ToolEnv+"=jvmkit")
		cmd.SysProcAttr = &unix.SysProcAttr{Pdeathsig: unix.SIGKILL}
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		lines := make(chan string, 100)
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				lines <- sc.Text()
			}
		}()
		var text strings.Builder
		ready := false
		for timeout := time.After(30 * time.Second); !ready; {
			select {
			case line, ok := <-lines:
				if !ok {
					t.Fatalf("the recorder ended before recording: %v\n%s", cmd.Wait(), text.String())
				}
				fmt.Fprintln(&text, line)
				ready = strings.Contains(line, "recording the JIT code of")
			case <-timeout:
				t.Fatalf("no recording line after 30 s:\n%s", text.String())
			}
		}
		time.Sleep(time.Second)
		if err := cmd.Process.Signal(unix.SIGINT); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			for line := range lines {
				fmt.Fprintln(&text, line)
			}
			done <- cmd.Wait()
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("after SIGINT: %v (want exit 0)\n%s", err, text.String())
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("still recording 10 s after SIGINT:\n%s", text.String())
		}
		if !strings.Contains(text.String(), "loads") {
			t.Errorf("no summary after SIGINT:\n%s", text.String())
		}
		recs := readRecorded(t, log, j.PID)
		t.Logf("%d records; stderr:\n%s", len(recs), text.String())
	})

	t.Run("refused", func(t *testing.T) {
		gone := exec.Command("true")
		if err := gone.Run(); err != nil {
			t.Fatal(err)
		}
		dead := strconv.Itoa(gone.Process.Pid)
		log := filepath.Join(dir, "dead.log")
		code, _, stderr := jvmkit("jitlog", "record", "-o", log, "--duration", "1s", dead)
		t.Logf("a dead pid: exit %d: %s", code, stderr)
		if code != cliutil.ExitNoJVM || !strings.Contains(stderr, "process "+dead+": no such process") {
			t.Errorf("a dead pid: exit %d, stderr %q: want exit %d and the process named", code, stderr, cliutil.ExitNoJVM)
		}
		if n := strings.Count(stderr, "no such process"); n != 1 {
			t.Errorf("a dead pid: the error said %d times:\n%s", n, stderr)
		}
		if _, err := os.Lstat(log); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("a dead pid: a log of nothing left at %s (%v): the next try with -o would fail", log, err)
		}

		// A process that is not a JVM (this test) is said to be one, not taken for a JDK without probes.
		self := strconv.Itoa(os.Getpid())
		code, _, stderr = jvmkit("jitlog", "record", "-o", filepath.Join(dir, "self.log"), "--duration", "1s", self)
		if code != cliutil.ExitNoJVM || !strings.Contains(stderr, "not a Java process") {
			t.Errorf("a process that is not a JVM: exit %d, stderr %q: want exit %d, not a Java process", code, stderr, cliutil.ExitNoJVM)
		}

		// The JVM is recorded and the dead pid reported (exit 0: the log is good).
		log = filepath.Join(dir, "mixed.log")
		code, _, stderr = jvmkit("jitlog", "record", "-o", log, "--duration", "1s", dead, pid)
		t.Logf("a dead pid and the JVM: exit %d: %s", code, stderr)
		if !strings.Contains(stderr, dead+": not recorded") {
			t.Errorf("a dead pid and the JVM: stderr %q: want the dead one named", stderr)
		}
		readRecorded(t, log, j.PID)

		for _, args := range [][]string{
			{"jitlog", "record", pid},
			{"jitlog", "record", "-o", filepath.Join(dir, "x.log"), "abc"},
			{"jitlog", "record", "-o", filepath.Join(dir, "x.log"), "--duration", "-1s", pid},
		} {
			if code, _, stderr := jvmkit(args...); code != cliutil.ExitUsage {
				t.Errorf("%v: exit %d (%s), want %d", args, code, stderr, cliutil.ExitUsage)
			}
		}
		code, _, stderr = jvmkit("jitlog", "record", "-o", filepath.Join(dir, "snapshot.log"), "--snapshot", "maybe", pid)
		if code == 0 || !strings.Contains(stderr, `snapshot "maybe"`) {
			t.Errorf("--snapshot maybe: exit %d, stderr %q: want a refusal", code, stderr)
		}
		if code, _, stderr := jvmkit("jitlog", "record", "-o", log, pid); code == 0 || !strings.Contains(stderr, "exist") {
			t.Errorf("an existing log: exit %d, stderr %q: want a refusal", code, stderr)
		}
	})

	t.Run("gjmaps", func(t *testing.T) {
		mapPath := fmt.Sprintf("/tmp/perf-%d.map", j.PID)
		t.Cleanup(func() {
			var out, errOut bytes.Buffer
			if code := gjmaps.Main([]string{"--clean", "-p", pid}, &out, &errOut); code != 0 {
				t.Errorf("gjmaps --clean: exit %d: %s", code, errOut.String())
			}
		})
		log := filepath.Join(dir, "gjmaps.log")
		var out, errOut bytes.Buffer
		start := time.Now()
		code := gjmaps.Main([]string{"-p", pid, "--strategy", "vmstructs", "--log", log, "--duration", "2s"}, &out, &errOut)
		elapsed := time.Since(start)
		if code != 0 {
			t.Fatalf("gjmaps --log: exit %d: %s%s", code, out.String(), errOut.String())
		}
		m, err := os.ReadFile(mapPath)
		if err != nil || bytes.Count(m, []byte("\n")) < 10 {
			t.Errorf("gjmaps --log wrote %d bytes to %s: %v", len(m), mapPath, err)
		}
		if elapsed < 2*time.Second || elapsed > 20*time.Second {
			t.Errorf("--duration 2s took %v", elapsed)
		}
		if !strings.Contains(errOut.String(), "gjmaps: recording the JIT code of "+pid) {
			t.Errorf("gjmaps --log: stderr %q: want the recording line", errOut.String())
		}
		recs := readRecorded(t, log, j.PID)
		t.Logf("gjmaps --log: %d map lines, %d records in %v\n%s%s", bytes.Count(m, []byte("\n")), len(recs),
			elapsed.Round(time.Millisecond), out.String(), errOut.String())
		for _, args := range [][]string{{"-p", pid, "--duration", "1s"}, {"-p", pid, "--log", log, "--clean"}} {
			if code := gjmaps.Main(args, &out, &errOut); code != cliutil.ExitUsage {
				t.Errorf("gjmaps %v: exit %d, want %d", args, code, cliutil.ExitUsage)
			}
		}
	})
}
