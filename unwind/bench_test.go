//go:build linux && amd64

package unwind

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jvmkit/jvmkit/internal/testutil"
)

// lastOps parses the workload's last "ops <total> <nanos>" line.
func lastOps(out string) (total, nanos int64, ok bool) {
	out = strings.TrimRight(out, "\n")
	line := out[strings.LastIndexByte(out, '\n')+1:]
	f := strings.Fields(line)
	if len(f) != 3 || f[0] != "ops" {
		return 0, 0, false
	}
	t, err1 := strconv.ParseInt(f[1], 10, 64)
	n, err2 := strconv.ParseInt(f[2], 10, 64)
	return t, n, err1 == nil && err2 == nil
}

// onCPU is the time a thread ran, in ns (/proc/<pid>/task/<tid>/schedstat).
func onCPU(b *testing.B, pid, tid int) int64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(tid) + "/schedstat")
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		b.Fatalf("schedstat: %q", data)
	}
	v, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		b.Fatal(err)
	}
	return v
}

// BenchmarkProfileOverhead measures the Throughput workload's own rate (units of work per second, as it
// reports them, per wall-clock second and per second the worker thread ran) without profiling and while Walker.Profile samples it at 99 and 999 Hz, the three
// modes interleaved in rounds so that drift on a shared machine hits them alike. It reports each
// mode's rate and the ratios to the unprofiled one, and the samples walked per second. Run it once
// (-benchtime 1x): scripts/bench-profile.
func BenchmarkProfileOverhead(b *testing.B) {
	const (
		rounds = 4
		window = 2 * time.Second
	)
	for _, jdk := range testutil.JDKs(b) {
		b.Run(jdk.Name(), func(b *testing.B) {
			testutil.MustHaveRoot(b)
			jvm := testutil.StartJVM(b, jdk, testutil.JVMOptions{Main: "Throughput", JVMArgs: []string{"-Xmx64m"}, Args: []string{"1"}})
			w := openWalker(b, jvm.PID)
			var tid int
			for _, th := range workloadThreads(b, w, "jvmkit-tp-") {
				tid = hostTID(th)
			}
			modes := []int{0, 99, 999}
			var ops, opsCPU [3]float64
			var samples [3]int
			var walkTime [3]time.Duration
			for n := 0; n < b.N; n++ {
				for r := range rounds {
					for k := range modes {
						m := (k + r) % len(modes) // rotate the order
						time.Sleep(200 * time.Millisecond)
						t0, n0, ok0 := lastOps(jvm.Stdout())
						c0 := onCPU(b, jvm.PID, tid)
						ctx, cancel := context.WithTimeout(context.Background(), window)
						if modes[m] == 0 {
							<-ctx.Done()
						} else {
							err := w.Profile(ctx, SamplerOptions{Frequency: modes[m]}, func(*Sample, *Stack) { samples[m]++ })
							if err != nil {
								b.Fatal(err)
							}
						}
						cancel()
						t1, n1, ok1 := lastOps(jvm.Stdout())
						c1 := onCPU(b, jvm.PID, tid)
						if !ok0 || !ok1 || n1 <= n0 {
							b.Fatalf("no ops lines from the workload:\n%s", jvm.Stdout())
						}
						ops[m] += float64(t1-t0) / (float64(n1-n0) / 1e9)
						opsCPU[m] += float64(t1-t0) / (float64(c1-c0) / 1e9)
						walkTime[m] += window
					}
				}
			}
			for m := range ops {
				ops[m] /= float64(rounds * b.N)
				opsCPU[m] /= float64(rounds * b.N)
			}
			b.ReportMetric(ops[0], "ops/s-none")
			b.ReportMetric(ops[1], "ops/s-99Hz")
			b.ReportMetric(ops[2], "ops/s-999Hz")
			b.ReportMetric(ops[1]/ops[0], "ratio-99Hz")
			b.ReportMetric(ops[2]/ops[0], "ratio-999Hz")
			b.ReportMetric(opsCPU[1]/opsCPU[0], "cpu-ratio-99Hz")
			b.ReportMetric(opsCPU[2]/opsCPU[0], "cpu-ratio-999Hz")
			b.ReportMetric(float64(samples[1])/walkTime[1].Seconds(), "samples/s-99Hz")
			b.ReportMetric(float64(samples[2])/walkTime[2].Seconds(), "samples/s-999Hz")
			b.Logf("%s: %.0f ops/s unprofiled, %.4f at 99 Hz, %.4f at 999 Hz (%d and %d samples); per CPU second of the worker: %.4f and %.4f",
				jdk.Name(), ops[0], ops[1]/ops[0], ops[2]/ops[0], samples[1], samples[2], opsCPU[1]/opsCPU[0], opsCPU[2]/opsCPU[0])
		})
	}
}
