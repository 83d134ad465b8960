//go:build linux

package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jvmkit/jvmkit/internal/testutil"
	"github.com/jvmkit/jvmkit/perfmap"
)

// BenchmarkGjmaps maps 10 warm JVMs, in one run: gjmaps with each strategy against the loop a
// jmaps-style script runs (the JDK's `jcmd <pid> Compiler.perfmap`, one JVM after the other). It prints
// the median wall time per JVM and the time the JVMs spent in safepoints other than the collector's
// while being mapped (from -Xlog:safepoint), with a short window of doing nothing as the baseline. Run it with
// scripts/bench-gjmaps (or -benchtime=1x); BENCH_JVMS=N changes the number of JVMs.
func BenchmarkGjmaps(b *testing.B) {
	testutil.MustHaveRoot(b)
	n := 10
	if v, err := strconv.Atoi(os.Getenv("BENCH_JVMS")); err == nil && v > 0 {
		n = v
	}
	bin := filepath.Join(b.TempDir(), "gjmaps")
	if out, err := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("build gjmaps: %v\n%s", err, out)
	}
	jdk := testutil.JDK17(b)
	var jvms []*testutil.JVM
	var pids []string
	for range n {
		// Demo at a 5% duty cycle: a realistic code cache without taking the machine's two cores.
		j := testutil.StartJVM(b, jdk, testutil.JVMOptions{Main: "Demo", Args: []string{"5"},
			JVMArgs: []string{"-Xlog:safepoint=info:file=safepoint.log"}})
		jvms = append(jvms, j)
		pids = append(pids, strconv.Itoa(j.PID))
		b.Cleanup(func() { _, _ = perfmap.Clean(context.Background(), j.PID) })
	}
	time.Sleep(8 * time.Second) // warm: the hot code compiled
	pidList := strings.Join(pids, ",")
	type tool struct {
		name string
		run  func() error
	}
	gj := func(strategy string) func() error {
		return func() error {
			out, err := exec.Command(bin, "-p", pidList, "--strategy", strategy).CombinedOutput()
			if err != nil {
				return fmt.Errorf("%w\n%s", err, out)
			}
			return nil
		}
	}
	tools := []tool{
		{"idle (baseline)", func() error { time.Sleep(50 * time.Millisecond); return nil }},
		{"gjmaps vmstructs", gj("vmstructs")},
		{"gjmaps jcmd", gj("jcmd")},
		{"gjmaps agent", gj("agent")},
		{"jcmd loop", func() error {
			for _, pid := range pids {
				out, err := exec.Command(jdk.Bin("jcmd"), pid, "Compiler.perfmap").CombinedOutput()
				if err != nil {
					return fmt.Errorf("jcmd %s: %w\n%s", pid, err, out)
				}
			}
			return nil
		}},
	}
	const rounds = 5
	wall := map[string][]time.Duration{}
	pause := map[string][]time.Duration{}
	for r := range rounds {
		for _, tl := range tools { // interleaved, so that drift of the machine hits every tool alike
			before := safepointTotals(b, jvms)
			start := time.Now()
			if err := tl.run(); err != nil {
				if r == 0 {
					b.Logf("%s: %v", tl.name, err)
				}
				wall[tl.name] = append(wall[tl.name], -1)
				continue
			}
			wall[tl.name] = append(wall[tl.name], time.Since(start))
			time.Sleep(100 * time.Millisecond) // the log lines of the last safepoints
			after := safepointTotals(b, jvms)
			pause[tl.name] = append(pause[tl.name], after-before)
		}
	}
	fmt.Printf("\nperf maps of %d warm JVMs (%s, Demo), median of %d rounds\n", n, jdk, rounds)
	fmt.Printf("%-18s %14s %16s %22s\n", "tool", "per JVM", "all JVMs", "non-GC safepoints, all")
	base := median(pause["idle (baseline)"])
	var loop time.Duration
	for _, tl := range tools {
		w := median(wall[tl.name])
		if w < 0 {
			fmt.Printf("%-18s %14s\n", tl.name, "failed")
			continue
		}
		if tl.name == "jcmd loop" {
			loop = w
		}
		fmt.Printf("%-18s %14s %16s %22s\n", tl.name, ms(w/time.Duration(n)), ms(w), ms(median(pause[tl.name])))
		metric := strings.ReplaceAll(strings.TrimSuffix(tl.name, " (baseline)"), " ", "-")
		b.ReportMetric(float64(w.Microseconds())/1000/float64(n), metric+"-ms/jvm")
	}
	fmt.Printf("(baseline: %s of safepoints in the idle window)\n", ms(base))
	for _, tl := range tools[1:4] {
		if w := median(wall[tl.name]); w > 0 && loop > 0 {
			fmt.Printf("jcmd loop / %s: %.1fx\n", tl.name, float64(loop)/float64(w))
		}
	}
}

var safepointLine = regexp.MustCompile(`Safepoint "([^"]+)".*Total: (\d+) ns`)

// safepointTotals sums the "Total: N ns" of the safepoints the JVMs have logged so far, but for the
// garbage collector's, which the Demo workload's allocation causes whatever the tools do.
func safepointTotals(b *testing.B, jvms []*testutil.JVM) time.Duration {
	var sum time.Duration
	for _, j := range jvms {
		f, err := os.Open(filepath.Join(j.Dir, "safepoint.log"))
		if err != nil {
			b.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			m := safepointLine.FindStringSubmatch(sc.Text())
			if m == nil || strings.HasPrefix(m[1], "G1") || strings.Contains(m[1], "Collect") {
				continue
			}
			v, _ := strconv.ParseInt(m[2], 10, 64)
			sum += time.Duration(v)
		}
		f.Close()
	}
	return sum
}

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return -1
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, k int) bool { return s[i] < s[k] })
	return s[len(s)/2]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }
