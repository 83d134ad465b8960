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

// TestToolKilledWhileAttaching kills gjcmd (SIGKILL) at a random point of its first attach to fresh
// JVMs, when it may have created the trigger file and not yet removed it: the next gjcmd must work, and
// leave no trigger file behind, whoever made it.
func TestToolKilledWhileAttaching(t *testing.T) {
	testutil.MustHaveRoot(t)
	rng := rand.New(rand.NewPCG(seed(t), 1))
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		jvms := make([]*testutil.JVM, 3)
		var wg sync.WaitGroup
		for i := range jvms {
			wg.Go(func() { jvms[i] = testutil.StartJVM(t, jdk, testutil.JVMOptions{}) })
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
	})
}

// TestToolInterrupted interrupts (SIGINT, SIGTERM) or kills (SIGKILL) gjcmd at a random point of a heap
// dump: an interrupt before the JVM had the command says nothing was done, and nothing is; after, it says
// that the dump goes on and where it will be written, and it is. Nothing is left behind (trigger files),
// and the JVM lives on.
func TestToolInterrupted(t *testing.T) {
	testutil.MustHaveRoot(t)
	rng := rand.New(rand.NewPCG(seed(t), 2))
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

// TestTargetKilled kills the JVM (SIGKILL) at a random point of a gjcmd heap dump: gjcmd says the JVM is
// gone and how (killed by SIGKILL), with exit status 3, never that it "closed the connection without a
// reply".
func TestTargetKilled(t *testing.T) {
	testutil.MustHaveRoot(t)
	rng := rand.New(rand.NewPCG(seed(t), 3))
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		jvms := make([]*testutil.JVM, 3)
		var wg sync.WaitGroup
		for i := range jvms {
			wg.Go(func() { jvms[i] = testutil.StartJVM(t, jdk, testutil.JVMOptions{JVMArgs: []string{"-Xmx64m"}}) })
		}
		wg.Wait()
		for _, j := range jvms {
			pid := strconv.Itoa(j.PID)
			if r := tool(t, "gjcmd", pid, "VM.version"); r.code != 0 { // the listener is up: the kill lands in the command
				t.Fatal(r)
			}
			d := time.Duration(rng.IntN(150)) * time.Millisecond
			s := startTool(t, "gjcmd", pid, "GC.heap_dump", "-all", "dump.hprof")
			time.Sleep(d)
			_ = unix.Kill(j.PID, unix.SIGKILL)
			r := s.wait(t)
			t.Logf("JVM killed %v into a heap dump: %s", d, strings.TrimSpace(r.stderr))
			switch {
			case r.code == 0:
				// Done before the kill.
			case strings.Contains(r.stderr, "closed the connection without a reply"):
				t.Errorf("the death of the JVM is reported as a closed connection: %s", r)
			case r.code != 3 || !strings.Contains(r.stderr, "killed by SIGKILL") && !strings.Contains(r.stderr, "no such process"):
				t.Errorf("want exit 3 saying the JVM was killed by SIGKILL: %s", r)
			}
		}
	})
}

// TestTargetStopped stops the JVM (SIGSTOP) at a random point of gjcmd commands: gjcmd says it is stopped
// and how to resume it (exit 5) within a few seconds instead of hanging; resumed, the JVM answers again.
func TestTargetStopped(t *testing.T) {
	testutil.MustHaveRoot(t)
	rng := rand.New(rand.NewPCG(seed(t), 4))
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
