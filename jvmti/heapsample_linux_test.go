package jvmti_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/attach"
	"github.com/jvmkit/jvmkit/internal/testutil"
	"github.com/jvmkit/jvmkit/jvmti"
)

// TestHeapSampleAlloc samples the Alloc workload, whose per-round mix is known (8 AllocA of 32 bytes, 2
// byte[40] of 56, 1 AllocB of 16: byte shares 66.7%, 29.2% and 4.17%), with TLABs of a fixed 8 KiB: the
// case where sampling at new TLABs (alloc --switch-flags, JFR's ObjectAllocationSample) locks onto a few
// classes and gives AllocB no sample at all. The heap sampler's shares must be the bytes' shares. A second
// session meanwhile is refused, and nothing is left in the JVM's /tmp.
func TestHeapSampleAlloc(t *testing.T) {
	for _, jdk := range testutil.JDKs(t) {
		t.Run(jdk.Name(), func(t *testing.T) {
			t.Parallel()
			j := testutil.StartJVM(t, jdk, testutil.JVMOptions{Main: "Alloc", JVMArgs: []string{"-Xmx128m", "-XX:TLABSize=8k", "-XX:-ResizeTLAB"}})
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			type result struct {
				p   *jvmti.HeapProfile
				err error
			}
			first := make(chan result, 1)
			go func() {
				p, err := jvmti.HeapSample(ctx, j.PID, jvmti.HeapSampleOptions{Duration: 3 * time.Second, Interval: 64 << 10})
				first <- result{p, err}
			}()
			// While it runs (its private directory exists), a second session is refused.
			tmp := filepath.Join(fmt.Sprintf("/proc/%d/root/tmp", j.PID))
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) { // poll, bounded
				if m, _ := filepath.Glob(filepath.Join(tmp, fmt.Sprintf(".jvmkit-heapsample-%d-*", j.NSPID), "samples")); len(m) > 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("no heap-sampling session started in 30 s")
				}
			}
			if _, err := jvmti.HeapSample(ctx, j.PID, jvmti.HeapSampleOptions{Duration: time.Second}); !errors.Is(err, jvmti.ErrBusy) {
				t.Errorf("second session: %v, want ErrBusy", err)
			}
			r := <-first
			if r.err != nil {
				t.Fatal(r.err)
			}
			p := r.p
			total := p.Bytes()
			share := func(c string) float64 {
				if cl := p.Classes[c]; cl != nil {
					return cl.Bytes / total
				}
				return 0
			}
			t.Logf("%d samples in %v: AllocA %.2f%%, byte[] %.2f%%, AllocB %.2f%% (%d samples); %.0f MB estimated",
				p.Samples, p.End.Sub(p.Start).Round(time.Millisecond), 100*share("Alloc$AllocA"), 100*share("byte[]"),
				100*share("Alloc$AllocB"), p.Classes["Alloc$AllocB"].Samples, total/1e6)
			if p.Samples < 2000 {
				t.Fatalf("%d samples in 3 s", p.Samples)
			}
			for c, want := range map[string]float64{"Alloc$AllocA": 256.0 / 384, "byte[]": 112.0 / 384, "Alloc$AllocB": 16.0 / 384} {
				if got := share(c); math.Abs(got-want) > 0.15*want {
					t.Errorf("%s: %.2f%% of the bytes, want %.2f%% ± 15%%", c, 100*got, 100*want)
				}
			}
			if left, _ := filepath.Glob(filepath.Join(tmp, fmt.Sprintf(".jvmkit-heapsample-%d-*", j.NSPID))); len(left) > 0 {
				t.Errorf("left in the JVM's /tmp: %s", strings.Join(left, " "))
			}
		})
	}
}

