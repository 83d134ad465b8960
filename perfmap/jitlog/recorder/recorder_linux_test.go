package recorder_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
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
	"github.com/jvmkit/jvmkit/perfmap"
	"github.com/jvmkit/jvmkit/perfmap/jitlog"
	"github.com/jvmkit/jvmkit/perfmap/jitlog/recorder"
	"github.com/jvmkit/jvmkit/vmstructs"
)

// churnJVMArgs make JitChurn's code cache small, so that freed code's addresses are soon reused.
var churnJVMArgs = []string{"-XX:ReservedCodeCacheSize=16m", "-Xmx256m"}

func monoNow(t testing.TB) uint64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		t.Fatal(err)
	}
	return uint64(ts.Nano())
}

// recorderHelper is a recorder in its own process, for TestRecordJIT to kill: it records
// JITLOG_TEST_PID into JITLOG_TEST_LOG, says "ready" on stdout, and runs until killed.
func recorderHelper() int {
	pid, _ := strconv.Atoi(os.Getenv("JITLOG_TEST_PID"))
	w, err := jitlog.Create(os.Getenv("JITLOG_TEST_LOG"), jitlog.WriterOptions{FlushInterval: 200 * time.Millisecond})
	if err != nil {
		fmt.Fprintln(os.Stderr, "recorder helper:", err)
		return 1
	}
	_, err = recorder.Record(context.Background(), []int{pid}, w, recorder.Options{Ready: func() { fmt.Println("ready") }})
	fmt.Fprintln(os.Stderr, "recorder helper: the recording ended:", err)
	return 1
}

// recording is a recorder running in this process.
type recording struct {
	cancel context.CancelFunc
	done   chan struct{}
	stats  recorder.Stats
	err    error
}

