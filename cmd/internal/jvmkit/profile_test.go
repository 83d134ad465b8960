//go:build linux && amd64

package jvmkit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/pprof/profile"
	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/cmd/internal/cliutil"
	"github.com/jvmkit/jvmkit/internal/testutil"
	"github.com/jvmkit/jvmkit/unwind"
	"github.com/jvmkit/jvmkit/vmstructs"
)

// The tests of jvmkit profile (TestCoreMatchesLive also checks --core against the walker itself); jvmkit
// is jitlog_test.go's.

func openLive(t *testing.T, pid int) (*vmstructs.JVM, *unwind.Walker) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	j, err := vmstructs.Open(ctx, pid)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	w, err := unwind.New(j, unwind.Options{Native: unwind.NewProcessSymbols(pid), NearTop: true})
	if err != nil {
		t.Fatal(err)
	}
	return j, w
}

func hostTID(th vmstructs.Thread) int {
	if th.HostTID != 0 {
		return th.HostTID
	}
	return th.TID
}

// folded is a stack as `jvmkit profile --threads` prints it, without the count.
func folded(thread string, st unwind.Stack) string {
	names := []string{thread}
	for i := len(st.Frames) - 1; i >= 0; i-- {
		f := st.Frames[i]
		n := strings.ReplaceAll(f.Name, ";", ":")
		switch f.Type {
		case unwind.Compiled:
			n += "_[j]"
		case unwind.Inlined:
			n += "_[i]"
		}
		names = append(names, n)
	}
	return strings.Join(names, ";")
}

// TestCoreMatchesLive stops the Unwind workload (SIGSTOP), walks its threads live through ptrace,
// writes a core file with gcore, lets the JVM go on, then walks the same threads in the core, with
// the walker and with `jvmkit profile --core`: the stacks must be equal frame by frame.
func TestCoreMatchesLive(t *testing.T) {
	testutil.MustHaveRoot(t)
	gcore := testutil.MustHaveTool(t, "gcore")
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		t.Parallel() // two JDKs at a time: most of the time goes in gcore writing the core file
		jvm := testutil.StartJVM(t, jdk, testutil.JVMOptions{Main: "Unwind", JVMArgs: []string{
			"-Xmx64m", "-Xss1m", "-XX:CompileCommand=quiet",
			"-XX:CompileCommand=dontinline,Unwind::rec", "-XX:CompileCommand=exclude,Unwind::interp",
		}})
		j, w := openLive(t, jvm.PID)
		threads, err := j.Threads()
		if err != nil && len(threads) == 0 {
			t.Fatal(err)
		}
		uw := map[string]vmstructs.Thread{}
		for _, th := range threads {
			if strings.HasPrefix(th.Name, "uw-") {
				uw[th.Name] = th
			}
		}
		if len(uw) != 5 {
			t.Fatalf("workload threads: %v", uw)
		}

		cont := testutil.StopProcess(t, jvm.PID)
		live := map[string]unwind.Stack{}
		for name, th := range uw {
			err := unwind.StopThread(context.Background(), hostTID(th), 2*time.Second, func(r unwind.Regs) error {
				live[name] = w.Walk(&unwind.Sample{TID: hostTID(th), JavaThread: th.JavaThread, Regs: r, Stopped: true})
				return nil
			})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		prefix := filepath.Join(t.TempDir(), "core")
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		out, err := exec.CommandContext(ctx, gcore, "-o", prefix, strconv.Itoa(jvm.PID)).CombinedOutput()
		cancel()
		cont()
		if err != nil {
			t.Fatalf("gcore: %v\n%s", err, out)
		}
		core := prefix + "." + strconv.Itoa(jvm.PID)
		t.Cleanup(func() { os.Remove(core) })

		// A JDK of a root filesystem ran with that root's /usr: its core's files are there.
		jc, err := vmstructs.OpenCore(context.Background(), core, vmstructs.CoreOptions{Root: jdk.Root})
		if err != nil {
			t.Fatal(err)
		}
		defer jc.Close()
		wc, err := unwind.New(jc, unwind.Options{Native: unwind.NewFileSymbols(unwind.CoreMappings(jc.Core().Files()), jdk.Root), NearTop: true})
		if err != nil {
			t.Fatal(err)
		}
		cthreads, _ := jc.Threads()
		jts := map[int]uint64{}
		for _, th := range cthreads {
			jts[th.TID] = th.JavaThread
		}
		wc.SetThreads(jts)
		regs := map[int]unwind.Regs{}
		for _, ct := range jc.CoreThreads() {
			if r, ok := unwind.RegsFromGPR(ct.Regs.GPR); ok {
				regs[ct.TID] = r
			}
		}
		equal, frames := 0, 0
		for name, th := range uw {
			r, ok := regs[hostTID(th)]
			if !ok {
				t.Errorf("%s: thread %d is not in the core", name, hostTID(th))
				continue
			}
			st := wc.Walk(&unwind.Sample{TID: hostTID(th), JavaThread: jts[hostTID(th)], Regs: r, Stopped: true})
			if !live[name].Complete {
				t.Errorf("%s: the live walk ended early (%v)", name, live[name].Reason)
			}
			if d := cmp.Diff(live[name], st); d != "" {
				t.Errorf("%s: core stack differs from the live one (-live +core):\n%s", name, d)
			} else {
				equal++
				frames += len(st.Frames)
			}
		}

		code, stdout, stderr := jvmkit("profile", "--core", core, "--core-root", jdk.Root, "--threads")
		if code != 0 {
			t.Fatalf("jvmkit profile --core: exit %d: %s", code, stderr)
		}
		lines := map[string]bool{}
		for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
			if i := strings.LastIndexByte(l, ' '); i > 0 {
				lines[l[:i]] = true
			}
		}
		cliEqual := 0
		for name, st := range live {
			if lines[folded(name, st)] {
				cliEqual++
			} else {
				t.Errorf("%s: jvmkit profile --core printed no stack equal to the live one:\n%s\nlive: %s", name, stdout, folded(name, st))
			}
		}
		t.Logf("%s: %d/%d threads' core stacks equal the live ones (%d frames); jvmkit profile --core: %d/%d; %s",
			jdk.Name(), equal, len(uw), frames, cliEqual, len(live), strings.TrimSpace(stderr))
	})
}

