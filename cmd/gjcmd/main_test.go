//go:build linux

package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/internal/testutil"
)

var gjcmdBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "gjcmd-bin-*")
	if err != nil {
		panic(err)
	}
	gjcmdBin = filepath.Join(dir, "gjcmd")
	// Built as released: static, stripped (a cgo build pays for the dynamic loader on every run).
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", gjcmdBin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build gjcmd: %v\n%s", err, out)
		os.Exit(1)
	}
	testutil.Main(m, func() { os.RemoveAll(dir) })
}

type run struct {
	stdout, stderr string
	code           int
	took           time.Duration
}

// toolDeadline bounds one run of gjcmd or the JDK's jcmd: the JDK's jcmd waits without end on a JVM that
// does not answer, and a test that hung until go test's timeout killed the binary left that jcmd behind.
const toolDeadline = 2 * time.Minute

func execTool(t *testing.T, bin string, args ...string) run {
	t.Helper()
	var o, e bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), toolDeadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &o, &e
	cmd.WaitDelay = 5 * time.Second
	cmd.SysProcAttr = &unix.SysProcAttr{Pdeathsig: unix.SIGKILL} // and when go test's own timeout kills us
	start := time.Now()
	err := cmd.Run()
	r := run{stdout: o.String(), stderr: e.String(), took: time.Since(start)}
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("%s %v: no answer within %v (killed)\nstdout: %s\nstderr: %s", bin, args, toolDeadline, r.stdout, r.stderr)
	}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("%s %v: %v", bin, args, err)
	}
	return r
}

func gjcmd(t *testing.T, args ...string) run { t.Helper(); return execTool(t, gjcmdBin, args...) }

// TestParity compares gjcmd with the JDK's jcmd on the same JVM: byte-identical output where the
// output is deterministic, the same shape where it is not, and the same exit statuses.
func TestParity(t *testing.T) {
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		t.Parallel() // two JDKs at a time: the JDK's jcmd starts a JVM per command, which leaves a CPU idle
		j := testutil.StartJVM(t, jdk, testutil.JVMOptions{})
		pid := strconv.Itoa(j.PID)
		jcmd := func(args ...string) run { return execTool(t, jdk.Bin("jcmd"), args...) }
		for _, cmd := range [][]string{
			{"VM.version"}, {"help"}, {"help", "VM.flags"}, {"VM.flags"}, {"VM.flags", "-all"},
			{"VM.command_line"}, {"Compiler.directives_print"},
		} {
			want := jcmd(append([]string{pid}, cmd...)...)
			got := gjcmd(t, append([]string{pid}, cmd...)...)
			if got.stdout != want.stdout || got.code != want.code {
				t.Errorf("%v: exit %d vs jcmd %d\n gjcmd: %q\n  jcmd: %q", cmd, got.code, want.code, got.stdout, want.stdout)
			}
		}
		// A mandatory option with a default (VM.classloaders' fold before JDK 25) needs no value.
		if want, got := jcmd(pid, "VM.classloaders", "verbose"), gjcmd(t, pid, "VM.classloaders", "verbose"); got.code != want.code ||
			got.code == 0 && !strings.Contains(got.stdout, "bootstrap") {
			t.Errorf("VM.classloaders verbose: gjcmd exit %d %q %q; jcmd exit %d", got.code, got.stdout, got.stderr, want.code)
		}
		// Outputs that change between two calls: compare their shape.
		shape := map[string]*regexp.Regexp{
			"Thread.print":       regexp.MustCompile(`(?m)^"([^"]+)" #\d+`),
			"GC.class_histogram": regexp.MustCompile(`(?m)^\s*\d+:\s+\d+\s+\d+\s+(\S+)`),
		}
		for cmd, re := range shape {
			want := jcmd(pid, cmd)
			got := gjcmd(t, pid, cmd)
			if got.code != 0 || want.code != 0 {
				t.Fatalf("%s: exit %d vs %d", cmd, got.code, want.code)
			}
			if !strings.HasPrefix(got.stdout, pid+":\n") {
				t.Errorf("%s: no header", cmd)
			}
			g, w := names(re, got.stdout), names(re, want.stdout)
			if len(g) == 0 || !subset(w, g, 0.9) {
				t.Errorf("%s: %d names, jcmd %d; missing %v", cmd, len(g), len(w), missing(w, g))
			}
		}
		// PerfCounter.print: the same counters in the same order, constants equal.
		want, got := jcmd(pid, "PerfCounter.print"), gjcmd(t, pid, "PerfCounter.print")
		if got.code != 0 || want.code != 0 {
			t.Fatalf("PerfCounter.print: exit %d vs %d: %s", got.code, want.code, got.stderr)
		}
		gk, wk := counterNames(got.stdout), counterNames(want.stdout)
		if strings.Join(gk, "\n") != strings.Join(wk, "\n") {
			t.Errorf("PerfCounter.print names differ: missing %v extra %v", missing(wk, gk), missing(gk, wk))
		}
		for _, line := range strings.Split(want.stdout, "\n") {
			if strings.HasPrefix(line, "java.property.") && !strings.Contains(got.stdout, line+"\n") {
				t.Errorf("PerfCounter.print: jcmd has %q, gjcmd not", line)
			}
		}
		// Options are checked before sending: same exit status as jcmd, a message with a suggestion.
		want = jcmd(pid, "VM.flags", "-al")
		got = gjcmd(t, pid, "VM.flags", "-al")
		if got.code != want.code || got.stdout != want.stdout || !strings.Contains(got.stderr, `did you mean "-all"`) {
			t.Errorf("VM.flags -al: gjcmd exit %d %q %q; jcmd exit %d", got.code, got.stdout, got.stderr, want.code)
		}
		if got := gjcmd(t, "--no-check", pid, "VM.flags", "-al"); got.code != want.code || strings.TrimSpace(got.stderr) != strings.TrimSpace(want.stderr) {
			t.Errorf("--no-check VM.flags -al: gjcmd %d %q; jcmd %d %q", got.code, got.stderr, want.code, want.stderr)
		}
		// Failures the JVM reports: same exit status and message as jcmd.
		for _, cmd := range [][]string{{"No.such_command"}, {"GC.heap_dump"}} {
			want := jcmd(append([]string{pid}, cmd...)...)
			got := gjcmd(t, append([]string{pid}, cmd...)...)
			if got.code != want.code || got.stdout != want.stdout || strings.TrimSpace(got.stderr) != strings.TrimSpace(want.stderr) {
				t.Errorf("%v: gjcmd exit %d %q %q; jcmd exit %d %q %q", cmd, got.code, got.stdout, got.stderr, want.code, want.stdout, want.stderr)
			}
		}
		// -l lists our JVM the way jcmd does.
		wl, gl := jcmd("-l"), gjcmd(t, "-l")
		line := regexp.MustCompile(`(?m)^` + pid + ` .*$`)
		if w, g := line.FindString(wl.stdout), line.FindString(gl.stdout); w == "" || w != g {
			t.Errorf("-l: jcmd %q, gjcmd %q", w, g)
		}
		if gl.code != 0 { // other JDKs' subtests run their jcmd meanwhile: listed, as jcmd would
			t.Errorf("-l: exit %d\n%s", gl.code, gl.stdout)
		}
		// jcmd -l ignores what follows it; a negative pid is jcmd's error, not an unknown flag.
		if g := gjcmd(t, "-l", pid); g.code != 0 || line.FindString(g.stdout) == "" {
			t.Errorf("-l %s: exit %d %q %q, want the list as jcmd -l prints it", pid, g.code, g.stdout, g.stderr)
		}
		for _, args := range [][]string{{"-1", "VM.version"}, {"-5"}} {
			want, got := jcmd(args...), gjcmd(t, args...)
			if got.code != want.code || got.stdout != want.stdout || strings.TrimSpace(got.stderr) != strings.TrimSpace(want.stderr) {
				t.Errorf("%v: gjcmd exit %d %q %q; jcmd exit %d %q %q", args, got.code, got.stdout, got.stderr, want.code, want.stdout, want.stderr)
			}
		}
		// -f: one command per line, up to "stop".
		file := filepath.Join(t.TempDir(), "cmds")
		os.WriteFile(file, []byte("VM.version\n# a comment, which the JVM skips\n#VM.flags\n\t# a tab'\"s odd quote\nVM.uptime\nstop\nVM.flags\n"), 0o644)
		wf, gf := jcmd(pid, "-f", file), gjcmd(t, pid, "-f", file)
		if gf.code != wf.code || strings.Count(gf.stdout, "\n") != strings.Count(wf.stdout, "\n") || !strings.Contains(gf.stdout, "JDK ") {
			t.Errorf("-f: gjcmd %d %q, jcmd %d %q", gf.code, gf.stdout, wf.code, wf.stdout)
		}
		// A command with empty output says so, like jcmd.
		if g := gjcmd(t, pid, "GC.run"); g.stdout != pid+":\nCommand executed successfully\n" {
			t.Errorf("GC.run: %q", g.stdout)
		}
		// Main-class selection.
		if g := gjcmd(t, "Sleeper", "VM.version"); !strings.Contains(g.stdout, pid+":\n") {
			t.Errorf("main class selection: %q %q", g.stdout, g.stderr)
		}
	})
}

