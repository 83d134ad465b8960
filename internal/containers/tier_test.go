//go:build linux

package containers

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/internal/procfs"
	"github.com/jvmkit/jvmkit/internal/testutil"
	"github.com/jvmkit/jvmkit/jcmd"
	"github.com/jvmkit/jvmkit/perfmap"
)

func TestMain(m *testing.M) {
	// Three containers at a time (go test's default is GOMAXPROCS, two here): a container's commands
	// mostly wait on podman, runc and the JVM's start, and the tier used about half of two cores at two.
	// An explicit -test.parallel still wins.
	_ = flag.Set("test.parallel", "3")
	testutil.Main(m)
}

// tier is one JVM in a container and the means to question it.
type tier struct {
	kind testutil.ContainerKind
	jdk  testutil.JDK
	jvm  *testutil.JVM
	pid  string
	bin  map[string]string // gjcmd, gjmaps, jvmkit: the project's binaries
}

// run runs one of the project's binaries from the host and returns its stdout, stderr and exit status.
func (c *tier) run(t *testing.T, tool string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin[tool], args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	code := 0
	switch {
	case errors.As(err, &exitErr):
		code = exitErr.ExitCode()
	case err != nil:
		t.Fatalf("%s %q: %v", tool, args, err)
	}
	return stdout.String(), stderr.String(), code
}

// must runs a binary that must succeed and returns its stdout.
func (c *tier) must(t *testing.T, tool string, args ...string) string {
	t.Helper()
	out, errOut, code := c.run(t, tool, args...)
	if code != 0 {
		t.Fatalf("%s %s: exit %d\nstdout:\n%s\nstderr:\n%s", tool, strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// own runs the container's own JDK tool inside the container as the JVM's user (the oracle), and returns its
// output without jcmd's "<pid>:" first line.
func (c *tier) own(t *testing.T, tool string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := c.jvm.Command(ctx, filepath.Join(c.jdk.JavaHome(), "bin", tool), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("the container's %s %q: %v\n%s", tool, args, err, out)
	}
	return withoutPIDLine(string(out))
}

// withoutPIDLine drops the "<pid>:" line that jcmd and gjcmd print before a command's output.
func withoutPIDLine(out string) string {
	first, rest, ok := strings.Cut(out, "\n")
	if ok && strings.HasSuffix(first, ":") {
		if _, err := strconv.Atoi(strings.TrimSuffix(first, ":")); err == nil {
			return rest
		}
	}
	return out
}

// TestReadmeCommands runs every command of the README from the host against a JVM in each kind of container.
func TestReadmeCommands(t *testing.T) {
	bins := map[string]string{}
	for _, tool := range []string{"gjcmd", "gjmaps", "jvmkit"} {
		bins[tool] = testutil.BuildTool(t, "cmd/"+tool)
	}
	testutil.ForEachContainerJDK(t, func(t *testing.T, kind testutil.ContainerKind, jdk testutil.JDK) {
		t.Parallel() // two containers at a time: a podman container's commands mostly wait on podman
		jvm := testutil.StartJVM(t, jdk, testutil.JVMOptions{
			Container: kind, UID: 1000, GID: 1000, Main: "Demo", Args: []string{"30"},
			JVMArgs: []string{"-Xmx64m", "-Xlog:gc:file=/tmp/gc.log"},
		})
		c := &tier{kind: kind, jdk: jdk, jvm: jvm, pid: strconv.Itoa(jvm.PID), bin: bins}
		t.Cleanup(func() { c.run(t, "gjmaps", "-p", c.pid, "--clean") })

		t.Run("gjcmd-list", c.gjcmdList)
		t.Run("gjcmd-VM.version", func(t *testing.T) { c.sameAsJcmd(t, "VM.version") })
		t.Run("gjcmd-VM.flags", func(t *testing.T) { c.sameAsJcmd(t, "VM.flags", "-all") })
		t.Run("gjcmd-Thread.print", c.gjcmdThreads)
		t.Run("gjcmd-JFR", c.gjcmdJFR)
		t.Run("threads", c.threads)
		t.Run("flags", c.flags)
		t.Run("codecache", c.codecache)
		t.Run("vmstructs", c.vmstructs)
		for _, strategy := range []string{"vmstructs", "jcmd", "agent"} {
			t.Run("gjmaps-"+strategy, func(t *testing.T) { c.gjmaps(t, strategy) })
		}
		t.Run("gjmaps-jcmd-stale", c.gjmapsStale)
		t.Run("gjmaps-unfold", c.gjmapsUnfold)
		t.Run("java-flames", c.javaFlames)
		t.Run("gjcmd-VM.start_java_debugging", c.debugging)
		t.Run("profile", c.profile)
		t.Run("alloc-switch-flags", c.alloc)
		t.Run("gc", c.gc)
		t.Run("usdt-list", c.usdtList)
		t.Run("usdt-trace", c.usdtTrace)
		t.Run("jitlog-record", c.jitlog)
		if kind == testutil.Podman {
			t.Run("paused", c.paused) // last: it freezes the container for a while
		}
	})
}

// paused: a JVM whose podman container is paused (podman pause freezes its cgroup) can neither answer
// nor run. gjcmd says so at once (exit status 5, not its deadline's minute later), jvmkit gc that the JVM
// could not run while it traced; unpaused, both work again.
func (c *tier) paused(t *testing.T) {
	unpause := c.jvm.Pause(t)
	_, errOut, code := c.run(t, "gjcmd", c.pid, "VM.version")
	if code != 5 || !strings.Contains(errOut, "frozen by its cgroup's freezer (podman or docker pause)") {
		t.Errorf("gjcmd VM.version on a paused container's JVM: exit status %d, want 5 and that it is frozen\n%s", code, errOut)
	}
	// A command that does more than print is not even sent: queued, the JVM would dump its heap once
	// thawed, perhaps much later.
	_, errOut, code = c.run(t, "gjcmd", c.pid, "GC.heap_dump", "/tmp/paused.hprof")
	if code != 5 || !strings.Contains(errOut, "GC.heap_dump was not sent") {
		t.Errorf("gjcmd GC.heap_dump on a paused container's JVM: exit status %d, want 5 and that it was not sent\n%s", code, errOut)
	}
	_, errOut, code = c.run(t, "jvmkit", "gc", c.pid, "--duration", "1s")
	if code != 0 || !strings.Contains(errOut, "frozen by its cgroup's freezer (podman or docker pause)") || !strings.Contains(errOut, "could not run for about") {
		t.Errorf("jvmkit gc on a paused container's JVM: exit status %d, want 0 and that it could not run\n%s", code, errOut)
	}
	unpause()
	c.must(t, "gjcmd", c.pid, "VM.version")
	if _, err := os.Lstat(c.jvm.HostPath("/tmp/paused.hprof")); err == nil {
		t.Error("the heap dump asked for while the container was paused was made once it was thawed")
	}
	if _, errOut, _ := c.run(t, "jvmkit", "gc", c.pid, "--duration", "500ms"); strings.Contains(errOut, "could not run") {
		t.Errorf("jvmkit gc once the container is unpaused still says the JVM could not run:\n%s", errOut)
	}
}

// gjcmdList: gjcmd -l finds the JVM by its host pid, with its pid and user inside; the container's own jcmd -l
// sees it as pid 1.
func (c *tier) gjcmdList(t *testing.T) {
	var list struct {
		Schema string `json:"schema"`
		JVMs   []struct {
			PID       int    `json:"pid"`
			NSPID     int    `json:"nspid"`
			UID       int    `json:"uid"`
			MainClass string `json:"main_class"`
			Container bool   `json:"container"`
		} `json:"jvms"`
	}
	out := c.must(t, "gjcmd", "-l", "--json")
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("gjcmd -l --json: %v\n%s", err, out)
	}
	found := false
	for _, j := range list.JVMs {
		if j.PID != c.jvm.PID {
			continue
		}
		found = true
		if j.NSPID != 1 || j.UID != 1000 || j.MainClass != "Demo" || !j.Container {
			t.Errorf("gjcmd -l: %+v, want nspid 1, uid 1000, main class Demo, in a container", j)
		}
	}
	if !found {
		t.Errorf("gjcmd -l does not list %d:\n%s", c.jvm.PID, out)
	}
	if own := c.own(t, "jcmd", "-l"); !regexp.MustCompile(`(?m)^1 Demo( |$)`).MatchString(own) {
		t.Errorf("the container's jcmd -l does not list 1 Demo:\n%s", own)
	}
}

// sameAsJcmd: gjcmd from the host prints what the container's jcmd prints.
func (c *tier) sameAsJcmd(t *testing.T, command ...string) {
	// Taken at different times: the JVM may change in between (C2 sets LoopMaxUnroll when it starts,
	// lazily: 16 then 32 once on JDK 21), so the comparison is tried again before it counts.
	var got, want string
	for range 3 {
		got = withoutPIDLine(c.must(t, "gjcmd", append([]string{c.pid}, command...)...))
		if want = c.own(t, "jcmd", append([]string{"1"}, command...)...); got == want {
			break
		}
	}
	if got != want {
		t.Errorf("gjcmd %s %s differs from the container's jcmd:\n--- gjcmd\n%s\n--- jcmd\n%s", c.pid, command, got, want)
	}
}

// javaThreads returns the names of the Java threads (those with a #number) of a thread dump.
func javaThreads(t *testing.T, dump string) []string {
	t.Helper()
	td, err := jcmd.ParseThreadDump(dump)
	if err != nil {
		t.Fatalf("parse thread dump: %v\n%s", err, dump)
	}
	var names []string
	for _, th := range td.Threads {
		if th.Number >= 0 {
			names = append(names, th.Name)
		}
	}
	slices.Sort(names)
	return names
}

// eventually retries a comparison of two snapshots taken at different times (threads come and go: compiler
// threads are started and stopped on demand) until they agree, three times at most, and returns the last.
func eventually(f func() (got, want []string)) (got, want []string) {
	for range 3 {
		if got, want = f(); slices.Equal(got, want) {
			break
		}
	}
	return got, want
}

func (c *tier) gjcmdThreads(t *testing.T) {
	got, want := eventually(func() ([]string, []string) {
		return javaThreads(t, withoutPIDLine(c.must(t, "gjcmd", c.pid, "Thread.print"))),
			javaThreads(t, c.own(t, "jcmd", "1", "Thread.print"))
	})
	if !slices.Equal(got, want) || !slices.Contains(got, "demo-blocked") {
		t.Errorf("gjcmd Thread.print threads %q, the container's jcmd %q", got, want)
	}
}

// gjcmdJFR: a recording started, dumped by the JVM into its working directory in the container, copied out by
// gjcmd, readable by the JDK's jfr.
func (c *tier) gjcmdJFR(t *testing.T) {
	c.must(t, "gjcmd", c.pid, "JFR.start", "name=tier", "settings=profile")
	t.Cleanup(func() { c.run(t, "gjcmd", c.pid, "JFR.stop", "name=tier") })
	dst := t.TempDir()
	c.must(t, "gjcmd", "--copy-to", dst, c.pid, "JFR.dump", "name=tier", "filename=tier.jfr")
	copied := filepath.Join(dst, "tier.jfr")
	inContainer := filepath.Join(c.jvm.Dir, "tier.jfr")
	a, errA := os.Stat(copied)
	b, errB := os.Stat(inContainer)
	if errA != nil || errB != nil || a.Size() != b.Size() || a.Size() == 0 {
		t.Fatalf("copied %v (%v), written by the JVM %v (%v): want the same non-empty file", a, errA, b, errB)
	}
	out, err := exec.Command(c.jdk.Bin("jfr"), "summary", copied).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "jdk.ExecutionSample") {
		t.Errorf("jfr summary of the copy: %v\n%s", err, out)
	}
}

// threads: jvmkit threads names the threads that the container's jcmd Thread.print shows.
func (c *tier) threads(t *testing.T) {
	got, want := eventually(func() ([]string, []string) {
		var res struct {
			Data struct {
				Threads []struct {
					Name string `json:"name"`
				} `json:"threads"`
			} `json:"data"`
		}
		out := c.must(t, "jvmkit", "threads", c.pid, "--json")
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("jvmkit threads --json: %v\n%s", err, out)
		}
		var names []string
		for _, th := range res.Data.Threads {
			names = append(names, th.Name)
		}
		slices.Sort(names)
		return names, javaThreads(t, c.own(t, "jcmd", "1", "Thread.print"))
	})
	if !slices.Equal(got, want) {
		t.Errorf("jvmkit threads %q, the container's jcmd Thread.print %q", got, want)
	}
}

// flags: jvmkit flags prints the lines of the container's jcmd VM.flags -all, line for line. jvmkit also
// prints the locked diagnostic, experimental and develop flags, which jcmd leaves out: those are skipped.
func (c *tier) flags(t *testing.T) {
	want := flagLines(c.own(t, "jcmd", "1", "VM.flags", "-all"))
	names := map[string]bool{}
	for _, l := range want {
		names[flagName(l)] = true
	}
	got := slices.DeleteFunc(flagLines(c.must(t, "jvmkit", "flags", c.pid)), func(l string) bool { return !names[flagName(l)] })
	if len(got) != len(want) {
		t.Errorf("jvmkit flags prints %d of the %d lines of jcmd VM.flags -all", len(got), len(want))
	}
	bad := 0
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			if bad++; bad <= 10 {
				t.Errorf("line %d:\n  jvmkit: %q\n  jcmd:   %q", i+1, got[i], want[i])
			}
		}
	}
	if bad > 10 {
		t.Errorf("... %d lines differ", bad)
	}
}

// flagLines returns the flag lines of VM.flags -all output.
func flagLines(out string) []string {
	var lines []string
	for l := range strings.Lines(out) {
		if l = strings.TrimRight(l, "\n"); strings.TrimSpace(l) != "" && strings.TrimSpace(l) != "[Global flags]" {
			lines = append(lines, l)
		}
	}
	return lines
}

// flagName is the flag a line of VM.flags -all is about: "type Name = value {kinds} {origin}", or for the
// continuation of a multi-line ccstrlist "Name += value".
func flagName(line string) string {
	f := strings.Fields(line)
	switch {
	case len(f) > 1 && strings.HasPrefix(f[1], "+="):
		return f[0]
	case len(f) > 1:
		return f[1]
	}
	return ""
}

func (c *tier) codecache(t *testing.T) {
	if out := c.must(t, "jvmkit", "codecache", c.pid); !strings.Contains(out, "Demo") {
		t.Errorf("jvmkit codecache names no method of Demo:\n%.2000s", out)
	}
}

func (c *tier) vmstructs(t *testing.T) {
	if out := c.must(t, "jvmkit", "vmstructs", c.pid); !strings.Contains(out, "JavaThread") {
		t.Errorf("jvmkit vmstructs has no JavaThread:\n%.2000s", out)
	}
}

// perfmapOracle asks the JVM, through the container's own jcmd, for Compiler.perfmap and returns the map it
// wrote into the container's /tmp; the file is removed again, so that the next one is the JVM's own too.
func (c *tier) perfmapOracle(t *testing.T) []perfmap.Entry {
	t.Helper()
	file := c.jvm.HostPath("/tmp/perf-1.map")
	_ = os.Remove(file)
	c.own(t, "jcmd", "1", "Compiler.perfmap")
	entries := readMap(t, file)
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	return entries
}

func readMap(t *testing.T, file string) []perfmap.Entry {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	entries, err := perfmap.Parse(bufio.NewReader(f))
	if err != nil || len(entries) == 0 {
		t.Fatalf("perf map %s: %d entries, %v", file, len(entries), err)
	}
	return entries
}

type span struct{ start, size uint64 }

