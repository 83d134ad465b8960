package faults_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/internal/testutil"
)

// start runs a tool without waiting; wait collects it.
type started struct {
	cmd    *exec.Cmd
	out    bytes.Buffer
	errOut bytes.Buffer
	args   []string
}

func startTool(t *testing.T, name string, args ...string) *started {
	t.Helper()
	s := &started{args: append([]string{name}, args...)}
	s.cmd = exec.Command(testutil.BuildTool(t, "cmd/"+name), args...)
	s.cmd.Stdout, s.cmd.Stderr = &s.out, &s.errOut
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if s.cmd.ProcessState == nil {
			_ = s.cmd.Process.Kill()
			_ = s.cmd.Wait()
		}
	})
	return s
}

// wait waits up to a minute; the exit status of a process killed by a signal is -1.
func (s *started) wait(t *testing.T) result {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		_ = s.cmd.Process.Kill()
		<-done
		t.Fatalf("%q did not end within a minute", s.args)
	}
	r := result{args: s.args, stdout: s.out.String(), stderr: s.errOut.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return r
}

// signalAfter sends sig to the tool d after it started.
func (s *started) signalAfter(d time.Duration, sig unix.Signal) {
	time.Sleep(d)
	_ = s.cmd.Process.Signal(sig)
}

// triggersLeft lists the attach trigger files of JVM j that exist now.
func triggersLeft(j *testutil.JVM) []string {
	var left []string
	name := ".attach_pid" + strconv.Itoa(j.NSPID)
	for _, dir := range []string{j.Dir, "/proc/" + strconv.Itoa(j.PID) + "/root/tmp"} {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			left = append(left, filepath.Join(dir, name))
		}
	}
	return left
}

// TestToolInterrupted interrupts (SIGINT, SIGTERM) or kills (SIGKILL) gjcmd at a random point of a heap
// dump: an interrupt before the JVM had the command says nothing was done, and nothing is; after, it says
// that the dump goes on and where it will be written, and it is. Nothing is left behind (trigger files),
// and the JVM lives on.
func TestToolInterrupted(t *testing.T) {
	testutil.MustHaveRoot(t)
	rng := rand.New(rand.NewPCG(testutil.Seed(t), 2))
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		j := testutil.StartJVM(t, jdk, testutil.JVMOptions{JVMArgs: []string{"-Xmx64m"}})
		pid := strconv.Itoa(j.PID)
		for i, sig := range []unix.Signal{unix.SIGINT, unix.SIGTERM, unix.SIGKILL, unix.SIGINT, unix.SIGTERM, unix.SIGKILL} {
			name := "dump-" + strconv.Itoa(i) + ".hprof"
			host := filepath.Join(j.Dir, name)
			d := time.Duration(rng.IntN(120)) * time.Millisecond
			s := startTool(t, "gjcmd", pid, "GC.heap_dump", name)
			s.signalAfter(d, sig)
			r := s.wait(t)
			// The attach listener serves one request at a time: once this returns, a dump that the JVM
			// had is complete.
			if v := tool(t, "gjcmd", pid, "VM.version"); v.code != 0 {
				t.Fatalf("after %v: %s", sig, v)
			}
			b, err := os.ReadFile(host)
			exists := err == nil && bytes.HasPrefix(b, []byte("JAVA PROFILE"))
			say := r.stderr
			switch {
			case r.code == 0:
				if !exists {
					t.Errorf("%v after %v: exit 0 but no heap dump at %s", sig, d, host)
				}
			case sig == unix.SIGKILL:
				// No word from a killed tool; the dump is there or not, whole either way.
				if err == nil && !exists {
					t.Errorf("%v after %v: a heap dump that is not one: %d bytes", sig, d, len(b))
				}
			case r.code == -1:
				// Ended by the signal itself, before the program set up its handler: before it attached.
				if err == nil {
					t.Errorf("%v after %v: the signal ended gjcmd before its handler was installed, yet %s exists", sig, d, host)
				}
			case r.code != 130:
				t.Errorf("%v after %v: exit %d, want 130: %s", sig, d, r.code, r)
			case strings.Contains(say, "goes on in JVM") && strings.Contains(say, "will write "):
				if !exists || !strings.Contains(say, name) {
					t.Errorf("%v after %v: said the dump goes on, but %s: %v; %s", sig, d, host, err, say)
				}
			case strings.Contains(say, "was not run") || strings.Contains(say, "nothing was sent"):
				if err == nil {
					t.Errorf("%v after %v: said nothing was done, but %s exists", sig, d, host)
				}
			default:
				t.Errorf("%v after %v: the message does not say what was left: %s", sig, d, say)
			}
			t.Logf("%v after %v: exit %d, dump written %v: %s", sig, d, r.code, exists, strings.TrimSpace(say))
			if l := triggersLeft(j); len(l) > 0 {
				t.Errorf("left %q", l)
			}
			os.Remove(host)
		}
		if !j.Alive() {
			t.Errorf("%s died", j)
		}
	})
}