func names(re *regexp.Regexp, s string) []string {
	var out []string
	for _, m := range re.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

func counterNames(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if k, _, ok := strings.Cut(l, "="); ok {
			out = append(out, k)
		}
	}
	return out
}

// subset reports whether at least frac of want's distinct names are in got.
func subset(want, got []string, frac float64) bool {
	return float64(len(missing(want, got))) <= (1-frac)*float64(len(dedup(want)))
}

func dedup(s []string) []string {
	m := map[string]bool{}
	var out []string
	for _, x := range s {
		if !m[x] {
			m[x] = true
			out = append(out, x)
		}
	}
	return out
}

func missing(want, got []string) []string {
	have := map[string]bool{}
	for _, g := range got {
		have[g] = true
	}
	var out []string
	for _, w := range dedup(want) {
		if !have[w] {
			out = append(out, w)
		}
	}
	sort.Strings(out)
	return out
}

// TestExitCodes runs the bad inputs through the command line: each has its documented status and a
// message, and leaves the target as it was.
func TestExitCodes(t *testing.T) {
	jdk := testutil.JDK17(t)
	dead := exec.Command("true")
	dead.Run()
	victim := testutil.StartProcess(t, "sleep", "600")
	disabled := testutil.StartJVM(t, jdk, testutil.JVMOptions{JVMArgs: []string{"-XX:+DisableAttachMechanism"}})
	xrs := testutil.StartJVM(t, jdk, testutil.JVMOptions{JVMArgs: []string{"-Xrs"}})
	stopped := testutil.StartJVM(t, jdk, testutil.JVMOptions{})
	unix.Kill(stopped.PID, unix.SIGSTOP)
	t.Cleanup(func() { unix.Kill(stopped.PID, unix.SIGCONT) })
	ok := testutil.StartJVM(t, jdk, testutil.JVMOptions{})
	frozen := testutil.StartJVM(t, jdk, testutil.JVMOptions{})
	testutil.Freeze(t, frozen.PID)
	// Frozen after an attach: the socket takes the request, which the JVM runs once thawed.
	frozenWarm := testutil.StartJVM(t, jdk, testutil.JVMOptions{})
	if r := gjcmd(t, strconv.Itoa(frozenWarm.PID), "VM.version"); r.code != 0 {
		t.Fatalf("VM.version: %d %s", r.code, r.stderr)
	}
	testutil.Freeze(t, frozenWarm.PID)
	existing := filepath.Join(t.TempDir(), "existing.hprof")
	if err := os.WriteFile(existing, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	dump := filepath.Join(t.TempDir(), "dump.hprof")

	for _, tc := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"dead pid", []string{strconv.Itoa(dead.Process.Pid), "VM.version"}, 3, "no such process"},
		{"non-java", []string{strconv.Itoa(victim.Process.Pid), "VM.version"}, 3, "not a Java process"},
		{"attach disabled", []string{strconv.Itoa(disabled.PID), "VM.version"}, 5, "DisableAttachMechanism"},
		{"stopped", []string{"--timeout", "2s", strconv.Itoa(stopped.PID), "VM.version"}, 5, "stopped"},
		{"unknown command", []string{strconv.Itoa(ok.PID), "No.such"}, 1, "Unknown diagnostic command"},
		{"too long for v1", []string{strconv.Itoa(ok.PID), "JFR.check", "name=" + strings.Repeat("x", 2000)}, 1, "1024"},
		{"no match", []string{"NoSuchMainClassAnywhere", "VM.version"}, 3, "Could not find any processes"},
		{"usage", []string{"--protocol", "7", strconv.Itoa(ok.PID), "VM.version"}, 2, "protocol"},
		{"usage -f", []string{strconv.Itoa(ok.PID), "-f"}, 2, "-f"},
		{"xrs works", []string{strconv.Itoa(xrs.PID), "VM.version"}, 0, ""},
		{"frozen", []string{strconv.Itoa(frozen.PID), "VM.version"}, 5, "frozen"},
		{"frozen with the request", []string{strconv.Itoa(frozenWarm.PID), "VM.version"}, 5, "frozen by its cgroup's freezer (podman or docker pause) and cannot answer; thaw it (podman unpause); it had VM.version, which it runs once it runs again"},
		// Refused before the JVM dumps its heap, not after (the dump below must not exist).
		{"-o exists", []string{"-o", existing, strconv.Itoa(ok.PID), "GC.heap_dump", dump}, 1, "not overwriting"},
		{"protocol 2 before JDK 24", []string{"--protocol", "2", strconv.Itoa(ok.PID), "VM.version"}, 1, "gjcmd: the JVM does not speak attach protocol 2 (it needs JDK 24 or later)"},
	} {
		r := gjcmd(t, tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.msg) {
			t.Errorf("%s: exit %d, stderr %q; want %d and %q", tc.name, r.code, r.stderr, tc.code, tc.msg)
		}
		if tc.name == "stopped" && r.took > 3*time.Second {
			t.Errorf("stopped: took %v with --timeout 2s", r.took)
		}
	}
	if _, err := os.Stat(dump); err == nil {
		t.Error("-o naming an existing file: the JVM dumped its heap anyway")
	}
	if b, _ := os.ReadFile(existing); string(b) != "mine" {
		t.Errorf("-o naming an existing file: it now holds %q", b)
	}
	if err := victim.Process.Signal(unix.Signal(0)); err != nil {
		t.Error("the non-Java process died")
	}
	for _, j := range []*testutil.JVM{disabled, xrs, ok} {
		if !j.Alive() {
			t.Errorf("JVM %d died", j.PID)
		}
	}
	if strings.Contains(disabled.Stdout(), "Full thread dump") {
		t.Error("the attach-disabled JVM was signalled")
	}
}