// TestProfileNotHotSpot: a pid that is no HotSpot JVM is exit status 3 with a message.
func TestProfileNotHotSpot(t *testing.T) {
	testutil.MustHaveRoot(t)
	p := testutil.StartProcess(t, "sleep", "60")
	code, _, stderr := jvmkit("profile", "-d", "1s", strconv.Itoa(p.Process.Pid))
	if code != cliutil.ExitNoJVM || !strings.Contains(stderr, "no libjvm.so") {
		t.Errorf("exit %d, stderr %q; want %d and a message naming libjvm.so", code, stderr, cliutil.ExitNoJVM)
	}
	code, _, stderr = jvmkit("profile", "-d", "1s", "999999999")
	if code != cliutil.ExitNoJVM || stderr == "" {
		t.Errorf("no such pid: exit %d, stderr %q; want %d", code, stderr, cliutil.ExitNoJVM)
	}
	// gc says the same of a process that is not a JVM (it used to warn about VMStructs and exit 1).
	code, _, stderr = jvmkit("gc", "--duration", "1s", strconv.Itoa(p.Process.Pid))
	if code != cliutil.ExitNoJVM || !strings.Contains(stderr, "not a Java process") {
		t.Errorf("gc of a non-Java pid: exit %d, stderr %q; want %d, not a Java process", code, stderr, cliutil.ExitNoJVM)
	}
}

// TestProfileOutputCheckedFirst: an -o that cannot be written is refused before sampling (a pid that
// is not even a JVM: the output is checked first), not after minutes of it.
func TestProfileOutputCheckedFirst(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{filepath.Join(t.TempDir(), "missing", "p.folded"), fifo} {
		code, _, stderr := jvmkit("profile", "-d", "60s", "-o", out, "999999999")
		if code == 0 || !strings.Contains(stderr, "write ") {
			t.Errorf("-o %s: exit %d, stderr %q; want a refusal to write (checked before the pid)", out, code, stderr)
		}
	}
}

// TestProfileUsage: flags out of range are exit status 2 with a message, before anything is opened.
func TestProfileUsage(t *testing.T) {
	for _, args := range [][]string{
		{"profile", "-F", "0", "1"},
		{"profile", "--stack-bytes", "100", "1"},
		{"profile", "--stack-bytes", "70000", "1"},
		{"profile", "--format", "xml", "1"},
		{"profile", "-d", "-1s", "1"},
	} {
		code, _, stderr := jvmkit(args...)
		if code != cliutil.ExitUsage || stderr == "" {
			t.Errorf("%v: exit %d, stderr %q; want %d and a message", args, code, stderr, cliutil.ExitUsage)
		}
	}
}

// TestProfileJVMExits kills the JVM while it is profiled: the profile of what was sampled is
// written, with a message that says so, and the status is 0.
func TestProfileJVMExits(t *testing.T) {
	testutil.MustHaveRoot(t)
	jdk := testutil.JDK17(t)
	jvm := testutil.StartJVM(t, jdk, testutil.JVMOptions{Main: "Busy", JVMArgs: []string{"-Xmx32m"}})
	out := filepath.Join(t.TempDir(), "profile.json")
	done := make(chan struct{})
	var code int
	var stderr string
	go func() {
		defer close(done)
		code, _, stderr = jvmkit("profile", "-F", "199", "-d", "60s", "--format", "json", "-o", out, strconv.Itoa(jvm.PID))
	}()
	// Kill it once jvmkit samples it (its perf events are open in this process) and the JVM has since
	// run for a second of CPU time: on a loaded machine that can take much longer than a second.
	deadline := time.Now().Add(time.Minute)
	for !perfEventsOpen(t) {
		if time.Now().After(deadline) {
			t.Fatal("jvmkit opened no perf events in a minute")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for c0 := cpuTicks(t, jvm.PID); cpuTicks(t, jvm.PID)-c0 < 100; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the JVM got no second of CPU time in a minute")
		}
	}
	if err := unix.Kill(jvm.PID, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("jvmkit profile still runs 20s after the JVM was killed")
	}
	if code != 0 || !strings.Contains(stderr, "exited after") {
		t.Fatalf("exit %d, stderr %q; want 0 and a message that the JVM exited", code, stderr)
	}
	var p struct {
		Data struct {
			Samples int `json:"samples"`
		} `json:"data"`
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &p); err != nil || p.Data.Samples < 50 {
		t.Fatalf("profile: %v, %d samples: %s", err, p.Data.Samples, data)
	}
	t.Logf("%d samples written after the JVM exited; %s", p.Data.Samples, strings.TrimSpace(stderr))
}

// perfEventsOpen reports whether this process has perf events open.
func perfEventsOpen(t *testing.T) bool {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && l == "anon_inode:[perf_event]" {
			return true
		}
	}
	return false
}

// cpuTicks is the CPU time process pid used, in clock ticks (utime + stime of /proc/<pid>/stat; 100
// per second).
func cpuTicks(t *testing.T, pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		t.Fatalf("stat: %q", s)
	}
	u, _ := strconv.Atoi(f[11])
	k, _ := strconv.Atoi(f[12])
	return u + k
}

// TestProfileThreadChurn profiles a JVM that starts and ends short-lived busy threads all the time:
// the profile completes, has samples of such threads, and at most 5% of them end early (threads
// still starting up, which run no Java code yet, aside).
func TestProfileThreadChurn(t *testing.T) {
	testutil.MustHaveRoot(t)
	jdk := testutil.JDK17(t)
	jvm := testutil.StartJVM(t, jdk, testutil.JVMOptions{Main: "Churn", JVMArgs: []string{"-Xmx32m"}})
	code, stdout, stderr := jvmkit("profile", "-F", "999", "-d", "3s", "--threads", strconv.Itoa(jvm.PID))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	churn, total, broken := 0, 0, 0
	for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
		i := strings.LastIndexByte(l, ' ')
		n, err := strconv.Atoi(l[i+1:])
		if i < 0 || err != nil {
			t.Fatalf("bad line %q", l)
		}
		total += n
		if strings.HasPrefix(l, "jvmkit-churn-") {
			churn += n
			for r := unwind.ReasonNativeUnwind; r.String() != "reason("+strconv.Itoa(int(r))+")"; r++ {
				if strings.Contains(l, ";["+r.String()) {
					broken += n
				}
			}
		}
	}
	if churn == 0 {
		t.Errorf("no samples of the short-lived threads in %d:\n%s", total, stdout)
	}
	if broken*20 > churn {
		t.Errorf("%d of %d samples of the short-lived threads ended early:\n%s", broken, churn, stdout)
	}
	if !jvm.Alive() {
		t.Error("the JVM died")
	}
	t.Logf("%d samples, %d of short-lived threads (%d ended early); %s", total, churn, broken, strings.TrimSpace(stderr))
}

// TestProfilePprof: the pprof profile of a live JVM carries the sampling period and window, and a
// cpu/nanoseconds sample type beside the counts, so that pprof shows time (a user trial found Period 0).
func TestProfilePprof(t *testing.T) {
	testutil.MustHaveRoot(t)
	jdk := testutil.JDK17(t)
	jvm := testutil.StartJVM(t, jdk, testutil.JVMOptions{Main: "Busy", JVMArgs: []string{"-Xmx32m"}})
	out := filepath.Join(t.TempDir(), "profile.pb.gz")
	code, _, stderr := jvmkit("profile", "-F", "199", "-d", "2s", "--format", "pprof", "-o", out, strconv.Itoa(jvm.PID))
	if code != 0 {
		t.Fatalf("jvmkit profile: exit %d\n%s", code, stderr)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	period := int64(time.Second) / 199
	if len(p.SampleType) != 2 || p.SampleType[0].Type != "samples" || p.SampleType[1].Type != "cpu" || p.Period != period ||
		p.DurationNanos < int64(time.Second) || p.DurationNanos > int64(10*time.Second) || len(p.Sample) == 0 {
		t.Fatalf("pprof: types %v period %d duration %d, %d samples", p.SampleType, p.Period, p.DurationNanos, len(p.Sample))
	}
	for _, s := range p.Sample {
		if s.Value[1] != s.Value[0]*period {
			t.Fatalf("sample %v: cpu is not count x period", s.Value)
		}
	}
}