// gjmaps: each strategy writes the map into the container's /tmp and the host's, and the map agrees with the
// JVM's own Compiler.perfmap taken just before: the same name for >= 99% of the ranges they share, and >= 99%
// of Compiler.perfmap's compiled methods (nmethods) present.
func (c *tier) gjmaps(t *testing.T, strategy string) {
	oracle := c.perfmapOracle(t)
	var res struct {
		JVMs []struct {
			Strategy string   `json:"strategy"`
			Entries  int      `json:"entries"`
			Paths    []string `json:"paths"`
			Error    string   `json:"error"`
		} `json:"jvms"`
	}
	out := c.must(t, "gjmaps", "-p", c.pid, "--strategy", strategy, "--json")
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.JVMs) != 1 {
		t.Fatalf("gjmaps --json: %v\n%s", err, out)
	}
	r := res.JVMs[0]
	if r.Strategy != strategy || r.Entries == 0 {
		t.Errorf("gjmaps: %+v", r)
	}
	host := "/tmp/perf-" + c.pid + ".map"
	if !slices.Contains(r.Paths, host) {
		t.Errorf("gjmaps wrote %q, not the host's %s", r.Paths, host)
	}
	for _, file := range []string{host, c.jvm.HostPath("/tmp/perf-1.map")} {
		got := readMap(t, file)
		names := map[span]string{}
		for _, e := range got {
			names[span{e.Start, e.Size}] = e.Name
		}
		shared, agree, nmethods, present := 0, 0, 0, 0
		for _, e := range oracle {
			name, ok := names[span{e.Start, e.Size}]
			if ok {
				shared++
				if name == e.Name || strategy == "agent" { // the agent names methods perf-map-agent's way
					agree++
				}
			}
			if strings.HasSuffix(e.Name, ")") && !strings.Contains(e.Name, " (") {
				nmethods++
				if ok {
					present++
				}
			}
		}
		t.Logf("%s: %d entries; Compiler.perfmap %d, shared ranges %d, same name %d, nmethods %d of %d",
			file, len(got), len(oracle), shared, agree, present, nmethods)
		if float64(agree) < 0.99*float64(shared) || nmethods == 0 || float64(present) < 0.99*float64(nmethods) {
			t.Errorf("%s does not agree with Compiler.perfmap: names %d of %d shared ranges, nmethods %d of %d",
				file, agree, shared, present, nmethods)
		}
	}
	// The container's copy goes, so that the JVM can write the next Compiler.perfmap itself.
	c.must(t, "gjmaps", "-p", c.pid, "--clean")
}

