package hotspot_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jvmkit/jvmkit/flame"
	"github.com/jvmkit/jvmkit/internal/testutil"
	"github.com/jvmkit/jvmkit/unwind"
	"github.com/jvmkit/jvmkit/usdt"
	"github.com/jvmkit/jvmkit/usdt/hotspot"
	"github.com/jvmkit/jvmkit/vmstructs"
)

// The AllocStacks workload allocates each class from a method of its own.
var allocatingMethod = map[string]string{
	"AllocStacks$Small": "AllocStacks.allocSmall",
	"AllocStacks$Large": "AllocStacks.allocLarge",
	"long[]":            "AllocStacks.allocArrays",
}

// TestAllocStacks records allocation stacks of the AllocStacks workload two ways per JDK: with every
// allocation firing (-XX:+DTraceAllocProbes, one firing in 64 recorded), through TraceAlloc; and with the
// flag switched on at run time, through jvmkit alloc --stacks --switch-flags. It counts the stacks that
// have Java frames and reach the thread's root, and those whose first Java frame is the method that
// allocates the class.
//
// JDK 21+'s C2 calls the probe's function as a leaf call without debug information at its return
// address, so the walker names the compiled method the allocation was inlined into, not the allocating
// method (see the package documentation): there the method share is measured, not required.
func TestAllocStacks(t *testing.T) {
	testutil.MustHaveBPF(t)
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		t.Parallel() // two JDKs at a time: the stacks are checked one by one, whatever the machine's load
		testutil.SkipWithoutProbes(t, jdk)
		t.Run("all", func(t *testing.T) {
			j := testutil.StartJVM(t, jdk, testutil.JVMOptions{
				Main: "AllocStacks", JVMArgs: []string{"-XX:+DTraceAllocProbes", "-Xmx128m"},
			})
			ctx := context.Background()
			jvm, err := vmstructs.Open(ctx, j.PID)
			if err != nil {
				t.Fatal(err)
			}
			defer jvm.Close()
			w, err := unwind.New(jvm, unwind.Options{Native: unwind.NewProcessSymbols(j.PID)})
			if err != nil {
				t.Fatal(err)
			}
			mods, err := usdt.Modules(ctx, j.PID)
			if err != nil {
				t.Fatal(err)
			}
			tr, err := hotspot.TraceAlloc(ctx, j.PID, mods, hotspot.AllocOptions{Stacks: w, Sample: 64})
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			time.Sleep(2 * time.Second)
			if err := tr.Stop(); err != nil {
				t.Fatal(err)
			}
			p, err := tr.Profile()
			if err != nil {
				t.Fatal(err)
			}
			var n, root, lost uint64
			hits, counts := map[string]uint64{}, map[string]uint64{}
			for _, s := range p.Stacks {
				n += s.Count
				f := s.FirstJava()
				if s.Complete && f != nil {
					root += s.Count
				}
				if want, ok := allocatingMethod[s.Class]; ok {
					counts[s.Class] += s.Count
					if f != nil && f.Name == want {
						hits[s.Class] += s.Count
					}
				}
			}
			lost = p.Lost
			t.Logf("%s, every allocation firing, 1 in 64 recorded: %d stacks in 2 s (%d lost), %.2f%% reach the thread root through Java frames",
				jdk.Name(), n, lost, pct(root, n))
			method := checkMethods(t, hits, counts, jdk.Feature < 21)
			if n < 1000 || pct(root, n) < 95 || !method {
				t.Errorf("want at least 1000 stacks, 95%% of them complete and 90%% naming the allocating method")
			}
		})
		t.Run("switched", func(t *testing.T) {
			j := testutil.StartJVM(t, jdk, testutil.JVMOptions{Main: "AllocStacks", JVMArgs: []string{"-Xmx128m"}})
			out, errOut, code := jvmkit(t, "alloc", strconv.Itoa(j.PID), "--stacks", "--switch-flags", "--duration", "2s")
			if code != 0 {
				t.Fatalf("jvmkit alloc --stacks: exit status %d\n%s", code, errOut)
			}
			folded, err := flame.ParseFolded(strings.NewReader(out))
			if err != nil {
				t.Fatal(err)
			}
			var n, root uint64
			hits, counts := map[string]uint64{}, map[string]uint64{}
			for _, s := range folded.Stacks {
				c, frames := uint64(s.Count), s.Frames
				n += c
				// Thread name, java.lang.Thread.run, ..., the allocating method, the class.
				if len(frames) > 3 && frames[1] == "java.lang.Thread.run" {
					root += c
				}
				class := frames[len(frames)-1]
				if want, ok := allocatingMethod[class]; ok && len(frames) > 1 {
					counts[class] += c
					if strings.TrimSuffix(strings.TrimSuffix(frames[len(frames)-2], "_[i]"), "_[j]") == want {
						hits[class] += c
					}
				}
			}
			t.Logf("%s, switched on: %d stacks in 2 s, %.2f%% rooted at java.lang.Thread.run; %s", jdk.Name(), n, pct(root, n),
				strings.TrimSpace(errOut[strings.LastIndex(strings.TrimSpace(errOut), "\n")+1:]))
			if !checkMethods(t, hits, counts, true) || n < 100 || pct(root, n) < 95 {
				t.Errorf("want at least 100 stacks, 95%% of them rooted at Thread.run and 90%% naming the allocating method\n%s", out)
			}
		})
	})
}

func pct(x, n uint64) float64 {
	if n == 0 {
		return 0
	}
	return 100 * float64(x) / float64(n)
}

// checkMethods logs the share of each class's stacks that name its allocating method; with require, it
// reports whether all are at least 90%.
func checkMethods(t *testing.T, hits, counts map[string]uint64, require bool) bool {
	t.Helper()
	ok := true
	var parts []string
	for class, want := range allocatingMethod {
		share := pct(hits[class], counts[class])
		parts = append(parts, class+" in "+want+": "+strconv.FormatFloat(share, 'f', 2, 64)+"% of "+strconv.FormatUint(counts[class], 10))
		if counts[class] == 0 || share < 90 {
			ok = false
		}
	}
	t.Logf("first Java frame is the allocating method: %s", strings.Join(parts, ", "))
	return ok || !require
}