// TestHeapSampleDeadline: a session whose jvmkit never stops it (killed) ends by itself at its deadline:
// the agent turns the sampler off at the first sample after it, and a later stop says so (return code 8).
func TestHeapSampleDeadline(t *testing.T) {
	jdk := testutil.JDK17(t)
	j := testutil.StartJVM(t, jdk, testutil.JVMOptions{Main: "Alloc", JVMArgs: []string{"-Xmx128m"}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, libPath, dir, dfd, release := stageHeapAgent(t, ctx, j.PID)
	defer s.Close()
	defer release()
	defer s.RemovePrivateDir(dir, dfd)
	deadline := time.Now().Add(2 * time.Second).Unix()
	opts := fmt.Sprintf("start,interval=65536,deadline=%d,max=268435456,file=/tmp/%s/samples", deadline, dir)
	if err := s.Load(ctx, libPath, opts); err != nil {
		t.Fatal(err)
	}
	// A second start while it runs: busy (7).
	if err := s.Load(ctx, libPath, opts+"2"); !hasReturnCode(err, 7) {
		t.Errorf("second start: %v, want return code 7", err)
	}
	time.Sleep(time.Until(time.Unix(deadline+1, 0))) // the deadline is the agent's clock: wait it out
	samples := filepath.Join(fmt.Sprintf("/proc/%d/root/tmp", j.PID), dir, "samples")
	st1, err := os.Stat(samples)
	if err != nil {
		t.Fatal(err)
	}
	// The Alloc workload samples many times a second: the first sample after the deadline ended it. A
	// stop of another session's file, or of none, does not touch it.
	if err := s.Load(ctx, libPath, "stop,file=/tmp/"+dir+"/other"); !hasReturnCode(err, 7) {
		t.Errorf("stop of another file: %v, want return code 7", err)
	}
	if err := s.Load(ctx, libPath, "stop,file=/tmp/"+dir+"/samples"); !hasReturnCode(err, 8) {
		t.Errorf("stop after the deadline: %v, want return code 8 (ended by itself)", err)
	}
	st2, _ := os.Stat(samples)
	if st1.Size() == 0 || st2.Size() != st1.Size() {
		t.Errorf("samples file %d bytes at the deadline, %d after: want some, then no more", st1.Size(), st2.Size())
	}
	if err := s.Load(ctx, libPath, "stop"); !hasReturnCode(err, 7) {
		t.Errorf("stop with no session: %v, want return code 7", err)
	}
}

func hasReturnCode(err error, code int) bool {
	var ae *attach.AgentError
	return errors.As(err, &ae) && ae.ReturnCode == code
}

// TestHeapSampleOrphan: a session whose jvmkit was killed (its directory's lock released, as the kernel
// does for a killed process) does not lock the JVM out until its deadline: the next HeapSample stops it
// and starts its own.
func TestHeapSampleOrphan(t *testing.T) {
	jdk := testutil.JDK17(t)
	j := testutil.StartJVM(t, jdk, testutil.JVMOptions{Main: "Alloc", JVMArgs: []string{"-Xmx128m"}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, libPath, dir, dfd, release := stageHeapAgent(t, ctx, j.PID)
	opts := fmt.Sprintf("start,interval=65536,deadline=%d,max=268435456,file=/tmp/%s/samples", time.Now().Add(time.Hour).Unix(), dir)
	if err := s.Load(ctx, libPath, opts); err != nil {
		t.Fatal(err)
	}
	// Killed: its lock goes, its directory stays (unix.Close of the handle releases the flock).
	if err := closeFD(dfd); err != nil {
		t.Fatal(err)
	}
	release()
	s.Close()
	p, err := jvmti.HeapSample(ctx, j.PID, jvmti.HeapSampleOptions{Duration: time.Second, Interval: 65536})
	if err != nil {
		t.Fatalf("HeapSample after an orphaned session: %v", err)
	}
	if p.Samples == 0 {
		t.Errorf("no samples")
	}
	if left, _ := filepath.Glob(fmt.Sprintf("/proc/%d/root/tmp/.jvmkit-heapsample-%d-*", j.PID, j.NSPID)); len(left) > 0 {
		t.Errorf("left in the JVM's /tmp: %v", left)
	}
}

func closeFD(fd int) error { return unix.Close(fd) }

// stageHeapAgent opens a session on JVM pid with the heap-sampling agent staged and a private directory
// of the prefix HeapSample uses, as HeapSample does before it loads the agent.
func stageHeapAgent(t *testing.T, ctx context.Context, pid int) (s *jvmti.Session, libPath, dir string, dfd int, release func()) {
	t.Helper()
	s, err := jvmti.Open(ctx, pid, nil)
	if err != nil {
		t.Fatal(err)
	}
	lib, name, err := jvmti.Library("heapsample")
	if err != nil {
		s.Close()
		t.Fatal(err)
	}
	if libPath, release, err = s.Stage(name, lib); err != nil {
		s.Close()
		t.Fatal(err)
	}
	if dir, dfd, err = s.PrivateDir(fmt.Sprintf(".jvmkit-heapsample-%d-", s.Target().NSPID)); err != nil {
		release()
		s.Close()
		t.Fatal(err)
	}
	return s, libPath, dir, dfd, release
}

// TestHeapSampleHostileFile: the samples file lies in a directory of the JVM's user, who can put
// anything at its name while the session runs. A FIFO there must neither block jvmkit nor be read.
func TestHeapSampleHostileFile(t *testing.T) {
	jdk := testutil.JDK17(t)
	j := testutil.StartJVM(t, jdk, testutil.JVMOptions{Main: "Alloc", JVMArgs: []string{"-Xmx128m"}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := jvmti.HeapSample(ctx, j.PID, jvmti.HeapSampleOptions{Duration: 2 * time.Second, Interval: 65536})
		done <- err
	}()
	tmp := fmt.Sprintf("/proc/%d/root/tmp", j.PID)
	var samples string
	for deadline := time.Now().Add(30 * time.Second); samples == ""; time.Sleep(10 * time.Millisecond) { // poll, bounded
		if m, _ := filepath.Glob(filepath.Join(tmp, fmt.Sprintf(".jvmkit-heapsample-%d-*", j.NSPID), "samples")); len(m) > 0 {
			samples = m[0]
		}
		if time.Now().After(deadline) {
			t.Fatal("no heap-sampling session started in 30 s")
		}
	}
	if err := os.Rename(samples, samples+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(samples, 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, fs.ErrPermission) || !strings.Contains(err.Error(), "not the agent's file") {
			t.Errorf("HeapSample with a FIFO at the samples file: %v, want a refusal (fs.ErrPermission)", err)
		}
	case <-time.After(45 * time.Second):
		t.Fatal("HeapSample blocked on a FIFO at the samples file")
	}
}