func startRecording(t *testing.T, pids []int, path string, opts recorder.Options) *recording {
	t.Helper()
	w, err := jitlog.Create(path, jitlog.WriterOptions{FlushInterval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &recording{cancel: cancel, done: make(chan struct{})}
	ready := make(chan struct{})
	var once sync.Once
	opts.Ready = func() { once.Do(func() { close(ready) }) }
	go func() {
		defer close(r.done)
		r.stats, r.err = recorder.Record(ctx, pids, w, opts)
		r.err = errors.Join(r.err, w.Close())
		once.Do(func() { close(ready) })
	}()
	t.Cleanup(func() { r.stop() })
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		t.Fatal("the recorder was not ready after 30 s")
	}
	return r
}

func (r *recording) stop() (recorder.Stats, error) {
	r.cancel()
	<-r.done
	return r.stats, r.err
}

// sample is a perf sample's leaf frame.
type sample struct {
	pid, tid int
	time     uint64
	ip       uint64
	sym      string
}

// leafSamples parses perf script -F comm,pid,tid,time,period,event,ip,sym,dso --ns (with callchains)
// into the leaf frames of pid's samples.
func leafSamples(text []byte, pid int) []sample {
	var out []sample
	var cur sample
	ours, leaf := false, false
	for _, line := range strings.Split(string(text), "\n") {
		switch {
		case strings.TrimSpace(line) == "":
			ours = false
		case !strings.HasPrefix(line, "\t") && !strings.HasPrefix(line, " "):
			f := strings.Fields(line)
			ours, leaf = false, true
			for i, x := range f {
				p, tid, ok := strings.Cut(x, "/")
				if !ok || p != strconv.Itoa(pid) || i+1 >= len(f) {
					continue
				}
				tm, err := jitlog.ParseTime(strings.TrimSuffix(f[i+1], ":"))
				n, err2 := strconv.Atoi(tid)
				if err == nil && err2 == nil {
					ours, cur = true, sample{pid: pid, tid: n, time: tm}
				}
				break
			}
		case ours && leaf:
			leaf = false
			f := strings.Fields(line)
			ip, err := strconv.ParseUint(f[0], 16, 64)
			if err != nil || len(f) < 3 {
				continue
			}
			sym := strings.Join(f[1:len(f)-1], " ")
			if i := strings.LastIndex(sym, "+0x"); i >= 0 {
				sym = sym[:i]
			}
			cur.ip, cur.sym = ip, sym
			out = append(out, cur)
		}
	}
	return out
}

// isJavaName tells the names of compiled Java methods ("long A.f(long)") from those of stubs and
// blobs ("StubRoutines (1)", "Interpreter").
func isJavaName(name string) bool {
	i := strings.IndexByte(name, '(')
	return strings.HasSuffix(name, ")") && i > 0 && name[i-1] != ' ' && strings.Contains(name[:i], ".")
}

// mapName names addr by a perf map, as perf does.
func mapName(entries []perfmap.Entry, addr uint64) (string, bool) {
	for _, e := range entries {
		if e.Start <= addr && addr-e.Start < e.Size {
			return e.Name, true
		}
	}
	return "", false
}

// TestRecordJIT profiles JitChurn (classes defined and unloaded all the time, recompiled, in a small
// code cache) for about 20 s with perf while the recorder logs its JIT code, and checks that:
//   - named by the log (jvmkit symbolize), no Java sample is named wrongly and at most 0.5% are
//     unnamed; by a perf map taken at the end, as jmaps does, it counts the wrong ones. The truth is
//     what the recorder saw at the sample's time (an exact resolver match);
//   - perf inject --jit with the recorder's jitdump names the samples as symbolize does;
//   - nothing is missed: every compiled method of Compiler.perfmap at the end is in the log at the
//     same address, size and name, and no code the log saw unloaded is still there; code the log still
//     holds live that Compiler.perfmap lacks is counted and printed, not failed: the unload probe
//     carries no address, so which version of a method was freed is inferred (see recorder.Record), and a
//     wrong guess leaves an old version live in the log until a newer load overlaps it
//     (in particular none of those the recorder saw unloaded);
//   - a second recorder killed with SIGKILL leaves a readable log with every load but those of its
//     last flush interval.
func TestRecordJIT(t *testing.T) {
	testutil.MustHaveRoot(t)
	perf := testutil.MustHaveTool(t, "perf")
	// One load in 7 does not find its blob at first (as when a read of the JVM's memory fails): the
	// recorder logs it again with the whole size, which the end state below checks.
	t.Cleanup(recorder.MissSizes(7))
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		testutil.SkipWithoutProbes(t, jdk)
		dir := t.TempDir()
		j := testutil.StartJVM(t, jdk, testutil.JVMOptions{Main: "JitChurn", JVMArgs: churnJVMArgs})
		logPath := filepath.Join(dir, "jit.log")
		rec := startRecording(t, []int{j.PID}, logPath, recorder.Options{Jitdump: dir})

		env := append(os.Environ(), "HOME="+dir, "PERF_BUILDID_DIR="+filepath.Join(dir, "buildid"))
		runPerf := func(args ...string) []byte {
			t.Helper()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, perf, args...)
			cmd.Env = env
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("perf %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
			}
			return out
		}
		data := filepath.Join(dir, "perf.data")
		// The killed recorder runs during the profile.
		killed := make(chan error, 1)
		var tKill, tHelperReady uint64
		killedLog := filepath.Join(dir, "killed.log")
		go func() {
			time.Sleep(2 * time.Second)
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), helperEnv+"=recorder", "JITLOG_TEST_PID="+strconv.Itoa(j.PID), "JITLOG_TEST_LOG="+killedLog)
			cmd.Stderr = os.Stderr
			out, err := cmd.StdoutPipe()
			if err == nil {
				err = cmd.Start()
			}
			if err != nil {
				killed <- err
				return
			}
			line, _ := bufio.NewReader(out).ReadString('\n')
			if line != "ready\n" {
				_ = cmd.Process.Kill()
				killed <- fmt.Errorf("the recorder helper said %q: %w", line, cmd.Wait())
				return
			}
			tHelperReady = monoNow(t)
			time.Sleep(4 * time.Second)
			tKill = monoNow(t)
			_ = cmd.Process.Signal(unix.SIGKILL)
			_, _ = io.Copy(io.Discard, out)
			_ = cmd.Wait()
			killed <- nil
		}()
		pids := fmt.Sprintf("%d,%d", j.PID, os.Getpid())
		// 15 s of churn where the tier runs whole (about 7,000 Java samples, 1,700 unloads), 10 s (still
		// past the killed recorder's 6 s) elsewhere.
		profileSecs := "10"
		if testutil.DepthOf(t, jdk) == testutil.Full {
			profileSecs = "15"
		}
		runPerf("record", "-q", "-k", "mono", "-e", "cpu-clock", "-F", "499", "-g", "-p", pids, "-o", data, "--", "sleep", profileSecs)
		if err := <-killed; err != nil {
			t.Fatal(err)
		}

		// The end state, as the JVM lists it, then the end of the recording.
		vm, err := vmstructs.Open(context.Background(), j.PID)
		if err != nil {
			t.Fatal(err)
		}
		cc, err := vm.CodeCache()
		_ = vm.Close()
		if err != nil {
			t.Fatal(err)
		}
		tBefore := monoNow(t)
		endMap, err := perfmap.FromJcmd(context.Background(), j.PID)
		tAfter := monoNow(t)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond) // the events of the last loads reach the recorder
		st, err := rec.stop()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("recorder: %+v", st)
		recs, dmg, err := jitlog.ReadFile(logPath)
		if err != nil || len(dmg) > 0 {
			t.Fatalf("log: %v, damage %v", err, dmg)
		}
		res := jitlog.NewResolver(recs)
		t.Logf("%d records, resolver %+v", len(recs), res.Stats())
		for _, js := range st.JVMs {
			if js.Drops > 0 || js.Err != "" || js.Loads == 0 || js.Unloads == 0 || js.Snapshot == 0 || js.Resized == 0 {
				t.Errorf("recorder stats %+v: want loads, unloads, a snapshot, resized loads, no drops, no error", js)
			}
		}

		// Naming accuracy.
		fields := []string{"script", "-F", "comm,pid,tid,time,period,event,ip,sym,dso", "--ns", "-i"}
		plain := runPerf(append(fields, data)...)
		var symd bytes.Buffer
		if _, err := jitlog.Symbolize(&symd, bytes.NewReader(plain), res, jitlog.SymbolizeOptions{}); err != nil {
			t.Fatal(err)
		}
		injected := filepath.Join(dir, "perf.jit.data")
		runPerf("inject", "--jit", "-i", data, "-o", injected)
		viaInject := map[[2]uint64]string{}
		for _, s := range leafSamples(runPerf(append(fields, injected)...), j.PID) {
			viaInject[[2]uint64{uint64(s.tid), s.time}] = s.sym
		}
		raw, named := leafSamples(plain, j.PID), leafSamples(symd.Bytes(), j.PID)
		if len(raw) != len(named) {
			t.Fatalf("%d samples before symbolize, %d after", len(raw), len(named))
		}
		var java, noTruth, logWrong, logUnnamed, mapWrong, mapUnnamed, injAgree, injDiffer int
		var examples []string
		for i, s := range raw {
			if !cc.Contains(s.ip) {
				continue
			}
			java++
			m, ok := res.Lookup(j.PID, s.ip, s.time)
			if !ok || !m.Exact {
				noTruth++
				logUnnamed++
				continue
			}
			truth := m.Name
			switch got := named[i].sym; {
			case got == "[unknown]":
				logUnnamed++
			case got != truth:
				logWrong++
				if len(examples) < 5 {
					examples = append(examples, fmt.Sprintf("%#x at %d: %q, truth %q", s.ip, s.time, got, truth))
				}
			}
			if name, ok := mapName(endMap, s.ip); !ok {
				mapUnnamed++
			} else if name != truth {
				mapWrong++
			}
			if inj, ok := viaInject[[2]uint64{uint64(s.tid), s.time}]; ok && inj == named[i].sym {
				injAgree++
			} else {
				injDiffer++
				if len(examples) < 10 {
					examples = append(examples, fmt.Sprintf("inject %#x at %d: %q, symbolize %q", s.ip, s.time, inj, named[i].sym))
				}
			}
		}
		pct := func(n int) float64 { return 100 * float64(n) / float64(max(java, 1)) }
		t.Logf("%s: %d Java samples (of %d); with the log: %d wrong (%.2f%%), %d unnamed (%.2f%%, %d without truth); "+
			"with a perf map at the end: %d wrong (%.2f%%), %d unnamed (%.2f%%); perf inject --jit agrees on %d, differs on %d",
			jdk.Name(), java, len(raw), logWrong, pct(logWrong), logUnnamed, pct(logUnnamed), noTruth,
			mapWrong, pct(mapWrong), mapUnnamed, pct(mapUnnamed), injAgree, injDiffer)
		for _, e := range examples {
			t.Log(e)
		}
		if minJava := 100 * mustAtoi(t, profileSecs); java < minJava {
			t.Errorf("%d Java samples, want at least %d", java, minJava)
		}
		if logWrong > 0 || pct(logUnnamed) > 0.5 {
			t.Errorf("with the log: %d wrong, %.2f%% unnamed; want 0 wrong, at most 0.5%% unnamed", logWrong, pct(logUnnamed))
		}
		if injDiffer > 0 {
			t.Errorf("perf inject --jit names %d Java samples unlike symbolize", injDiffer)
		}

		// Nothing missed, nothing stale.
		spans := res.Spans(j.PID)
		var jvmJava, missing, sizeDiffers, stale, unloadedPresent int
		endAt := map[uint64]string{}
		for _, e := range endMap {
			if !isJavaName(e.Name) {
				continue
			}
			jvmJava++
			endAt[e.Start] = e.Name
			found, sized := false, false
			var logged []uint64
			for k := range spans {
				s := &spans[k]
				if s.Start == e.Start && s.Name == e.Name && s.From <= tAfter && s.To > tBefore {
					found, sized = true, sized || s.Size == e.Size
					logged = append(logged, s.Size)
				}
			}
			switch {
			case !found:
				missing++
				if missing <= 5 {
					t.Errorf("missed: %#x %#x %s", e.Start, e.Size, e.Name)
				}
			case !sized:
				sizeDiffers++
				if sizeDiffers <= 5 {
					t.Errorf("size: %#x %s is %#x long in Compiler.perfmap, %#x in the log", e.Start, e.Name, e.Size, logged)
				}
			}
		}
		liveAt := map[uint64]bool{}
		for k := range spans {
			s := &spans[k]
			if s.ValidAt(tAfter) {
				liveAt[s.Start] = true
			}
			if !isJavaName(s.Name) {
				continue
			}
			if s.From <= tBefore && s.To > tAfter && endAt[s.Start] != s.Name {
				stale++
				if stale <= 5 {
					t.Logf("stale: the log has %#x %#x %s (%s) live, Compiler.perfmap does not", s.Start, s.Size, s.Name, s.Kind)
				}
			}
		}
		for k := range spans {
			s := &spans[k]
			if isJavaName(s.Name) && s.To <= tBefore && !liveAt[s.Start] && endAt[s.Start] == s.Name {
				unloadedPresent++
			}
		}
		t.Logf("end state: %d compiled methods in Compiler.perfmap: %d missing from the log, %d with another size; "+
			"%d live in the log but not in Compiler.perfmap; %d ended in the log yet present",
			jvmJava, missing, sizeDiffers, stale, unloadedPresent)
		if missing+sizeDiffers+unloadedPresent > 0 || jvmJava == 0 {
			t.Errorf("end state differs (see above)")
		}

		// The killed recorder's log.
		krecs, kdmg, err := jitlog.ReadFile(killedLog)
		if err != nil {
			t.Fatalf("the killed recorder's log: %v", err)
		}
		kLoads := map[string]bool{}
		for _, r := range krecs {
			if r.Kind == jitlog.Load {
				kLoads[fmt.Sprintf("%x %s", r.Start, r.Name)] = true
			}
		}
		var want, lost int
		for _, r := range recs {
			// The loads between the helper's start and the kill, but for the last flush interval
			// (200 ms) and some slack for the helper's reading.
			if r.Kind == jitlog.Load && r.Time > tHelperReady && r.Time+700*uint64(time.Millisecond) < tKill {
				want++
				if !kLoads[fmt.Sprintf("%x %s", r.Start, r.Name)] {
					lost++
				}
			}
		}
		t.Logf("killed recorder: %d records, damage %v; %d of %d loads before the kill's last 700 ms lost", len(krecs), kdmg, lost, want)
		if lost > 0 || want == 0 || len(krecs) == 0 {
			t.Errorf("killed recorder: %d of %d loads lost", lost, want)
		}
	})
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