// TestConcurrent: 100 gjcmd processes against one freshly started JVM (they race to start its
// listener), then one gjcmd fanning out over 10 JVMs.
func TestConcurrent(t *testing.T) {
	jdks := testutil.JDKs(t)
	jdk := jdks[len(jdks)-1]
	j := testutil.StartJVM(t, jdk, testutil.JVMOptions{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var fails []string
	for range 100 {
		wg.Go(func() {
			r := gjcmd(t, strconv.Itoa(j.PID), "VM.version")
			if r.code != 0 || !strings.Contains(r.stdout, "JDK ") {
				mu.Lock()
				fails = append(fails, fmt.Sprintf("exit %d: %s", r.code, r.stderr))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(fails) > 0 {
		t.Errorf("%d of 100 concurrent calls failed; first: %s", len(fails), fails[0])
	}
	assertNoTrigger(t, j)

	var mine []*testutil.JVM
	for i := range 10 {
		mine = append(mine, testutil.StartJVM(t, jdks[i%len(jdks)], testutil.JVMOptions{}))
	}
	// 0 is every JVM on the machine, other users' too: a deadline per JVM, so that another's hung or
	// frozen JVM is an error in its own result, not a hang of the test (only ours are checked).
	r := gjcmd(t, "--json", "--timeout", "30s", "0", "VM.version")
	var out struct {
		Schema  string
		Results []struct {
			PID    int
			Output string
			Error  string
			Exit   int
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("--json: %v\n%s", err, r.stdout)
	}
	byPid := map[int]int{}
	for i, res := range out.Results {
		byPid[res.PID] = i
	}
	for _, m := range mine {
		i, ok := byPid[m.PID]
		if !ok {
			t.Errorf("gjcmd 0 missed JVM %d", m.PID)
			continue
		}
		if res := out.Results[i]; res.Exit != 0 || !strings.Contains(res.Output, "JDK ") {
			t.Errorf("JVM %d: exit %d %s", m.PID, res.Exit, res.Error)
		}
	}
}

func assertNoTrigger(t *testing.T, j *testutil.JVM) {
	t.Helper()
	for _, dir := range []string{fmt.Sprintf("/proc/%d/cwd", j.PID), "/tmp"} {
		if _, err := os.Lstat(filepath.Join(dir, ".attach_pid"+strconv.Itoa(j.NSPID))); err == nil {
			t.Errorf("trigger left in %s", dir)
		}
	}
}

// TestContainerCLI: discovery and commands by host pid for a JVM in its own pid+mount namespace.
func TestContainerCLI(t *testing.T) {
	testutil.MustHaveRoot(t)
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		j := testutil.StartJVM(t, jdk, testutil.JVMOptions{Namespace: true})
		pid := strconv.Itoa(j.PID)
		l := gjcmd(t, "-l")
		if !regexp.MustCompile(`(?m)^` + pid + ` Sleeper`).MatchString(l.stdout) {
			t.Errorf("-l does not list the container JVM %s:\n%s", pid, l.stdout)
		}
		if r := gjcmd(t, pid, "VM.version"); r.code != 0 || !strings.Contains(r.stdout, "JDK ") {
			t.Errorf("VM.version: %d %s", r.code, r.stderr)
		}
		if r := gjcmd(t, pid, "PerfCounter.print"); r.code != 0 || !strings.Contains(r.stdout, "sun.rt.javaCommand=\"Sleeper") {
			t.Errorf("PerfCounter.print: %d %.200s %s", r.code, r.stdout, r.stderr)
		}
		var js struct {
			JVMs []struct {
				PID, NSPID int
				Container  bool
			}
		}
		if err := json.Unmarshal([]byte(gjcmd(t, "-l", "--json").stdout), &js); err != nil {
			t.Fatal(err)
		}
		found := false
		for _, x := range js.JVMs {
			if x.PID == j.PID {
				found = true
				if x.NSPID != 1 || !x.Container {
					t.Errorf("json: %+v", x)
				}
			}
		}
		if !found {
			t.Error("--json list misses the container JVM")
		}
	})
}

// TestLoadCLI: a failed agent load is a failure on every JDK (Debian's jattach 2.1 reports success
// for it on JDK 21+).
func TestLoadCLI(t *testing.T) {
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		j := testutil.StartJVM(t, jdk, testutil.JVMOptions{})
		r := gjcmd(t, strconv.Itoa(j.PID), "load", "/nonexistent/libnone.so", "true", "")
		if r.code != 1 || !strings.Contains(r.stderr, "agent load failed") {
			t.Errorf("load missing library: exit %d %q", r.code, r.stderr)
		}
		if r := gjcmd(t, strconv.Itoa(j.PID), "properties"); r.code != 0 || !strings.Contains(r.stdout, "java.home=") {
			t.Errorf("properties: %d", r.code)
		}
	})
}

// TestDiscoveryWithoutPerfData: a JVM without hsperfdata is still found (by its libjvm.so mapping),
// listed with its main class from the command line, and attachable.
func TestDiscoveryWithoutPerfData(t *testing.T) {
	jdk := testutil.JDK17(t)
	j := testutil.StartJVM(t, jdk, testutil.JVMOptions{JVMArgs: []string{"-XX:-UsePerfData"}})
	pid := strconv.Itoa(j.PID)
	if !regexp.MustCompile(`(?m)^` + pid + ` Sleeper$`).MatchString(gjcmd(t, "-l").stdout) {
		t.Errorf("-l misses the -XX:-UsePerfData JVM %s", pid)
	}
	if r := gjcmd(t, pid, "VM.version"); r.code != 0 {
		t.Errorf("VM.version: exit %d %s", r.code, r.stderr)
	}
	r := gjcmd(t, pid, "PerfCounter.print")
	if r.code != 1 || !strings.Contains(r.stderr, "UsePerfData") {
		t.Errorf("PerfCounter.print without hsperfdata: exit %d %q", r.code, r.stderr)
	}
}

// TestOpenJ9Refused: a process mapping OpenJ9's VM library is recognised and refused without a
// signal. No OpenJ9 is packaged for our machines, so a plain process preloads a library of that name.
func TestOpenJ9Refused(t *testing.T) {
	dir := t.TempDir()
	lib := filepath.Join(dir, "libj9vm29.so")
	src, err := filepath.Glob("/lib/x86_64-linux-gnu/libutil.so.1")
	if err != nil || len(src) == 0 {
		testutil.Skipf(t, "no small shared library to stand in for libj9vm29.so")
	}
	b, err := os.ReadFile(src[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lib, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("env", "--default-signal=QUIT", "LD_PRELOAD="+lib, "sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	pid := strconv.Itoa(cmd.Process.Pid)
	for range 100 { // until the loader has mapped it
		if m, _ := os.ReadFile("/proc/" + pid + "/maps"); strings.Contains(string(m), "libj9vm29.so") {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	r := gjcmd(t, pid, "VM.version")
	if r.code != 3 || !strings.Contains(r.stderr, "OpenJ9") {
		t.Errorf("OpenJ9: exit %d %q", r.code, r.stderr)
	}
	if err := cmd.Process.Signal(unix.Signal(0)); err != nil {
		t.Error("the process died")
	}
}

// TestInterrupt: SIGINT while waiting for a listener that never comes exits 130 and removes the
// trigger file; so do two runs waiting on the same JVM, interrupted at once (the second shares the
// first's trigger file, which must go when both have gone).
func TestInterrupt(t *testing.T) {
	jdk := testutil.JDK17(t)
	// No hsperfdata, so the disabled attach mechanism cannot be seen up front: gjcmd has to wait.
	j := testutil.StartJVM(t, jdk, testutil.JVMOptions{JVMArgs: []string{"-XX:-UsePerfData", "-XX:+DisableAttachMechanism"}})
	trigger := filepath.Join(fmt.Sprintf("/proc/%d/cwd", j.PID), ".attach_pid"+strconv.Itoa(j.NSPID))
	for _, runs := range []int{1, 2} {
		cmds := make([]*exec.Cmd, runs)
		stderr := make([]testutil.SyncBuffer, runs)
		for i := range cmds {
			// VM.version only prints, the listener is not up: the handler goes in before the trigger.
			// --json arms it from the start. -v logs the trigger once it is there (the run is waiting).
			args := []string{"-v", strconv.Itoa(j.PID), "VM.version"}
			if i == 1 {
				args = append([]string{"--json"}, args...)
			}
			cmds[i] = exec.Command(gjcmdBin, args...)
			cmds[i].Stderr = &stderr[i]
			if err := cmds[i].Start(); err != nil {
				t.Fatal(err)
			}
		}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) { // poll, bounded
			waiting := 0
			for i := range stderr {
				if strings.Contains(stderr[i].String(), "trigger") {
					waiting++
				}
			}
			if waiting == runs {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d runs: %d waiting on the trigger after 10 s", runs, waiting)
			}
		}
		if _, err := os.Lstat(trigger); err != nil {
			t.Fatalf("%d runs: no trigger file while they wait: %v", runs, err)
		}
		for _, cmd := range cmds {
			cmd.Process.Signal(os.Interrupt)
		}
		for i, cmd := range cmds {
			err := cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 130 {
				t.Errorf("%d runs: interrupted gjcmd %v: %v %s", runs, cmd.Args[1:], err, stderr[i].String())
			}
		}
		if _, err := os.Lstat(trigger); err == nil {
			t.Errorf("%d runs: trigger file left behind after SIGINT", runs)
		}
		if !j.Alive() {
			t.Fatal("JVM died")
		}
	}
}

// TestFilesFromContainers: a file written by a JVM in its own pid+mount namespace (private /tmp,
// relative name against the JVM's own cwd) is reported with its host path and copied out with
// --copy-to / -o.
func TestFilesFromContainers(t *testing.T) {
	testutil.MustHaveRoot(t)
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		t.Parallel() // two JDKs at a time: nothing here is timed
		for _, uid := range []int{0, 65534} {
			j := testutil.StartJVM(t, jdk, testutil.JVMOptions{Namespace: true, UID: uid, GID: uid})
			pid := strconv.Itoa(j.PID)
			r := gjcmd(t, pid, "JFR.start", "name=c")
			if r.code != 0 {
				t.Fatalf("JFR.start: %d %s", r.code, r.stderr)
			}
			// JFR's hint names the JVM by its pid in its namespace: gjcmd says which pid that is here.
			if !strings.Contains(r.stdout, "jcmd 1 JFR.dump") || !strings.Contains(r.stderr, "calls itself 1, its pid in its container; from this host it is "+pid) {
				t.Errorf("JFR.start's hint with the namespace pid, without a note: %s %s", r.stdout, r.stderr)
			}
			dir := t.TempDir()
			// uid 65534 cannot write its cwd, only its private /tmp. %p is the JVM's own pid (1 in its
			// namespace) from JDK 18; JDK 17 writes the name as it is.
			name, want := "rec.jfr", "rec.jfr"
			if uid != 0 {
				name = "/tmp/rec.jfr"
			}
			if jdk.Feature >= 18 {
				name, want = strings.Replace(name, "rec", "rec_%p", 1), "rec_1.jfr"
			}
			r = gjcmd(t, "--copy-to", dir, pid, "JFR.dump", "name=c", "filename="+name)
			if r.code != 0 || !strings.Contains(r.stderr, "from this host: /proc/"+pid+"/root/") || !strings.Contains(r.stderr, "copied") {
				t.Fatalf("uid %d: JFR.dump --copy-to: exit %d\n%s\n%s", uid, r.code, r.stdout, r.stderr)
			}
			copied := filepath.Join(dir, want)
			if st, err := os.Stat(copied); err != nil || st.Size() == 0 {
				t.Fatalf("copy: %v (stderr %s)", err, r.stderr)
			}
			if out, err := exec.Command(jdk.Bin("jfr"), "summary", copied).CombinedOutput(); err != nil {
				t.Errorf("jfr summary: %v\n%s", err, out)
			}
			if uid == 0 {
				continue
			}
			out := filepath.Join(dir, "heap.hprof")
			r = gjcmd(t, "-o", out, pid, "GC.heap_dump", "/tmp/h.hprof")
			if r.code != 0 {
				t.Fatalf("GC.heap_dump -o: %d %s", r.code, r.stderr)
			}
			if b, err := os.ReadFile(out); err != nil || !bytes.HasPrefix(b, []byte("JAVA PROFILE")) {
				t.Errorf("heap dump copy: %v", err)
			}
			// Never through a symlink, never over an existing file unless asked.
			link := filepath.Join(dir, "link.hprof")
			os.Symlink(filepath.Join(dir, "elsewhere"), link)
			if r := gjcmd(t, "-o", link, "--overwrite", pid, "GC.heap_dump", "/tmp/h2.hprof"); r.code == 0 {
				t.Error("copied through a symlink")
			}
			if _, err := os.Lstat(filepath.Join(dir, "elsewhere")); err == nil {
				t.Error("wrote through the symlink")
			}
			if r := gjcmd(t, "-o", out, pid, "GC.heap_dump", "/tmp/h3.hprof"); r.code == 0 || !strings.Contains(r.stderr, "exists") {
				t.Errorf("overwrote without --overwrite: %d %s", r.code, r.stderr)
			}
			// --copy-to into a directory that already has the name the JVM will write: refused before the
			// JVM dumps anything (the name comes from the command line), as -o is.
			if err := os.WriteFile(filepath.Join(dir, "h4.hprof"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if r := gjcmd(t, "--copy-to", dir, pid, "GC.heap_dump", "/tmp/h4.hprof"); r.code == 0 || !strings.Contains(r.stderr, "exists") {
				t.Errorf("--copy-to over an existing name: %d %s", r.code, r.stderr)
			}
			if _, err := os.Lstat("/proc/" + pid + "/root/tmp/h4.hprof"); err == nil {
				t.Error("--copy-to over an existing name: the JVM dumped the heap anyway")
			}
			// JFR.start writes its recording when it stops: nothing to copy now, refused before anything is
			// made in the JVM's /tmp (it copied gjcmd's own empty file before).
			if r := gjcmd(t, "--copy-to", dir, pid, "JFR.start", "name=s", "filename=/tmp/s.jfr"); r.code == 0 || !strings.Contains(r.stderr, "only when it stops") {
				t.Errorf("JFR.start --copy-to: %d %s", r.code, r.stderr)
			}
			if _, err := os.Lstat("/proc/" + pid + "/root/tmp/s.jfr"); err == nil {
				t.Error("JFR.start --copy-to: a file was made for the recording")
			}
			// JFR.dump without arguments behaves like jcmd's: dumps every recording and says where
			// (here into the cwd, which uid 65534 may not write: the JVM says so, exit 0 like jcmd).
			want2 := execTool(t, jdk.Bin("jcmd"), pid, "JFR.dump")
			r = gjcmd(t, pid, "JFR.dump")
			if r.code != want2.code || strings.Contains(want2.stdout, "Dumped recording") != strings.Contains(r.stdout, "Dumped recording") {
				t.Errorf("bare JFR.dump: gjcmd %d %q, jcmd %d %q", r.code, r.stdout, want2.code, want2.stdout)
			}
			// --copy-to the very directory the JVM writes, seen from the host through its root: the file
			// there is the JVM's (uid 65534's), not a copy of the caller's. Refused, saying so, and kept;
			// with --overwrite the caller's copy replaces it.
			own := "/proc/" + pid + "/root/tmp"
			r = gjcmd(t, "--copy-to", own, pid, "JFR.dump", "name=c", "filename=/tmp/own.jfr")
			if r.code != 1 || !strings.Contains(r.stderr, "it is the very file the JVM wrote, owned by uid 65534") {
				t.Errorf("JFR.dump --copy-to the JVM's own /tmp through its root: exit %d, want 1 and that it is the JVM's file\n%s", r.code, r.stderr)
			}
			var st unix.Stat_t
			if err := unix.Stat(filepath.Join(own, "own.jfr"), &st); err != nil || st.Size == 0 || st.Uid != 65534 {
				t.Errorf("own.jfr after --copy-to its own directory: %v, uid %d, %d bytes", err, st.Uid, st.Size)
			}
			r = gjcmd(t, "--copy-to", own, "--overwrite", pid, "JFR.dump", "name=c", "filename=/tmp/own.jfr")
			if err := unix.Stat(filepath.Join(own, "own.jfr"), &st); r.code != 0 || err != nil || st.Size == 0 || st.Uid != 0 {
				t.Errorf("JFR.dump --copy-to its own /tmp --overwrite: exit %d, %v, uid %d\n%s", r.code, err, st.Uid, r.stderr)
			}
		}
	})
}

// TestLeakCLI: the issue's own command line on a leaking workload: the dump carries reference chains
// from GC roots to the leaked objects (read with the JDK's jfr tool).
func TestLeakCLI(t *testing.T) {
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		t.Parallel() // two JDKs at a time: what this checks does not depend on the machine's load
		j := testutil.StartJVM(t, jdk, testutil.JVMOptions{Main: "Leak", JVMArgs: []string{"-Xmx64m", "-XX:StartFlightRecording=settings=profile,name=leak"}})
		pid := strconv.Itoa(j.PID)
		// Chains appear once leaked items were sampled and are still alive: dump until one shows.
		x := filepath.Join(t.TempDir(), "x.jfr")
		deadline := time.Now().Add(90 * time.Second)
		for attempt := 1; ; attempt++ {
			r := gjcmd(t, pid, "JFR.dump", "path-to-gc-roots=true", "filename="+x)
			if r.code != 0 {
				t.Fatalf("JFR.dump: %d %s %s", r.code, r.stdout, r.stderr)
			}
			out, err := exec.Command(jdk.Bin("jfr"), "print", "--events", "jdk.OldObjectSample", x).CombinedOutput()
			if err != nil {
				t.Fatalf("jfr print: %v", err)
			}
			if testutil.LeakChainInPrint(jdk.Feature, out) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("no reference chain from a GC root to the leak in %d dumps; the last has %d bytes of jfr print output", attempt, len(out))
			}
			time.Sleep(time.Second) // poll interval: the JVM samples at its own pace
		}
	})
}

// TestDebuggingCLI: JDK 17 reports the port the JDWP agent really listens on; JDK 24+ say that
// on-demand debugging is gone.
func TestDebuggingCLI(t *testing.T) {
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		if jdk.Feature >= 24 {
			j := testutil.StartJVM(t, jdk, testutil.JVMOptions{})
			r := gjcmd(t, strconv.Itoa(j.PID), "VM.start_java_debugging")
			if r.code != 1 || !strings.Contains(r.stderr, "removed in JDK 24") {
				t.Errorf("JDK %d: exit %d %q", jdk.Feature, r.code, r.stderr)
			}
			return
		}
		j := testutil.StartJVM(t, jdk, testutil.JVMOptions{JVMArgs: []string{
			"-agentlib:jdwp=transport=dt_socket,server=y,suspend=n,onjcmd=y,address=127.0.0.1:0"}})
		r := gjcmd(t, strconv.Itoa(j.PID), "VM.start_java_debugging")
		m := regexp.MustCompile(`JDWP is listening on (127\.0\.0\.1:\d+)`).FindStringSubmatch(r.stderr)
		if r.code != 0 || m == nil || !strings.Contains(r.stdout, "Debugging has been started.") {
			t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		c, err := net.DialTimeout("tcp", m[1], 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		c.Write([]byte("JDWP-Handshake"))
		buf := make([]byte, 14)
		if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "JDWP-Handshake" {
			t.Errorf("handshake: %q %v", buf, err)
		}
		// Again: the JVM's own answer, as jcmd prints it ("Debugging is already active."), not a
		// made-up one.
		want := execTool(t, jdk.Bin("jcmd"), strconv.Itoa(j.PID), "VM.start_java_debugging")
		r = gjcmd(t, strconv.Itoa(j.PID), "VM.start_java_debugging")
		if r.code != 0 || want.code != 0 || r.stdout != want.stdout || !strings.Contains(r.stdout, "already active") {
			t.Errorf("second call: gjcmd %d %q, jcmd %d %q", r.code, r.stdout, want.code, want.stdout)
		}
	})
}

// TestJFRFilesAsJcmd: the files JFR commands have the JVM write in /tmp (where gjcmd makes them first,
// see jcmd.PrepareWrites) come out as jcmd's do: with the mode the JVM's umask gives (not a fixed 0644
// that every user could read), and not at all when the command fails. A user's own file at the name
// survives a failed dump. JFR.stop --copy-to copies the recording where the JVM says which file it
// wrote, and where it does not (JDK 17 without filename=) is refused before the recording is stopped.
func TestJFRFilesAsJcmd(t *testing.T) {
	testutil.MustHaveRoot(t)
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		t.Parallel() // two JDKs at a time: nothing here is timed
		j := testutil.StartJVM(t, jdk, testutil.JVMOptions{Umask: "027"})
		pid := strconv.Itoa(j.PID)
		tmp := func(name string) string {
			p := "/tmp/jvmkit-" + t.Name()[strings.LastIndexByte(t.Name(), '/')+1:] + "-" + pid + "-" + name
			t.Cleanup(func() { os.Remove(p) })
			return p
		}
		if r := gjcmd(t, pid, "JFR.start", "name=r"); r.code != 0 {
			t.Fatalf("JFR.start: %d %s", r.code, r.stderr)
		}
		mine, theirs := tmp("gjcmd.jfr"), tmp("jcmd.jfr")
		r := gjcmd(t, pid, "JFR.dump", "name=r", "filename="+mine)
		want := execTool(t, jdk.Bin("jcmd"), pid, "JFR.dump", "name=r", "filename="+theirs)
		var st, wst unix.Stat_t
		if r.code != 0 || want.code != 0 || unix.Stat(mine, &st) != nil || unix.Stat(theirs, &wst) != nil {
			t.Fatalf("JFR.dump: gjcmd %d %s, jcmd %d %s", r.code, r.stderr, want.code, want.stderr)
		}
		if st.Mode&0o7777 != wst.Mode&0o7777 || st.Mode&0o777 != 0o640 || st.Size == 0 {
			t.Errorf("JFR.dump by a JVM with umask 027: gjcmd's file %o, jcmd's %o; want both 640", st.Mode&0o7777, wst.Mode&0o7777)
		}

		// A failed dump leaves no file, as jcmd's does; a file that was there stays as it was.
		for _, tool := range []string{"gjcmd", "jcmd"} {
			name := tmp("failed-" + tool + ".jfr")
			var code int
			if tool == "gjcmd" {
				code = gjcmd(t, pid, "JFR.dump", "name=nope", "filename="+name).code
			} else {
				code = execTool(t, jdk.Bin("jcmd"), pid, "JFR.dump", "name=nope", "filename="+name).code
			}
			if _, err := os.Lstat(name); err == nil {
				t.Errorf("%s: a failed JFR.dump (exit %d) left %s", tool, code, name)
			}
		}
		kept := tmp("kept.jfr")
		if err := os.WriteFile(kept, []byte("an older recording"), 0o600); err != nil {
			t.Fatal(err)
		}
		gjcmd(t, pid, "JFR.dump", "name=nope", "filename="+kept)
		if b, err := os.ReadFile(kept); err != nil || string(b) != "an older recording" {
			t.Errorf("a failed JFR.dump over the user's own file: %q, %v; want it as it was", b, err)
		}

		// JFR.stop --copy-to without filename=: the recording goes to JFR.start's file.
		dest, dir := tmp("stopped.jfr"), t.TempDir()
		if r := gjcmd(t, pid, "JFR.start", "name=s", "filename="+dest); r.code != 0 {
			t.Fatalf("JFR.start filename=: %d %s", r.code, r.stderr)
		}
		r = gjcmd(t, "--copy-to", dir, pid, "JFR.stop", "name=s")
		if jdk.Feature < 21 {
			check := gjcmd(t, pid, "JFR.check", "name=s")
			if r.code != 1 || !strings.Contains(r.stderr, "add filename=") || !strings.Contains(check.stdout, "running") {
				t.Errorf("JDK %d JFR.stop --copy-to without filename=: exit %d %s; JFR.check: %s", jdk.Feature, r.code, r.stderr, check.stdout)
			}
			r = gjcmd(t, "--copy-to", dir, pid, "JFR.stop", "name=s", "filename="+dest)
		}
		if st, err := os.Stat(filepath.Join(dir, filepath.Base(dest))); r.code != 0 || err != nil || st.Size() == 0 {
			t.Errorf("JFR.stop --copy-to: exit %d, %v\n%s", r.code, err, r.stderr)
		}

		// -o for a command that writes no file is refused, not ignored; -o at a symbolic link is refused
		// as a planted one is (exit status 4).
		if r := gjcmd(t, "-o", filepath.Join(dir, "h.txt"), pid, "GC.class_histogram"); r.code != 1 || !strings.Contains(r.stderr, "writes no file") {
			t.Errorf("-o with GC.class_histogram: exit %d %s", r.code, r.stderr)
		}
		link := filepath.Join(dir, "link.jfr")
		if err := os.Symlink(filepath.Join(dir, "elsewhere"), link); err != nil {
			t.Fatal(err)
		}
		if r := gjcmd(t, "-o", link, pid, "JFR.dump", "name=r", "filename="+tmp("o.jfr")); r.code != 4 || !strings.Contains(r.stderr, "symbolic link") {
			t.Errorf("-o at a symbolic link: exit %d %s", r.code, r.stderr)
		}
	})
}

// TestCopyToTheJVMsFile: --copy-to a directory where the JVM itself writes the file: the copy is the
// file, and running the command again is no "file exists" refusal (the check before sending knows the
// file in the way is the JVM's own).
func TestCopyToTheJVMsFile(t *testing.T) {
	testutil.MustHaveRoot(t)
	jdk := testutil.JDK17(t)
	j := testutil.StartJVM(t, jdk, testutil.JVMOptions{})
	pid := strconv.Itoa(j.PID)
	if r := gjcmd(t, pid, "JFR.start", "name=c"); r.code != 0 {
		t.Fatalf("JFR.start: %d %s", r.code, r.stderr)
	}
	dir := t.TempDir()
	for i := range 2 {
		r := gjcmd(t, "--copy-to", dir, pid, "JFR.dump", "name=c", "filename="+filepath.Join(dir, "rec.jfr"))
		if r.code != 0 {
			t.Fatalf("JFR.dump --copy-to the JVM's own directory, run %d: %d\n%s", i+1, r.code, r.stderr)
		}
	}
	if st, err := os.Stat(filepath.Join(dir, "rec.jfr")); err != nil || st.Size() == 0 {
		t.Errorf("rec.jfr: %v", err)
	}
}

// TestConcurrentSameFile: gjcmd runs that have one JVM write the same name at once, in a directory that
// everyone can write (as /tmp): each JFR.dump succeeds and the name holds a whole recording, as with
// the JDK's jcmd (each run's file made safe for the JVM must not replace another run's under it); of the
// heap dumps, which the JVM creates exclusively, one writes the file and the others get the JVM's "File
// exists". Nothing else is left in the directory.
func TestConcurrentSameFile(t *testing.T) {
	jdk := testutil.JDK17(t)
	j := testutil.StartJVM(t, jdk, testutil.JVMOptions{JVMArgs: []string{"-XX:StartFlightRecording=name=rec"}})
	pid := strconv.Itoa(j.PID)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	concurrently := func(n int, args ...string) []run {
		out := make([]run, n)
		var wg sync.WaitGroup
		for i := range out {
			wg.Go(func() { out[i] = gjcmd(t, args...) })
		}
		wg.Wait()
		return out
	}
	jfr := filepath.Join(dir, "same.jfr")
	for i, r := range concurrently(4, pid, "JFR.dump", "name=rec", "filename="+jfr) {
		if r.code != 0 || !strings.Contains(r.stdout, "Dumped recording") {
			t.Errorf("JFR.dump %d of 4: exit %d %q %q", i+1, r.code, r.stdout, r.stderr)
		}
	}
	if b, err := os.ReadFile(jfr); err != nil || !bytes.HasPrefix(b, []byte("FLR\x00")) {
		t.Errorf("%s after 4 concurrent dumps: %v, %d bytes, want a recording", jfr, err, len(b))
	}
	hprof := filepath.Join(dir, "same.hprof")
	created := 0
	for i, r := range concurrently(3, pid, "GC.heap_dump", hprof) {
		switch {
		case r.code == 0 && strings.Contains(r.stdout, "Heap dump file created"):
			created++
		case r.code == 0 && strings.Contains(r.stdout, "File exists"): // the JVM's answer, status 0 as with jcmd
		default:
			t.Errorf("GC.heap_dump %d of 3: exit %d %q %q", i+1, r.code, r.stdout, r.stderr)
		}
	}
	if fi, err := os.Stat(hprof); created != 1 || err != nil || fi.Size() == 0 {
		t.Errorf("3 concurrent heap dumps to one name: %d created it, %s: %v; want 1 and the dump there", created, hprof, err)
	}
	names, _ := os.ReadDir(dir)
	var left []string
	for _, e := range names {
		if e.Name() != "same.jfr" && e.Name() != "same.hprof" {
			left = append(left, e.Name())
		}
	}
	if len(left) > 0 {
		t.Errorf("left in %s: %v", dir, left)
	}
}
