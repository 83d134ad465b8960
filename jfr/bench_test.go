//go:build linux

package jfr

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/jvmkit/jvmkit/internal/testutil"
	"github.com/jvmkit/jvmkit/jcmd"
)

// BenchmarkVsJDK records a big recording (at least BENCH_JFR_MB megabytes, default 50: the Demo
// workload under testdata/bench.jfc, execution samples every millisecond and an allocation event per
// 4 KiB TLAB, with stacks) on JDK 17 and times, in one run, jvmkit jfr summary and print --json
// against the newest JDK's jfr summary and jfr print --json, output to /dev/null, process start
// included. Medians of BENCH_JFR_RUNS runs (default 3; the JDK's print --json once per run).
func BenchmarkVsJDK(b *testing.B) {
	mb := 50
	if v, err := strconv.Atoi(os.Getenv("BENCH_JFR_MB")); err == nil && v > 0 {
		mb = v
	}
	runs := 3
	if v, err := strconv.Atoi(os.Getenv("BENCH_JFR_RUNS")); err == nil && v > 0 {
		runs = v
	}
	jvmkit := testutil.BuildTool(b, "cmd/jvmkit")
	var oracle testutil.JDK
	for _, j := range testutil.JDKs(b) {
		if _, err := os.Stat(j.Bin("jfr")); err == nil && j.Feature >= oracle.Feature {
			oracle = j
		}
	}
	jdk := testutil.JDK17(b)
	settings, err := filepath.Abs(filepath.Join("testdata", "bench.jfc"))
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "big.jfr")
	j := testutil.StartJVM(b, jdk, testutil.JVMOptions{Main: "Demo", Args: []string{"60"},
		JVMArgs: []string{"-Xmx128m", "-XX:TLABSize=4k", "-XX:-ResizeTLAB"}})
	ctx := context.Background()
	c, err := jcmd.Dial(ctx, j.PID, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	if _, err := c.StartJFR(ctx, jcmd.JFRStart{Name: "big", Settings: []string{settings}}); err != nil {
		b.Fatal(err)
	}
	for start := time.Now(); ; {
		time.Sleep(5 * time.Second) // the recording grows at the JVM's pace
		if _, err := c.DumpJFR(ctx, jcmd.JFRDump{Name: "big", Filename: path}); err != nil {
			b.Fatal(err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			b.Fatal(err)
		}
		if fi.Size() >= int64(mb)<<20 {
			b.Logf("recorded %.1f MB in %v", float64(fi.Size())/(1<<20), time.Since(start).Round(time.Second))
			break
		}
		if time.Since(start) > 15*time.Minute {
			b.Fatalf("recording is %d bytes after 15 minutes", fi.Size())
		}
	}
	j.Stop()
	r, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	var events int
	for _, ch := range r.Chunks {
		events += ch.NumEvents()
	}
	b.Logf("%d chunks, %d events", len(r.Chunks), events)
	r.Close()

	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer devnull.Close()
	var cpu = map[string]time.Duration{}
	timeOne := func(args ...string) time.Duration {
		cmd := exec.Command(args[0], args[1:]...)
		var errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = devnull, &errOut
		start := time.Now()
		if err := cmd.Run(); err != nil {
			b.Fatalf("%v: %v\n%s", args, err, errOut.String())
		}
		d := time.Since(start)
		// CPU time too: on a shared machine wall time says as much about the neighbours.
		cpu[args[0]+" "+args[len(args)-2]] += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		return d
	}
	type tool struct {
		name string
		args []string
		d    []time.Duration
	}
	tools := []*tool{
		{name: "jvmkit jfr summary", args: []string{jvmkit, "jfr", "summary", path}},
		{name: fmt.Sprintf("jfr summary (JDK %d)", oracle.Feature), args: []string{oracle.Bin("jfr"), "summary", path}},
		{name: "jvmkit jfr print --json", args: []string{jvmkit, "jfr", "print", "--json", path}},
		{name: fmt.Sprintf("jfr print --json (JDK %d)", oracle.Feature), args: []string{oracle.Bin("jfr"), "print", "--json", path}},
	}
	for range runs {
		for _, t := range tools { // interleaved: drift of the machine hits every tool alike
			t.d = append(t.d, timeOne(t.args...))
		}
	}
	median := func(d []time.Duration) time.Duration {
		s := slices.Clone(d)
		slices.Sort(s)
		return s[len(s)/2]
	}
	for _, t := range tools {
		c := cpu[t.args[0]+" "+t.args[len(t.args)-2]] / time.Duration(len(t.d))
		b.Logf("%-28s median %8.3f s of %d: %v; CPU (user+sys) %.3f s a run", t.name, median(t.d).Seconds(), len(t.d), t.d, c.Seconds())
	}
	sum := float64(median(tools[1].d)) / float64(median(tools[0].d))
	print := float64(median(tools[3].d)) / float64(median(tools[2].d))
	b.Logf("jfr summary / jvmkit jfr summary: %.1fx; jfr print --json / jvmkit jfr print --json: %.1fx", sum, print)
	b.ReportMetric(sum, "summary-x")
	b.ReportMetric(print, "print-json-x")
}
