package perfmap_test

import (
	"cmp"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/attach"
	"github.com/jvmkit/jvmkit/internal/testutil"
	"github.com/jvmkit/jvmkit/perfmap"
)

func warmBusy(t *testing.T, jdk testutil.JDK, opts testutil.JVMOptions) *testutil.JVM {
	t.Helper()
	opts.Main = "Busy"
	opts.JVMArgs = append(slices.Clone(opts.JVMArgs), testutil.PrintCompilation)
	j := testutil.StartJVM(t, jdk, opts)
	j.WaitCompiled(t, "Busy::spin", 4, time.Minute)
	return j
}

func cleanMaps(t *testing.T, pid int) {
	t.Cleanup(func() {
		if _, err := perfmap.Clean(context.Background(), pid); err != nil {
			t.Logf("clean: %v", err)
		}
	})
}

type span struct{ start, size uint64 }

func TestStrategiesAgree(t *testing.T) {
	testutil.MustHaveRoot(t)
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		j := warmBusy(t, jdk, testutil.JVMOptions{})
		ctx := context.Background()
		if jdk.Feature < 17 {
			// No Compiler.perfmap before JDK 17: the jcmd strategy must say so, not write a map.
			if _, err := perfmap.FromJcmd(ctx, j.PID); err == nil {
				t.Errorf("%s: the jcmd strategy succeeded without Compiler.perfmap", jdk)
			}
			return
		}
		cleanMaps(t, j.PID)
		vm1, err := perfmap.FromVMStructs(ctx, j.PID, false)
		if err != nil {
			t.Fatal(err)
		}
		jc, err := perfmap.FromJcmd(ctx, j.PID)
		if err != nil {
			t.Fatal(err)
		}
		ag, err := perfmap.FromAgent(ctx, j.PID, perfmap.AgentOptions{})
		if err != nil {
			t.Fatal(err)
		}
		vm2, err := perfmap.FromVMStructs(ctx, j.PID, false)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Lstat("/tmp/perf-" + strconv.Itoa(j.PID) + ".map"); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the JVM-written map was not removed: %v", err)
		}
		if left, _ := filepath.Glob("/tmp/.jvmkit-perfmap-*"); len(left) > 0 {
			t.Errorf("left behind: %q", left)
		}
		seen := map[span]string{}
		for _, e := range append(vm1, vm2...) {
			seen[span{e.Start, e.Size}] = e.Name
		}
		agree := 0
		for _, e := range jc {
			if seen[span{e.Start, e.Size}] == e.Name {
				agree++
			}
		}
		if len(jc) == 0 || float64(agree) < 0.99*float64(len(jc)) {
			t.Errorf("vmstructs agrees with Compiler.perfmap on %d of %d entries, want >= 99%%", agree, len(jc))
		}
		t.Logf("%d of %d entries agree", agree, len(jc))
		// The three strategies on nmethod ranges (names differ in style: the agent's are perf-map-agent's).
		agentSpans := map[span]bool{}
		for _, e := range ag {
			agentSpans[span{e.Start, e.Size}] = true
		}
		nmethods, inAgent, inVM := 0, 0, 0
		for _, e := range jc {
			if !strings.HasSuffix(e.Name, ")") || strings.Contains(e.Name, " (") {
				continue // stubs and adapters; the agent names them differently or not at all
			}
			nmethods++
			if agentSpans[span{e.Start, e.Size}] {
				inAgent++
			}
			if _, ok := seen[span{e.Start, e.Size}]; ok {
				inVM++
			}
		}
		t.Logf("nmethod ranges of Compiler.perfmap: %d; also in the agent's map: %d, in vmstructs': %d", nmethods, inAgent, inVM)
		if nmethods == 0 || float64(inAgent) < 0.99*float64(nmethods) || float64(inVM) < 0.99*float64(nmethods) {
			t.Errorf("the strategies agree on too few nmethod ranges: %d agent, %d vmstructs of %d", inAgent, inVM, nmethods)
		}
		paths, err := perfmap.Place(ctx, j.PID, vm2)
		if err != nil {
			t.Fatal(err)
		}
		want := "/tmp/perf-" + strconv.Itoa(j.PID) + ".map"
		if len(paths) != 1 || paths[0] != want {
			t.Fatalf("Place wrote %q, want [%s]", paths, want)
		}
		f, err := os.Open(want)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		got, err := perfmap.Parse(f)
		if err != nil || len(got) != len(vm2) {
			t.Errorf("map read back: %d entries, %v; want %d", len(got), err, len(vm2))
		}
	})
}

// TestUnfold checks the unfolded map of a JVM whose hot loop is inlined into its caller: the ranges of
// each nmethod cover it exactly, without overlaps, and the inlined code is named by its chain.
func TestUnfold(t *testing.T) {
	testutil.MustHaveRoot(t)
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		t.Parallel() // two JDKs at a time: what this checks does not depend on the machine's load
		j := warmBusy(t, jdk, testutil.JVMOptions{JVMArgs: []string{"-XX:+UnlockDiagnosticVMOptions", "-XX:+DebugNonSafepoints"}})
		ctx := context.Background()
		plain, err := perfmap.FromVMStructs(ctx, j.PID, false)
		if err != nil {
			t.Fatal(err)
		}
		unfolded, err := perfmap.FromVMStructsWith(ctx, j.PID, perfmap.VMStructsOptions{Unfold: true, Annotate: true})
		if err != nil {
			t.Fatal(err)
		}
		// Every plain entry is covered by unfolded entries that tile it (the code cache may have changed
		// between the two reads: entries that appeared or vanished are left out).
		byStart := map[uint64]perfmap.Entry{}
		for _, e := range unfolded {
			byStart[e.Start] = e
		}
		tiled, chains, spinChain := 0, 0, false
		for _, p := range plain {
			at, end, parts := p.Start, p.Start+p.Size, 0
			for at < end {
				e, ok := byStart[at]
				if !ok {
					break
				}
				at += e.Size
				parts++
			}
			if at != end {
				continue
			}
			tiled++
			if parts > 1 {
				chains++
			}
		}
		for _, e := range unfolded {
			if strings.Contains(e.Name, "long Busy.spin(long, int)_[j]->long Busy.step(long)_[i]") {
				spinChain = true
			}
		}
		t.Logf("%s: %d plain entries, %d unfolded; %d tiled exactly, %d of them split by inlining", jdk, len(plain), len(unfolded), tiled, chains)
		if tiled < len(plain)*99/100 {
			t.Errorf("only %d of %d entries are tiled by the unfolded map", tiled, len(plain))
		}
		if chains == 0 || !spinChain {
			t.Errorf("no inlined chains (Busy.step inlined into Busy.spin: %v)", spinChain)
		}
		sorted := slices.Clone(unfolded)
		slices.SortFunc(sorted, func(a, b perfmap.Entry) int { return cmp.Compare(a.Start, b.Start) })
		for i := 1; i < len(sorted); i++ {
			if sorted[i-1].Start+sorted[i-1].Size > sorted[i].Start {
				t.Errorf("overlap: %+v and %+v", sorted[i-1], sorted[i])
				break
			}
		}
	})
}

func TestPlaceNamespace(t *testing.T) {
	testutil.MustHaveRoot(t)
	jdk := testutil.JDK17(t)
	j := warmBusy(t, jdk, testutil.JVMOptions{Namespace: true})
	ctx := context.Background()
	cleanMaps(t, j.PID)
	entries, err := perfmap.FromVMStructs(ctx, j.PID, false)
	if err != nil {
		t.Fatal(err)
	}
	inside := "/proc/" + strconv.Itoa(j.PID) + "/root/tmp/perf-" + strconv.Itoa(j.NSPID) + ".map"
	host := "/tmp/perf-" + strconv.Itoa(j.PID) + ".map"

	// A symbolic link another user planted at the host path is replaced by the map, not followed, and
	// said so: refused, it would let any user keep the JVM from having a map. A directory there is an
	// error, and the other map is still written.
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(host, 0o777); err != nil {
		t.Fatal(err)
	}
	paths, err := perfmap.Place(ctx, j.PID, entries)
	if err == nil || !strings.Contains(err.Error(), "is a directory") || len(paths) != 1 || paths[0] != inside {
		t.Errorf("Place with a directory at the host name: %q, %v; want the map inside only, and an error", paths, err)
	}
	if err := os.Remove(host); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, host); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(host, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	var notes []string
	paths, err = perfmap.PlaceWith(ctx, j.PID, entries, perfmap.PlaceOptions{Note: func(n string) { notes = append(notes, n) }})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Errorf("symlink target changed: %q", b)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], host+" was a symbolic link owned by uid 65534; replaced") {
		t.Errorf("notes %q; want one saying the link was replaced", notes)
	}
	if len(paths) != 2 || paths[0] != inside || paths[1] != host {
		t.Fatalf("Place wrote %q, want [%s %s]", paths, inside, host)
	}
	for _, p := range paths {
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			t.Fatal(err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Uid != 0 {
			t.Errorf("%s: mode %o uid %d, want a regular file owned by root", p, st.Mode, st.Uid)
		}
	}
	removed, err := perfmap.Clean(ctx, j.PID)
	if err != nil || len(removed) != 2 {
		t.Fatalf("Clean: %q, %v", removed, err)
	}
	for _, p := range paths {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still exists: %v", p, err)
		}
	}
}

