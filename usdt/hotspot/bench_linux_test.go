package hotspot_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jvmkit/jvmkit/internal/testutil"
	"github.com/jvmkit/jvmkit/usdt"
	"github.com/jvmkit/jvmkit/usdt/hotspot"
	"github.com/jvmkit/jvmkit/vmstructs"
)

// BenchmarkAlloc measures, once per JDK (run it with -benchtime 1x; scripts/bench-alloc does):
//
//   - events/s: object__alloc firings counted per second on a JVM started with -XX:+DTraceAllocProbes
//     and two allocating threads, counted in the kernel (the default) and through the ring buffer
//     (--events), with the firings lost;
//   - the overhead of the sampled mode (--switch-flags, with its weights) on the Alloc workload's
//     throughput: periods of 4 s without it, with it and TLAB windows off, with it and windows on,
//     alternating, compared by the rounds the workload completes per second.
func BenchmarkAlloc(b *testing.B) {
	testutil.MustHaveBPF(b)
	for _, jdk := range testutil.JDKs(b) {
		b.Run(jdk.Name(), func(b *testing.B) {
			b.Run("full", func(b *testing.B) { benchFull(b, jdk) })
			b.Run("sampled-overhead", func(b *testing.B) { benchSampled(b, jdk) })
		})
	}
}

func benchFull(b *testing.B, jdk testutil.JDK) {
	j := testutil.StartJVM(b, jdk, testutil.JVMOptions{
		Main: "Alloc", Args: []string{"2", "3000"}, JVMArgs: []string{"-XX:+DTraceAllocProbes", "-Xmx256m"},
	})
	mods, err := usdt.Modules(context.Background(), j.PID)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		for _, events := range []bool{false, true} {
			tr, err := hotspot.TraceAlloc(context.Background(), j.PID, mods, hotspot.AllocOptions{Events: events})
			if err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			time.Sleep(3 * time.Second)
			_ = tr.Stop()
			elapsed := time.Since(start)
			p, err := tr.Profile()
			_ = tr.Close()
			if err != nil {
				b.Fatal(err)
			}
			name := "kernel"
			if events {
				name = "ringbuf"
			}
			rate := float64(p.Count) / elapsed.Seconds()
			b.ReportMetric(rate, name+"-events/s")
			b.ReportMetric(float64(p.Lost), name+"-lost")
			b.Logf("%s %s: %.0f events/s, %d lost", jdk.Name(), name, rate, p.Lost)
		}
	}
}

// rounds returns the workload's "rounds N" lines printed since offset, and the new offset.
func rounds(j *testutil.JVM, offset int) ([]float64, int) {
	out := j.Stdout()
	var rs []float64
	for _, line := range strings.Split(out[offset:], "\n") {
		if n, ok := strings.CutPrefix(line, "rounds "); ok {
			if v, err := strconv.ParseFloat(n, 64); err == nil {
				rs = append(rs, v)
			}
		}
	}
	return rs, len(out)
}

func mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(max(1, len(xs)))
}

func benchSampled(b *testing.B, jdk testutil.JDK) {
	j := testutil.StartJVM(b, jdk, testutil.JVMOptions{Main: "Alloc", Args: []string{"1", "3000"}, JVMArgs: []string{"-Xmx256m"}})
	vm, err := vmstructs.Open(context.Background(), j.PID)
	if err != nil {
		b.Fatal(err)
	}
	defer vm.Close()
	w, err := vmstructs.OpenProcessMemoryWriter(j.PID)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	mods, err := usdt.Modules(context.Background(), j.PID)
	if err != nil {
		b.Fatal(err)
	}
	const window = 4 * time.Second
	var off, plain, windowed []float64
	var samples, windows uint64
	offset := len(j.Stdout())
	for i := 0; i < b.N; i++ {
		for k := 0; k < 4; k++ {
			time.Sleep(window)
			var rs []float64
			rs, offset = rounds(j, offset)
			off = append(off, rs[min(1, len(rs)):]...) // the first line straddles the switch

			noWindows := k%2 == 0
			tr, err := hotspot.TraceAlloc(context.Background(), j.PID, mods, hotspot.AllocOptions{Weights: true, Sampled: true, NoWindows: noWindows})
			if err != nil {
				b.Fatal(err)
			}
			sw, err := hotspot.SwitchOn(vm, w, hotspot.AllocProbes)
			if err != nil {
				_ = tr.Close()
				b.Fatal(err)
			}
			tr.Rebase()
			_, offset = rounds(j, offset)
			time.Sleep(window)
			rs, offset = rounds(j, offset)
			if noWindows {
				plain = append(plain, rs[min(1, len(rs)):]...)
			} else {
				windowed = append(windowed, rs[min(1, len(rs)):]...)
			}
			_ = tr.Freeze(0)
			rerr := sw.Restore()
			_ = tr.Stop()
			p, perr := tr.Profile()
			_ = tr.Close()
			if rerr != nil || perr != nil {
				b.Fatal(rerr, perr)
			}
			samples += p.Samples
			windows += p.Windows
			_, offset = rounds(j, offset)
		}
	}
	overhead := 100 * (1 - mean(plain)/mean(off))
	withWindows := 100 * (1 - mean(windowed)/mean(off))
	b.ReportMetric(overhead, "overhead-%")
	b.ReportMetric(withWindows, "windows-overhead-%")
	b.ReportMetric(float64(samples)/(4*window.Seconds()*float64(b.N)), "samples/s")
	b.Logf("%s sampled mode: %.0f rounds/s without, %.0f with (windows off), %.0f with windows (%d, %d and %d seconds): "+
		"overhead %.2f%% and %.2f%%, %d samples, %d windows walked",
		jdk.Name(), mean(off), mean(plain), mean(windowed), len(off), len(plain), len(windowed), overhead, withWindows, samples, windows)
}
