//go:build linux && amd64

package unwind

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jvmkit/jvmkit/internal/testutil"
)

// profile samples a live JVM for d and returns the walked stacks of the threads whose names start
// with prefix.
func profile(t *testing.T, w *Walker, d time.Duration, hz int, prefix string) []Stack {
	t.Helper()
	names := map[int]string{}
	for _, th := range workloadThreads(t, w, prefix) {
		names[hostTID(th)] = th.Name
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var out []Stack
	err := w.Profile(ctx, SamplerOptions{Frequency: hz}, func(s *Sample, st *Stack) {
		if _, ok := names[s.TID]; ok {
			out = append(out, *st)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// profileAtLeast samples in windows of d until it has n stacks or a minute has passed: cpu-clock
// samples a thread only while it runs, and on a loaded machine the workload's threads get less of the
// CPU than they ask for.
func profileAtLeast(t *testing.T, w *Walker, n int, d time.Duration, hz int, prefix string) []Stack {
	t.Helper()
	var out []Stack
	for deadline := time.Now().Add(time.Minute); len(out) < n && time.Now().Before(deadline); {
		out = append(out, profile(t, w, d, hz, prefix)...)
	}
	return out
}

// TestSamplingReachesRoot samples the Unwind workload with perf and requires 99.5% of its threads'
// samples to be walked to the thread's root.
func TestSamplingReachesRoot(t *testing.T) {
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		_, w := liveJVM(t, jdk, "Unwind", unwindArgs)
		stacks := profileAtLeast(t, w, 1000, 4*time.Second, 499, "uw-")
		reasons := map[Reason]int{}
		var complete int
		for _, st := range stacks {
			if st.Complete {
				complete++
			} else {
				reasons[st.Reason]++
			}
		}
		if len(stacks) < 1000 {
			t.Fatalf("only %d samples", len(stacks))
		}
		share := 100 * float64(complete) / float64(len(stacks))
		t.Logf("%s: %d/%d samples (%.2f%%) reached the thread root; broken: %v", jdk.Name(), complete, len(stacks), share, reasons)
		if share < 99.5 {
			shown := 0
			for _, st := range stacks {
				if !st.Complete && shown < 10 {
					shown++
					var fs []string
					for _, f := range st.Frames {
						fs = append(fs, f.String())
					}
					t.Logf("broken: %s", strings.Join(fs, " <- "))
				}
			}
			t.Errorf("%.2f%% of samples reached the root, want >= 99.5%%", share)
		}
	})
}

// TestSplit profiles a thread that spends 70% of its time in one method and 30% in another.
func TestSplit(t *testing.T) {
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		_, w := liveJVM(t, jdk, "Split", []string{"-XX:CompileCommand=quiet", "-XX:CompileCommand=dontinline,Split::burn*"})
		stacks := profileAtLeast(t, w, 600, 3*time.Second, 999, "jvmkit-split")
		counts := map[string]int{}
		for _, st := range stacks {
			for _, f := range st.Frames {
				if f.Java() {
					counts[f.Name]++
					break
				}
			}
		}
		a, b := counts["Split.burn70"], counts["Split.burn30"]
		if a+b < 500 || a+b < len(stacks)*9/10 {
			t.Fatalf("%d samples in the burn methods of %d: %v", a+b, len(stacks), top(counts))
		}
		share := 100 * float64(a) / float64(a+b)
		t.Logf("%s: burn70 %d, burn30 %d samples: %.1f%% / %.1f%% (want 70/30 within 5 points)", jdk.Name(), a, b, share, 100-share)
		if share < 65 || share > 75 {
			t.Errorf("split %.1f/%.1f, want 70/30 within 5 points", share, 100-share)
		}
	})
}

func top(m map[string]int) string {
	type kv struct {
		k string
		v int
	}
	var s []kv
	for k, v := range m {
		s = append(s, kv{k, v})
	}
	sort.Slice(s, func(i, j int) bool { return s[i].v > s[j].v })
	var b strings.Builder
	for i, e := range s {
		if i == 10 {
			break
		}
		fmt.Fprintf(&b, "%s=%d ", e.k, e.v)
	}
	return b.String()
}