func TestPerfResolvesJava(t *testing.T) {
	testutil.MustHaveRoot(t)
	perf := testutil.MustHaveTool(t, "perf")
	jdk := testutil.JDK17(t)
	j := warmBusy(t, jdk, testutil.JVMOptions{JVMArgs: []string{"-XX:+PreserveFramePointer"}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cleanMaps(t, j.PID)
	data := filepath.Join(t.TempDir(), "perf.data")
	rec := exec.CommandContext(ctx, perf, "record", "-o", data, "-e", "cpu-clock", "-F", "999", "-g", "-p", strconv.Itoa(j.PID), "--", "sleep", "3")
	if out, err := rec.CombinedOutput(); err != nil {
		testutil.Skipf(t, "perf record: %v\n%s", err, out)
	}
	entries, err := perfmap.FromVMStructs(ctx, j.PID, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := perfmap.Place(ctx, j.PID, entries); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(ctx, perf, "script", "-i", data).Output()
	if err != nil {
		t.Fatalf("perf script: %v", err)
	}
	if !strings.Contains(string(out), "Busy.spin") {
		t.Errorf("perf script does not name Busy.spin; %d bytes of output", len(out))
	}
}

// TestJVMExitsMidRun maps a JVM over and over while it is killed: every round either succeeds or fails
// with an error, nothing panics, and no temporary file is left behind.
func TestJVMExitsMidRun(t *testing.T) {
	testutil.MustHaveRoot(t)
	jdk := testutil.JDK17(t)
	j := warmBusy(t, jdk, testutil.JVMOptions{})
	ctx := context.Background()
	cleanMaps(t, j.PID)
	errc := make(chan error, 1)
	rounds := 0
	go func() {
		for {
			rounds++
			entries, err := perfmap.FromVMStructsWith(ctx, j.PID, perfmap.VMStructsOptions{Unfold: true})
			if err == nil {
				_, err = perfmap.Place(ctx, j.PID, entries)
			}
			if err != nil {
				errc <- err
				return
			}
		}
	}()
	time.Sleep(300 * time.Millisecond)
	if err := unix.Kill(j.PID, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		t.Logf("after %d rounds: %v", rounds, err)
		if !errors.Is(err, attach.ErrProcessGone) && !strings.Contains(err.Error(), strconv.Itoa(j.PID)) {
			t.Errorf("the error does not say which process is gone: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("mapping a dead JVM did not fail within 30 s")
	}
	// Place's temporary files (the map lock, .perf-<pid>.map.lock, outlives its holders by design).
	if left, _ := filepath.Glob("/tmp/.perf-" + strconv.Itoa(j.PID) + ".map.*.tmp"); len(left) > 0 {
		t.Errorf("left behind: %q", left)
	}
}

// TestJcmdFrozenKeepsMap: before JDK 22 the map the JVM writes is the one perf reads; a JVM that cannot
// run (a paused container) must not have it replaced by the empty file made for the JVM to fill (a user
// trial found perf without any Java names after such a run).
func TestJcmdFrozenKeepsMap(t *testing.T) {
	testutil.MustHaveRoot(t)
	jdk := testutil.JDK17(t)
	j := testutil.StartJVM(t, jdk, testutil.JVMOptions{})
	ctx := context.Background()
	cleanMaps(t, j.PID)
	if _, err := perfmap.FromJcmd(ctx, j.PID); err != nil { // attached once: the socket takes requests
		t.Fatal(err)
	}
	path := "/tmp/perf-" + strconv.Itoa(j.NSPID) + ".map"
	want := []byte("7f0000001000 40 Placed.before\n")
	if err := os.WriteFile(path, want, 0o644); err != nil {
		t.Fatal(err)
	}
	thaw := testutil.Freeze(t, j.PID)
	_, err := perfmap.FromJcmd(ctx, j.PID)
	got, rerr := os.ReadFile(path)
	thaw()
	if err == nil || !strings.Contains(err.Error(), "frozen") {
		t.Errorf("FromJcmd on a frozen JVM: %v", err)
	}
	if rerr != nil || string(got) != string(want) {
		t.Errorf("the map after FromJcmd on a frozen JVM: %q, %v; want it unchanged", got, rerr)
	}
}