// TestKilled kills, on fresh JVMs, first the tool and then the JVM:
//
//   - gjcmd (SIGKILL) at a random point of its first attach, when it may have created the trigger file and
//     not yet removed it: the next gjcmd must work and leave no trigger file behind, whoever made it;
//   - the JVM (SIGKILL) at a random point of a gjcmd heap dump: gjcmd says the JVM is gone and how (killed
//     by SIGKILL), with exit status 3, never that it "closed the connection without a reply".
func TestKilled(t *testing.T) {
	testutil.MustHaveRoot(t)
	rng := rand.New(rand.NewPCG(testutil.Seed(t), 1))
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		jvms := make([]*testutil.JVM, 3)
		var wg sync.WaitGroup
		for i := range jvms {
			wg.Go(func() { jvms[i] = testutil.StartJVM(t, jdk, testutil.JVMOptions{JVMArgs: []string{"-Xmx64m"}}) })
		}
		wg.Wait()
		left := 0
		for _, j := range jvms {
			pid := strconv.Itoa(j.PID)
			d := time.Duration(rng.IntN(15000)) * time.Microsecond
			s := startTool(t, "gjcmd", pid, "VM.version")
			s.signalAfter(d, unix.SIGKILL)
			r := s.wait(t)
			after := triggersLeft(j)
			if len(after) > 0 {
				left++
			}
			t.Logf("gjcmd killed %v into its first attach (exit %d): trigger files left: %q", d, r.code, after)
			r = tool(t, "gjcmd", pid, "VM.version")
			if r.code != 0 || !strings.Contains(r.stdout, "JDK") {
				t.Errorf("the next gjcmd: %s", r)
			}
			if l := triggersLeft(j); len(l) > 0 {
				t.Errorf("the next gjcmd left %q", l)
			}
			if !j.Alive() {
				t.Errorf("%s died", j)
			}
		}
		t.Logf("%d of %d kills left a trigger file, all removed by the next attach", left, len(jvms))

		for i, j := range jvms {
			pid := strconv.Itoa(j.PID)
			d := time.Duration(rng.IntN(150)) * time.Millisecond
			// The last JVM dies under gjmaps (exit 1 for a failed JVM), the others under a gjcmd heap dump
			// (exit 3).
			s, want := startTool(t, "gjcmd", pid, "GC.heap_dump", "-all", "dump.hprof"), 3
			if i == len(jvms)-1 {
				strategy := "jcmd"
				if jdk.Feature < 17 {
					strategy = "vmstructs" // no Compiler.perfmap (TestNoPerfMapCommand)
				}
				s, want = startTool(t, "gjmaps", "-p", pid, "--strategy", strategy), 1
				t.Cleanup(func() { os.Remove("/tmp/perf-" + pid + ".map") })
			}
			time.Sleep(d)
			_ = unix.Kill(j.PID, unix.SIGKILL)
			r := s.wait(t)
			t.Logf("JVM killed %v into %s: %s", d, r.args[1:], strings.TrimSpace(r.stderr))
			noCrash(t, r.args[0], r)
			switch {
			case r.code == 0:
				// Done before the kill.
			case strings.Contains(r.stderr, "closed the connection without a reply"):
				t.Errorf("the death of the JVM is reported as a closed connection: %s", r)
			case r.code != want || !strings.Contains(r.stderr, "killed by SIGKILL") && !strings.Contains(r.stderr, "no such process"):
				t.Errorf("want exit %d saying the JVM was killed by SIGKILL: %s", want, r)
			}
		}
	})
}

// TestTargetStopped stops the JVM (SIGSTOP) at a random point of gjcmd commands: gjcmd says it is stopped
// and how to resume it (exit 5) within a few seconds instead of hanging; resumed, the JVM answers again.
func TestTargetStopped(t *testing.T) {
	testutil.MustHaveRoot(t)
	rng := rand.New(rand.NewPCG(testutil.Seed(t), 4))
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		j := testutil.StartJVM(t, jdk, testutil.JVMOptions{})
		pid := strconv.Itoa(j.PID)
		for range 4 {
			d := time.Duration(rng.IntN(20000)) * time.Microsecond
			s := startTool(t, "gjcmd", pid, "Thread.print")
			time.Sleep(d)
			_ = unix.Kill(j.PID, unix.SIGSTOP)
			r := s.wait(t)
			_ = unix.Kill(j.PID, unix.SIGCONT)
			t.Logf("JVM stopped %v into Thread.print: exit %d %s", d, r.code, strings.TrimSpace(r.stderr))
			if r.code != 0 && (r.code != 5 || !strings.Contains(r.stderr, "kill -CONT")) {
				t.Errorf("want exit 0, or 5 saying how to resume the JVM: %s", r)
			}
			deadline := time.Now().Add(30 * time.Second)
			answered := false
			for !answered && time.Now().Before(deadline) {
				answered = tool(t, "gjcmd", pid, "VM.version").code == 0
			}
			if !answered {
				t.Fatalf("the resumed JVM does not answer within 30 s")
			}
		}
		if l := triggersLeft(j); len(l) > 0 {
			t.Errorf("left %q", l)
		}
	})
}

// TestGjmapsKilled kills gjmaps (SIGKILL) or interrupts it (SIGINT) at a random point while it maps a JVM
// with each strategy: the next run succeeds, every map is whole, the temporary files and directories of
// the killed run are gone after it, and the JVM lives on.
func TestGjmapsKilled(t *testing.T) {
	testutil.MustHaveRoot(t)
	rng := rand.New(rand.NewPCG(testutil.Seed(t), 5))
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		j := testutil.StartJVM(t, jdk, testutil.JVMOptions{})
		pid := strconv.Itoa(j.PID)
		host := "/tmp/perf-" + pid + ".map"
		t.Cleanup(func() { os.Remove(host) })
		strategies := []string{"jcmd", "agent", "vmstructs"}
		if jdk.Feature < 17 {
			strategies[0] = "vmstructs" // no Compiler.perfmap (TestNoPerfMapCommand)
		}
		for i := range 6 {
			strategy := strategies[i%3]
			sig := []unix.Signal{unix.SIGKILL, unix.SIGINT}[i%2]
			d := time.Duration(rng.IntN(150)) * time.Millisecond
			s := startTool(t, "gjmaps", "-p", pid, "--strategy", strategy)
			s.signalAfter(d, sig)
			r := s.wait(t)
			t.Logf("%s %v after %v: exit %d %s", strategy, sig, d, r.code, strings.TrimSpace(r.stderr))
			// -1: ended by the signal itself (SIGKILL; SIGINT before the program set up its handler).
			if sig == unix.SIGINT && r.code != -1 {
				noCrash(t, "gjmaps", r)
				if r.code != 0 && (r.code != 130 || !strings.Contains(r.stderr, "interrupted")) {
					t.Errorf("interrupted: want exit 0, or 130 saying what was written: %s", r)
				}
			}
			if r := tool(t, "gjmaps", "-p", pid, "--strategy", strategy); r.code != 0 {
				t.Errorf("the next run: %s", r)
			}
			if b, err := os.ReadFile(host); err != nil || len(b) == 0 || b[len(b)-1] != '\n' {
				t.Errorf("%s after the next run: %v, %d bytes", host, err, len(b))
			}
			for _, pattern := range []string{"/tmp/.perf-" + pid + ".map.*.tmp", "/tmp/.perf-" + pid + ".map.lock.*"} {
				if left, _ := filepath.Glob(pattern); len(left) > 0 {
					t.Errorf("left behind: %q", left)
				}
			}
			// Directories of agent runs in this /tmp: any left must be in use by someone else now.
			dirs, _ := filepath.Glob("/tmp/.jvmkit-perfmap-agent-*")
			for _, d := range dirs {
				if fd, err := unix.Open(d, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0); err == nil {
					if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) == nil {
						t.Errorf("left behind by a killed run and not removed by the next: %s", d)
					}
					unix.Close(fd)
				}
			}
			if l := triggersLeft(j); len(l) > 0 {
				t.Errorf("left %q", l)
			}
		}
		if !j.Alive() {
			t.Errorf("%s died", j)
		}
	})
}
