package recorder_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jvmkit/jvmkit/internal/testutil"
	"github.com/jvmkit/jvmkit/perfmap/jitlog"
	"github.com/jvmkit/jvmkit/perfmap/jitlog/recorder"
)

// churnOps returns the throughput of a JitChurn run of secs seconds: its "ops N" line over secs.
func churnOps(b *testing.B, j *testutil.JVM, secs int) float64 {
	b.Helper()
	if err := j.Wait(time.Duration(secs)*time.Second + time.Minute); err != nil {
		b.Fatalf("JitChurn: %v\n%s", err, j.Stderr())
	}
	for _, line := range strings.Split(j.Stdout(), "\n") {
		if n, ok := strings.CutPrefix(line, "ops "); ok {
			if v, err := strconv.ParseFloat(n, 64); err == nil {
				return v / float64(secs)
			}
		}
	}
	b.Fatalf("JitChurn printed no ops line:\n%s", j.Stdout())
	return 0
}

// BenchmarkRecordOverhead measures, once per JDK (run it with -benchtime 1x; scripts/bench-jitlog
// does), what the recorder costs the JVM it records: the throughput of JitChurn (JIT code replaced and
// unloaded all the time, the recorder's worst case; 16 MB code cache) in runs of 8 s without and with
// recorder.Record (the default vmstructs snapshot, and a log file flushed every 200 ms, as jvmkit jitlog
// record does), alternating off, on, on, off, off, on so that drift on a shared machine hits both alike.
// JitChurn counts its calls only at the end, so each window is a JVM of its own; the recorder attaches
// as soon as the JVM says ready (after its first round), so it misses the first fraction of a second of
// the window, reported as attach. The goal is a ratio of at least 0.99.
func BenchmarkRecordOverhead(b *testing.B) {
	testutil.MustHaveRoot(b)
	const secs = 8
	order := []bool{false, true, true, false, false, true}
	for _, jdk := range testutil.JDKs(b) {
		b.Run(jdk.Name(), func(b *testing.B) {
			var off, on []float64
			var attach time.Duration
			var events int
			for n := 0; n < b.N; n++ {
				for k, record := range order {
					j := testutil.StartJVM(b, jdk, testutil.JVMOptions{Main: "JitChurn", Args: []string{strconv.Itoa(secs)}, JVMArgs: churnJVMArgs})
					if !record {
						off = append(off, churnOps(b, j, secs))
						j.Stop()
						continue
					}
					path := filepath.Join(b.TempDir(), fmt.Sprintf("jit-%d-%d.log", n, k))
					w, err := jitlog.Create(path, jitlog.WriterOptions{FlushInterval: 200 * time.Millisecond})
					if err != nil {
						b.Fatal(err)
					}
					ctx, cancel := context.WithCancel(context.Background())
					start := time.Now()
					ready := make(chan time.Duration, 1)
					done := make(chan struct{})
					var st recorder.Stats
					var rerr error
					go func() {
						defer close(done)
						st, rerr = recorder.Record(ctx, []int{j.PID}, w, recorder.Options{Ready: func() { ready <- time.Since(start) }})
						rerr = errors.Join(rerr, w.Close())
					}()
					ops := churnOps(b, j, secs)
					cancel()
					<-done
					if rerr != nil {
						b.Fatal(rerr)
					}
					select {
					case d := <-ready:
						attach += d
					default:
						b.Fatal("the recorder was never ready")
					}
					for _, js := range st.JVMs {
						if js.Err != "" || js.Drops > 0 {
							b.Errorf("recorder: %+v", js)
						}
						events += js.Loads + js.Unloads
					}
					on = append(on, ops)
					j.Stop()
				}
			}
			// Medians: each window is a JVM of its own, and a JVM's JIT decisions move its throughput by a
			// few percent either way (-benchtime 2x or more gives more windows).
			ratio := median(on) / median(off)
			b.ReportMetric(mean(off), "ops/s-off")
			b.ReportMetric(mean(on), "ops/s-on")
			b.ReportMetric(ratio, "ratio")
			b.ReportMetric(float64(events)/float64(len(on)*secs), "events/s")
			b.Logf("%s: JitChurn median %.0f ops/s without the recorder %v, %.0f with %v: ratio %.4f (goal >= 0.99); "+
				"%.0f probe events/s recorded; attach and snapshot %v after ready (of %d s windows)",
				jdk.Name(), median(off), fmtRates(off), median(on), fmtRates(on), ratio,
				float64(events)/float64(len(on)*secs), (attach / time.Duration(len(on))).Round(time.Millisecond), secs)
		})
	}
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(max(1, len(xs)))
}

// fmtRates prints rates to three significant digits, for the log line.
func fmtRates(xs []float64) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = strconv.FormatFloat(x, 'g', 3, 64)
	}
	return out
}
