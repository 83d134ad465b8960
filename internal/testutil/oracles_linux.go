package testutil

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// lightJVM are the options of the JDK's tools' own JVMs: they run for a second or two on a shared two-core
// machine, where C2 and parallel GC threads only cost.
var lightJVM = []string{"-J-XX:TieredStopAtLevel=1", "-J-XX:+UseSerialGC"}

// Tool runs a tool of the JVM's own JDK (jcmd, jfr, jhsdb, ...) with args, as the JVM's user when it runs
// as another one (setpriv: HotSpot's attach listener answers only its own euid, and root), and returns its
// stdout. The test fails if the tool fails or runs longer than timeout.
func (j *JVM) Tool(t testing.TB, timeout time.Duration, tool string, args ...string) string {
	t.Helper()
	if j.opts.UID != 0 || j.opts.GID != 0 {
		MustHaveTool(t, "setpriv")
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := j.toolCommand(ctx, tool, args...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %q: %v\nstdout:\n%s\nstderr:\n%s", tool, args, err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

func (j *JVM) toolCommand(ctx context.Context, tool string, args ...string) *exec.Cmd {
	argv := []string{j.JDK.Bin(tool)}
	argv = append(argv, lightJVM...)
	argv = append(argv, args...)
	if j.opts.UID != 0 || j.opts.GID != 0 {
		argv = append([]string{"setpriv", fmt.Sprintf("--reuid=%d", j.opts.UID),
			fmt.Sprintf("--regid=%d", j.opts.GID), "--clear-groups"}, argv...)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = javaEnv(nil)
	cmd.Dir = j.Dir
	return cmd
}

// Jcmd runs the JDK's own jcmd against the JVM, e.g. j.Jcmd(t, "GC.run"), and returns its output.
func (j *JVM) Jcmd(t testing.TB, args ...string) string {
	t.Helper()
	return j.Tool(t, 2*time.Minute, "jcmd", append([]string{strconv.Itoa(j.PID)}, args...)...)
}

// JFR is a flight recording started by [JVM.StartJFR].
type JFR struct {
	jvm     *JVM
	name    string
	path    string
	stopped atomic.Bool
}

var jfrSeq atomic.Int64

// StartJFR starts a flight recording in the JVM with the JDK's jcmd (JFR.start), to be written to path,
// which the JVM's user must be able to create (for an [App]: under its Tmp). options are further JFR.start
// options, such as "settings=profile". A cleanup stops the recording if the test does not.
func (j *JVM) StartJFR(t testing.TB, path string, options ...string) *JFR {
	t.Helper()
	r := &JFR{jvm: j, name: fmt.Sprintf("jvmkit-test-%d", jfrSeq.Add(1)), path: path}
	args := append([]string{"JFR.start", "name=" + r.name, "filename=" + path}, options...)
	if out := j.Jcmd(t, args...); !strings.Contains(out, "Started recording") {
		t.Fatalf("JFR.start: %s", out)
	}
	t.Cleanup(func() {
		if !r.stopped.Load() && j.Alive() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_ = j.toolCommand(ctx, "jcmd", strconv.Itoa(j.PID), "JFR.stop", "name="+r.name).Run()
		}
	})
	return r
}

// Stop ends the recording (JFR.stop, which writes the file) and returns the file's path.
func (r *JFR) Stop(t testing.TB) string {
	t.Helper()
	if out := r.jvm.Jcmd(t, "JFR.stop", "name="+r.name); !strings.Contains(out, "Stopped recording") {
		t.Fatalf("JFR.stop: %s", out)
	}
	r.stopped.Store(true)
	return r.path
}

// ReadJFR prints the recording at path with jdk's `jfr print --json`, only the given event types, with
// stacks cut to stackDepth frames (0: jfr's default, 5), and returns the events.
func ReadJFR(t testing.TB, jdk JDK, path string, stackDepth int, events ...string) []JFREvent {
	t.Helper()
	args := []string{"print", "--json"}
	if stackDepth > 0 {
		args = append(args, "--stack-depth", strconv.Itoa(stackDepth))
	}
	if len(events) > 0 {
		args = append(args, "--events", strings.Join(events, ","))
	}
	args = append(args, path)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, jdk.Bin("jfr"), append(slices.Clone(lightJVM), args...)...)
	cmd.Env = javaEnv(nil)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("jfr %q: %v\n%s", args, err, stderr.String())
	}
	evs, err := ParseJFRJSON(out)
	if err != nil {
		t.Fatalf("jfr %q: %v", args, err)
	}
	return evs
}

// Bpftrace is a bpftrace program started by [StartBpftrace].
type Bpftrace struct{ bg *Background }

// StartBpftrace runs `bpftrace -f json [args] -e program` and waits until it has attached its probes. The
// program should end itself (interval:s:N { exit(); }); a cleanup stops it (SIGINT, which makes bpftrace
// print its maps) if it still runs when the test ends.
func StartBpftrace(t testing.TB, program string, args ...string) *Bpftrace {
	t.Helper()
	MustHaveRoot(t)
	argv := append([]string{"-f", "json"}, args...)
	argv = append(argv, "-e", program)
	b := &Bpftrace{bg: StartBackground(t, unix.SIGINT, MustHaveTool(t, "bpftrace"), argv...)}
	b.bg.WaitFor(t, `"attached_probes"`, time.Minute)
	return b
}

// Stop asks the program to end (SIGINT, which makes bpftrace print its maps); Wait then returns them. Wait's
// timeout bounds how long that takes: printing large maps took bpftrace more than 10 s on a loaded machine.
func (b *Bpftrace) Stop() { _ = b.bg.Cmd.Process.Signal(unix.SIGINT) }

// Wait waits up to timeout for the program to end and returns its maps as printed at exit: map name
// ("@count") -> key -> value. Maps without keys have the key "".
//
// bpftrace prints its maps before it detaches its probes; once (v0.17, a JVM's object__alloc sites, at
// load 20) a detach that failed ("failed to detach probe", tracefs not mounted) left it running for over
// a minute after the maps were out. A program that has not ended by timeout, has said that a detach
// failed (so it is past printing) and whose output parses is killed and its maps are taken, with a log
// line saying so.
func (b *Bpftrace) Wait(t testing.TB, timeout time.Duration) map[string]map[string]int64 {
	t.Helper()
	select {
	case <-b.bg.Done():
	case <-time.After(timeout):
		out := b.bg.Stdout.String()
		detached := strings.Contains(b.bg.Stderr.String(), "failed to detach")
		if maps, err := ParseBpftraceMaps([]byte(out)); detached && err == nil && len(maps) > 0 && strings.HasSuffix(out, "\n") {
			t.Logf("%s printed its maps but did not end within %v: killed\n%s", b.bg.Cmd, timeout, b.bg.Stderr.String())
			_ = b.bg.Cmd.Process.Kill()
			<-b.bg.Done()
			untrack(b.bg)
			return maps
		}
		b.bg.Stop()
		t.Fatalf("%s did not end within %v (it had printed %d bytes of maps)\n%s", b.bg.Cmd, timeout, len(out), b.bg.Stderr.String())
	}
	maps, err := ParseBpftraceMaps([]byte(b.bg.Wait(t, time.Minute))) // it has ended
	if err != nil {
		t.Fatalf("bpftrace: %v", err)
	}
	return maps
}

// LibJVM returns the path of the libjvm.so the JVM runs, as the host sees it (for probes: bpftrace's usdt
// and uprobe targets).
func (j *JVM) LibJVM(t testing.TB) string {
	t.Helper()
	maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", j.PID))
	if err != nil {
		t.Fatalf("read maps of %s: %v", j, err)
	}
	for line := range strings.Lines(string(maps)) {
		fields := strings.Fields(line)
		if len(fields) >= 6 && strings.HasSuffix(fields[5], "/libjvm.so") {
			return fmt.Sprintf("/proc/%d/root%s", j.PID, fields[5])
		}
	}
	t.Fatalf("%s has no libjvm.so mapped", j)
	return ""
}