// gjmapsStale: a map left in the container's /tmp by an earlier root-owned write (the JVM, uid 1000, cannot
// rewrite it) is never reported as the jcmd strategy's result.
func (c *tier) gjmapsStale(t *testing.T) {
	file := c.jvm.HostPath("/tmp/perf-1.map")
	if err := os.WriteFile(file, []byte("1000 10 jvmkit-stale\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(file) })
	out, errOut, code := c.run(t, "gjmaps", "-p", c.pid, "--strategy", "jcmd")
	if code == 0 {
		if data, err := os.ReadFile(file); err != nil || bytes.Contains(data, []byte("jvmkit-stale")) {
			t.Errorf("gjmaps --strategy jcmd succeeded (%s) but the container's map is the stale one (%v)", out, err)
		}
		if data, err := os.ReadFile("/tmp/perf-" + c.pid + ".map"); err != nil || bytes.Contains(data, []byte("jvmkit-stale")) {
			t.Errorf("gjmaps --strategy jcmd succeeded but the host's map is the stale one (%v)", err)
		}
	} else if !strings.Contains(errOut, "perf-1.map") {
		t.Errorf("gjmaps --strategy jcmd failed (exit %d) without naming the map it could not have written:\n%s", code, errOut)
	}
}

// reasonFrame is a frame that names why a stack could not be walked to its thread's root: "[native-no-anchor]".
var reasonFrame = regexp.MustCompile(`^\[[a-z0-9-]+\]$`)

// profile: samples of the container's JVM walk through Demo's code, and >= 99.5% reach their thread's root.
func (c *tier) profile(t *testing.T) {
	out := c.must(t, "jvmkit", "profile", c.pid, "-d", "3s", "--format", "folded")
	total, broken, demo := 0, 0, 0
	for line := range strings.Lines(out) {
		stack, count, ok := cutLast(strings.TrimSpace(line), " ")
		n, err := strconv.Atoi(count)
		if !ok || err != nil {
			continue
		}
		total += n
		frames := strings.Split(stack, ";")
		if slices.ContainsFunc(frames, reasonFrame.MatchString) {
			broken += n
		}
		if strings.Contains(stack, "Demo") {
			demo += n
		}
	}
	t.Logf("%d samples, %d with Demo's frames, %d not walked to the root", total, demo, broken)
	if total == 0 || demo == 0 {
		t.Fatalf("profile: %d samples, %d in Demo's code:\n%.2000s", total, demo, out)
	}
	if reach := 1 - float64(broken)/float64(total); reach < 0.995 {
		t.Errorf("root reach %.1f%% (%d of %d samples broken), want >= 99.5%%", 100*reach, broken, total)
	}
}

func cutLast(s, sep string) (before, after string, ok bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

// alloc: a sample of allocations by class, and DTraceAllocProbes is false again afterwards, as the
// container's jcmd sees it.
func (c *tier) alloc(t *testing.T) {
	out := c.must(t, "jvmkit", "alloc", c.pid, "--switch-flags", "--duration", "3s")
	if !strings.Contains(out, "byte[]") && !strings.Contains(out, "java.lang.String") {
		t.Errorf("jvmkit alloc names neither byte[] nor String:\n%.2000s", out)
	}
	flags, err := jcmd.ParseFlags(c.own(t, "jcmd", "1", "VM.flags", "-all"))
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(flags, func(f jcmd.Flag) bool { return f.Name == "DTraceAllocProbes" })
	if i < 0 || flags[i].Value != "false" {
		t.Errorf("DTraceAllocProbes after alloc --switch-flags: %+v, want false", flags[max(i, 0)])
	}
}

// gcPause is a pause line of -Xlog:gc: "[1.234s][info][gc] GC(7) Pause Young (Normal) (G1 Evacuation Pause) ...".
var gcPause = regexp.MustCompile(`\bGC\(\d+\) Pause `)

// loggedPauses counts the pauses the JVM logged so far (-Xlog:gc into the container's /tmp/gc.log).
func (c *tier) loggedPauses(t *testing.T) int {
	t.Helper()
	data, err := os.ReadFile(c.jvm.HostPath("/tmp/gc.log"))
	if err != nil {
		t.Fatal(err)
	}
	return len(gcPause.FindAll(data, -1))
}

// gc: the pauses jvmkit gc saw are among those the JVM logged (-Xlog:gc) while it traced.
func (c *tier) gc(t *testing.T) {
	pauses := func() int { return c.loggedPauses(t) }
	before := pauses()
	var res struct {
		Data struct {
			Pauses []json.RawMessage `json:"pauses"`
		} `json:"data"`
	}
	out := c.must(t, "jvmkit", "gc", c.pid, "--duration", "4s", "--json")
	after := pauses()
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("jvmkit gc --json: %v\n%.2000s", err, out)
	}
	got := len(res.Data.Pauses)
	t.Logf("jvmkit gc: %d pauses; -Xlog:gc: %d while it ran", got, after-before)
	if got == 0 || got > after-before {
		t.Errorf("jvmkit gc saw %d pauses; the JVM logged %d in that time", got, after-before)
	}
}

// usdtList: the hotspot probes of the JVM's libjvm.so, as readelf -n lists its notes.
func (c *tier) usdtList(t *testing.T) {
	readelf := testutil.MustHaveTool(t, "readelf")
	notes, err := exec.Command(readelf, "-n", filepath.Join(c.jdk.Home, "lib/server/libjvm.so")).Output()
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Count(notes, []byte("Provider: hotspot\n"))
	out := c.must(t, "jvmkit", "usdt", "list", c.pid, "hotspot:*")
	got := 0
	for line := range strings.Lines(out) {
		if strings.HasPrefix(line, "hotspot:") {
			got++
		}
	}
	if got != want || want == 0 {
		t.Errorf("jvmkit usdt list: %d hotspot probe sites, readelf -n: %d", got, want)
	}
}

// jitlog: a JIT log recorded from the container's JVM names Demo's compiled methods.
func (c *tier) jitlog(t *testing.T) {
	log := filepath.Join(t.TempDir(), "jit.log")
	c.must(t, "jvmkit", "jitlog", "record", "-o", log, "--duration", "2s", c.pid)
	if out := c.must(t, "jvmkit", "jitlog", "dump", log); !strings.Contains(out, "Demo") {
		t.Errorf("the JIT log names no method of Demo:\n%.2000s", out)
	}
}

// gjmapsUnfold: gjmaps --unfold splits the JVM's compiled methods by inlining chain; every range lies inside an
// nmethod of Compiler.perfmap (the container's own JVM) and some are named by a chain "outer->inner".
func (c *tier) gjmapsUnfold(t *testing.T) {
	oracle := c.perfmapOracle(t)
	c.must(t, "gjmaps", "-p", c.pid, "--strategy", "vmstructs", "--unfold")
	t.Cleanup(func() { c.run(t, "gjmaps", "-p", c.pid, "--clean") })
	var nmethods []perfmap.Entry
	for _, e := range oracle {
		if strings.HasSuffix(e.Name, ")") && !strings.Contains(e.Name, " (") {
			nmethods = append(nmethods, e)
		}
	}
	within := func(e perfmap.Entry) bool {
		return slices.ContainsFunc(nmethods, func(n perfmap.Entry) bool { return e.Start >= n.Start && e.Start+e.Size <= n.Start+n.Size })
	}
	for _, file := range []string{"/tmp/perf-" + c.pid + ".map", c.jvm.HostPath("/tmp/perf-1.map")} {
		chains, inside, outside := 0, 0, 0
		for _, e := range readMap(t, file) {
			if !strings.Contains(e.Name, "->") {
				continue
			}
			chains++
			if within(e) {
				inside++
			} else if outside++; outside <= 5 {
				t.Logf("%s: %#x+%#x %s is in no nmethod of Compiler.perfmap", file, e.Start, e.Size, e.Name)
			}
		}
		t.Logf("%s: %d inlining-chain ranges, %d inside Compiler.perfmap's %d nmethods", file, chains, inside, len(nmethods))
		// A method compiled or freed between Compiler.perfmap and gjmaps: a few ranges may differ.
		if chains == 0 || float64(inside) < 0.99*float64(chains) {
			t.Errorf("%s: %d inlining-chain ranges, %d inside an nmethod of Compiler.perfmap", file, chains, inside)
		}
	}
}

// javaFlames: scripts/java-flames from the host (perf record, gjmaps --annotate, perf script, fold, flame
// graph) names the container's JIT frames through the host's perf map.
func (c *tier) javaFlames(t *testing.T) {
	testutil.MustHaveTool(t, "perf")
	bin := t.TempDir()
	for _, tool := range []string{"gjmaps", "jvmkit"} {
		if err := os.Symlink(c.bin[tool], filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "flames")
	cmd := exec.Command(filepath.Join(repoRoot(t), "scripts", "java-flames"), "-p", c.pid, "-d", "3", "-F", "199", "-o", out)
	cmd.Env = append(os.Environ(), "JVMKIT_BIN="+bin)
	t.Cleanup(func() { c.run(t, "gjmaps", "-p", c.pid, "--clean") })
	if res, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("java-flames: %v\n%s", err, res)
	}
	folded, err := os.ReadFile(filepath.Join(out, "perf.folded"))
	if err != nil {
		t.Fatal(err)
	}
	var total, java int
	for line := range strings.Lines(string(folded)) {
		stack, count, ok := cutLast(strings.TrimSpace(line), " ")
		n, err := strconv.Atoi(count)
		if !ok || err != nil {
			t.Fatalf("bad folded line %q", line)
		}
		total += n
		if strings.Contains(stack, "_[j]") {
			java += n
		}
	}
	t.Logf("java-flames: %d samples, %d with a JIT frame named from the perf map", total, java)
	if total == 0 || java == 0 {
		t.Errorf("java-flames: %d samples, %d with a named JIT frame", total, java)
	}
	if _, err := os.Stat(filepath.Join(out, "flame.svg")); err != nil {
		t.Error(err)
	}
}

// repoRoot is the repository's top directory (the test runs in internal/containers).
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// debugging: gjcmd VM.start_java_debugging on a JVM in the container started with JDWP's onjcmd=y (JDK 23 and
// older) starts the agent, and the port it names is the one the JVM listens on, as the kernel's socket table
// of the container's network namespace shows it; on JDK 24 and later gjcmd says that onjcmd was removed.
func (c *tier) debugging(t *testing.T) {
	if c.jdk.Feature >= 24 {
		_, errOut, code := c.run(t, "gjcmd", c.pid, "VM.start_java_debugging")
		if code == 0 || !strings.Contains(errOut, "JDK 24") {
			t.Errorf("gjcmd VM.start_java_debugging on JDK %d: exit %d, %s", c.jdk.Feature, code, errOut)
		}
		return
	}
	jvm := testutil.StartJVM(t, c.jdk, testutil.JVMOptions{Container: c.kind, UID: 1000, GID: 1000,
		JVMArgs: []string{"-agentlib:jdwp=transport=dt_socket,server=y,suspend=n,onjcmd=y,address=127.0.0.1:0"}})
	pid := strconv.Itoa(jvm.PID)
	if before, err := procfs.Default.ListeningTCP(jvm.PID); err != nil || len(before) != 0 {
		t.Fatalf("listening before VM.start_java_debugging: %v %v", before, err)
	}
	_, errOut, code := c.run(t, "gjcmd", pid, "VM.start_java_debugging")
	m := regexp.MustCompile(`JDWP is listening on 127\.0\.0\.1:(\d+)`).FindStringSubmatch(errOut)
	if code != 0 || m == nil {
		t.Fatalf("gjcmd VM.start_java_debugging: exit %d\n%s", code, errOut)
	}
	after, err := procfs.Default.ListeningTCP(jvm.PID)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != 1 || strconv.Itoa(int(after[0].Port)) != m[1] {
		t.Errorf("gjcmd says JDWP listens on port %s; the JVM listens on %v", m[1], after)
	}
}

// usdtTrace: jvmkit usdt trace prints the JVM's gc__begin firings while a collection runs: at least one, and no
// more than the JVM's -Xlog:gc logs pauses meanwhile.
func (c *tier) usdtTrace(t *testing.T) {
	logged := func() int { return c.loggedPauses(t) }
	tracer := testutil.StartBackground(t, unix.SIGINT, c.bin["jvmkit"], "usdt", "trace", c.pid, "hotspot:gc__begin", "--duration", "20s")
	tracer.WaitFor(t, "tracing", time.Minute)
	before := logged()
	c.must(t, "gjcmd", c.pid, "GC.run")
	deadline := time.Now().Add(10 * time.Second)
	for logged() == before && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond) // polls the JVM's log for the collection's line
	}
	tracer.Stop()
	<-tracer.Done()
	got := 0
	for line := range strings.Lines(tracer.Stdout.String()) {
		if strings.Contains(line, `"gc__begin"`) {
			got++
		}
	}
	// The log is read after the trace ended (a pause logged then has no firing), and gc__begin fires once
	// per safepoint that collects, where the log may show two pauses (Parallel's young+full pair).
	if n := logged() - before; got == 0 || got > n {
		t.Errorf("jvmkit usdt trace: %d gc__begin firings; the JVM logged %d pauses while it traced\n%s\n%s",
			got, n, tracer.Stdout.String(), tracer.Stderr.String())
	}
}
