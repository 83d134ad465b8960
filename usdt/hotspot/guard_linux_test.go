package hotspot_test

import (
	"bytes"
	"context"
	"errors"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/internal/testutil"
	"github.com/jvmkit/jvmkit/usdt/hotspot"
	"github.com/jvmkit/jvmkit/vmstructs"
)

// allocRun is a jvmkit alloc process started by a test.
type allocRun struct {
	cmd            *exec.Cmd
	stdout, stderr testutil.SyncBuffer
	exited         chan error
}

func startAllocRun(t *testing.T, bin string, args ...string) *allocRun {
	t.Helper()
	r := &allocRun{exited: make(chan error, 1)}
	r.cmd = exec.Command(bin, append([]string{"alloc"}, args...)...)
	r.cmd.Stdout, r.cmd.Stderr = &r.stdout, &r.stderr
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.exited <- r.cmd.Wait() }()
	t.Cleanup(func() {
		_ = r.cmd.Process.Kill()
		err := <-r.exited
		r.exited <- err
	})
	return r
}

// waitFor waits until the run's stderr contains s.
func (r *allocRun) waitFor(t *testing.T, s string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(r.stderr.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("jvmkit alloc did not print %q: %s", s, r.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// wait waits for the run's end and returns its exit status.
func (r *allocRun) wait(t *testing.T) int {
	t.Helper()
	select {
	case err := <-r.exited:
		r.exited <- err
		var ee *exec.ExitError
		switch {
		case err == nil:
			return 0
		case errors.As(err, &ee):
			return ee.ExitCode()
		}
		t.Fatal(err)
	case <-time.After(60 * time.Second):
		t.Fatalf("jvmkit alloc did not end: %s", r.stderr.String())
	}
	return -1
}

var guardianPID = regexp.MustCompile(`guardian pid (\d+)`)

// guardians lists the guardian processes watching JVM pid (their command line is "jvmkit-guardian <pid>").
func guardians(pid int) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	want := []byte("jvmkit-guardian\x00" + strconv.Itoa(pid) + "\x00")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && bytes.Equal(b, want) {
			out = append(out, p)
		}
	}
	return out
}

// waitNoGuardian waits until no guardian watches JVM pid.
func waitNoGuardian(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(guardians(pid)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("guardians %v of JVM %d still run", guardians(pid), pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// flagOffWithin polls DTraceAllocProbes until it reads false and returns how long that took after since,
// or fails once it is still true at the deadline. The JVM's VMStructs are read once, before: each poll
// is one read of the flag's byte.
func flagOffWithin(t *testing.T, vm *vmstructs.JVM, since time.Time, d time.Duration) time.Duration {
	t.Helper()
	for {
		f, err := vm.Flag(hotspot.AllocProbes)
		if err != nil || f.Bool == nil {
			t.Fatalf("read %s: %+v, %v", hotspot.AllocProbes, f, err)
		}
		if !*f.Bool {
			return time.Since(since)
		}
		if time.Since(since) > d {
			t.Fatalf("DTraceAllocProbes still true %v after the kill", time.Since(since))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestSwitchFlagsKilled kills jvmkit alloc --switch-flags with SIGKILL at random points (start-up, the
// guardian's start, the switch, the trace) and expects the flag to read false within 1 s of each kill:
// the guardian restores it. Then it kills the command and its guardian together (the case the guardian
// cannot cover) and expects jvmkit flags to say the change was left behind and jvmkit alloc --restore
// to restore it. JVMKIT_SEED repeats a run's kill points.
func TestSwitchFlagsKilled(t *testing.T) {
	testutil.MustHaveBPF(t)
	bin := testutil.BuildTool(t, "cmd/jvmkit")
	seed := testutil.Seed(t)
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		testutil.SkipWithoutProbes(t, jdk)
		t.Parallel() // two JDKs at a time: the kills mostly wait for their random moments
		h := fnv.New64a()
		h.Write([]byte(jdk.Name()))
		rng := rand.New(rand.NewPCG(seed, h.Sum64())) // each JDK's own points, repeated by the seed
		j := testutil.StartJVM(t, jdk, testutil.JVMOptions{Main: "Alloc", JVMArgs: []string{"-Xmx128m"}})
		pid := strconv.Itoa(j.PID)
		vm, err := vmstructs.Open(context.Background(), j.PID)
		if err != nil {
			t.Fatal(err)
		}
		defer vm.Close()
		t.Run("random", func(t *testing.T) {
			var slowest time.Duration
			// Half the kills at any time from the start (start-up, the guardian's start, the switch),
			// half once the flag is on (the trace).
			for i := range 6 {
				delay := time.Duration(rng.Int64N(int64(2 * time.Second)))
				r := startAllocRun(t, bin, pid, "--switch-flags", "--duration", "60s")
				if i >= 3 {
					delay /= 4
					r.waitFor(t, "switched DTraceAllocProbes on")
					if !readFlag(t, j.PID, hotspot.AllocProbes) {
						t.Fatal("DTraceAllocProbes is off after alloc said it switched it on")
					}
				}
				time.Sleep(delay)
				_ = r.cmd.Process.Signal(unix.SIGKILL)
				killed := time.Now()
				took := flagOffWithin(t, vm, killed, time.Second)
				r.wait(t)
				on := strings.Contains(r.stderr.String(), "switched DTraceAllocProbes on")
				t.Logf("kill %d at %v (flag switched on: %t): false %v after the kill", i, delay.Round(time.Millisecond), on, took.Round(time.Millisecond))
				waitNoGuardian(t, j.PID)
			}
			t.Logf("%s: slowest restore after SIGKILL: %v", jdk.Name(), slowest)
		})
		t.Run("both", func(t *testing.T) {
			r := startAllocRun(t, bin, pid, "--switch-flags", "--duration", "60s")
			r.waitFor(t, "counting allocations")
			m := guardianPID.FindStringSubmatch(r.stderr.String())
			if m == nil {
				t.Fatalf("no guardian pid in %s", r.stderr.String())
			}
			g, _ := strconv.Atoi(m[1])
			if gs := guardians(j.PID); len(gs) != 1 || gs[0] != g {
				t.Fatalf("guardians of %d: %v, stderr says %d", j.PID, gs, g)
			}
			_ = unix.Kill(g, unix.SIGKILL)
			waitNoGuardian(t, j.PID)
			_ = r.cmd.Process.Signal(unix.SIGKILL)
			r.wait(t)
			if !readFlag(t, j.PID, hotspot.AllocProbes) {
				t.Fatal("DTraceAllocProbes is false after the command and its guardian were killed: who restored it?")
			}
			_, errOut, code := jvmkit(t, "flags", pid, hotspot.AllocProbes)
			if code != 0 || !strings.Contains(errOut, "left behind") || !strings.Contains(errOut, "jvmkit alloc --restore "+pid) {
				t.Errorf("jvmkit flags does not say the flag was left behind: exit status %d\n%s", code, errOut)
			}
			out, errOut, code := jvmkit(t, "alloc", "--restore", pid)
			t.Logf("jvmkit alloc --restore: %s%s", out, errOut)
			if code != 0 || !strings.Contains(out, "restored DTraceAllocProbes to false") {
				t.Errorf("jvmkit alloc --restore: exit status %d\n%s%s", code, out, errOut)
			}
			if readFlag(t, j.PID, hotspot.AllocProbes) {
				t.Error("DTraceAllocProbes is still true after jvmkit alloc --restore")
			}
			if out, _, code := jvmkit(t, "alloc", "--restore", pid); code != 0 || !strings.Contains(out, "nothing to restore") {
				t.Errorf("second jvmkit alloc --restore: exit status %d\n%s", code, out)
			}
			if _, errOut, _ := jvmkit(t, "flags", pid, hotspot.AllocProbes); !strings.Contains(errOut, "restored to false by jvmkit alloc --restore") {
				t.Errorf("jvmkit flags does not say who restored the flag:\n%s", errOut)
			}
		})
		t.Run("concurrent", func(t *testing.T) {
			// Two runs share the change: the flag stays on until the last one ends.
			a := startAllocRun(t, bin, pid, "--switch-flags", "--duration", "60s")
			a.waitFor(t, "counting allocations")
			b := startAllocRun(t, bin, pid, "--switch-flags", "--duration", "60s")
			b.waitFor(t, "counting allocations")
			_ = a.cmd.Process.Signal(unix.SIGINT)
			if code := a.wait(t); code != 0 {
				t.Errorf("first run: exit status %d\n%s", code, a.stderr.String())
			}
			if e := a.stderr.String(); strings.Contains(e, "off again") || !strings.Contains(e, "left DTraceAllocProbes as it is") {
				t.Errorf("the first of two runs does not say it left the flag on:\n%s", e)
			}
			if !readFlag(t, j.PID, hotspot.AllocProbes) {
				t.Error("DTraceAllocProbes went false when the first of two runs ended")
			}
			_ = b.cmd.Process.Signal(unix.SIGKILL)
			killed := time.Now()
			t.Logf("second run killed: flag false %v later", flagOffWithin(t, vm, killed, time.Second))
			b.wait(t)
			waitNoGuardian(t, j.PID)
		})
		t.Run("replaced", func(t *testing.T) {
			// A 'flags --set' during the run replaces alloc's change: alloc leaves the flag as that set it,
			// and says so instead of claiming to have switched it off.
			r := startAllocRun(t, bin, pid, "--switch-flags", "--duration", "60s")
			r.waitFor(t, "counting allocations")
			if _, errOut, code := jvmkit(t, "flags", pid, "--set", hotspot.AllocProbes+"=true", "--write-memory"); code != 0 {
				t.Fatalf("jvmkit flags --set: exit status %d\n%s", code, errOut)
			}
			_ = r.cmd.Process.Signal(unix.SIGINT)
			if code := r.wait(t); code != 0 {
				t.Errorf("alloc: exit status %d\n%s", code, r.stderr.String())
			}
			if e := r.stderr.String(); strings.Contains(e, "off again") || !strings.Contains(e, "left DTraceAllocProbes as it is") {
				t.Errorf("alloc does not say it left the flag as 'flags --set' set it:\n%s", e)
			}
			if !readFlag(t, j.PID, hotspot.AllocProbes) {
				t.Error("DTraceAllocProbes is false: alloc undid a later 'flags --set'")
			}
			if _, errOut, code := jvmkit(t, "flags", pid, "--set", hotspot.AllocProbes+"=false", "--write-memory"); code != 0 {
				t.Fatalf("jvmkit flags --set false: exit status %d\n%s", code, errOut)
			}
			waitNoGuardian(t, j.PID)
		})
	})
}

// TestAllocTargetKilled kills the JVM under jvmkit alloc --switch-flags: alloc prints what it counted,
// says the JVM was killed and exits 3, without claiming to have switched the flag off in it.
func TestAllocTargetKilled(t *testing.T) {
	testutil.MustHaveBPF(t)
	bin := testutil.BuildTool(t, "cmd/jvmkit")
	jdk := testutil.JDK17(t)
	j := testutil.StartJVM(t, jdk, testutil.JVMOptions{Main: "Alloc", JVMArgs: []string{"-Xmx64m"}})
	r := startAllocRun(t, bin, strconv.Itoa(j.PID), "--switch-flags", "--duration", "60s")
	r.waitFor(t, "counting allocations")
	// Killed once the workload has reported a second of rounds with the flag on: there is something to print.
	deadline := time.Now().Add(time.Minute)
	for seen := strings.Count(j.Stdout(), "rounds "); strings.Count(j.Stdout(), "rounds ") < seen+1; {
		if time.Now().After(deadline) {
			t.Fatalf("the workload printed no rounds in a minute:\n%s", j.Stdout())
		}
		select {
		case <-time.After(10 * time.Millisecond):
		case <-t.Context().Done():
			t.Fatal("the workload printed no rounds")
		}
	}
	if err := unix.Kill(j.PID, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	code := r.wait(t)
	errOut := r.stderr.String()
	t.Logf("exit status %d\n%s", code, errOut)
	if code != 3 || !strings.Contains(errOut, "was killed by SIGKILL") || strings.Contains(errOut, "off again") {
		t.Errorf("want exit status 3 and the JVM's death reported: exit status %d\n%s", code, errOut)
	}
	if !strings.Contains(r.stdout.String(), "Alloc$AllocA") {
		t.Errorf("what was counted before the JVM died is not printed: %s", r.stdout.String())
	}
	waitNoGuardian(t, j.PID)
}
