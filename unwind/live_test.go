//go:build linux && amd64

package unwind

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jvmkit/jvmkit/internal/testutil"
	"github.com/jvmkit/jvmkit/vmstructs"
)

// unwindArgs run the Unwind workload with every level of the recursion a frame of its own and one
// method that is always interpreted.
var unwindArgs = []string{
	"-XX:CompileCommand=quiet",
	"-XX:CompileCommand=dontinline,Unwind::rec",
	"-XX:CompileCommand=exclude,Unwind::interp",
	"-Xss1m",
}

// liveJVM starts a workload and opens it with a walker.
func liveJVM(t *testing.T, jdk testutil.JDK, main string, jvmArgs []string, args ...string) (*testutil.JVM, *Walker) {
	t.Helper()
	testutil.MustHaveRoot(t)
	jvm := testutil.StartJVM(t, jdk, testutil.JVMOptions{Main: main, JVMArgs: jvmArgs, Args: args})
	return jvm, openWalker(t, jvm.PID)
}

// openWalker opens a live JVM with a walker; the cleanup closes it.
func openWalker(t testing.TB, pid int) *Walker {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	j, err := vmstructs.Open(ctx, pid)
	if err != nil {
		t.Fatalf("open %d: %v", pid, err)
	}
	t.Cleanup(func() { j.Close() })
	w, err := New(j, Options{Native: NewProcessSymbols(pid), Kernel: &KernelSymbols{}})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// workloadThreads returns the host tids of the workload's threads by name prefix.
func workloadThreads(t testing.TB, w *Walker, prefix string) map[string]vmstructs.Thread {
	t.Helper()
	threads, err := w.JVM().Threads()
	if err != nil && len(threads) == 0 {
		t.Fatal(err)
	}
	out := map[string]vmstructs.Thread{}
	for _, th := range threads {
		if strings.HasPrefix(th.Name, prefix) {
			out[th.Name] = th
		}
	}
	return out
}

func hostTID(th vmstructs.Thread) int {
	if th.HostTID != 0 {
		return th.HostTID
	}
	return th.TID
}

// stopAndWalk walks one thread's stack while it is stopped.
func stopAndWalk(t *testing.T, w *Walker, th vmstructs.Thread) (Stack, error) {
	var st Stack
	err := StopThread(context.Background(), hostTID(th), 2*time.Second, func(r Regs) error {
		st = w.Walk(&Sample{TID: hostTID(th), JavaThread: th.JavaThread, Regs: r, Stopped: true})
		return nil
	})
	return st, err
}

// TestStoppedThreadsComplete stops each thread of the workload 40 times; at least 99.5% of the walks
// must be complete, and every complete one must have the thread's known shape.
func TestStoppedThreadsComplete(t *testing.T) {
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		_, w := liveJVM(t, jdk, "Unwind", unwindArgs)
		threads := workloadThreads(t, w, "uw-")
		n, broken := 0, 0
		for round := range 40 {
			for name, th := range threads {
				st, err := stopAndWalk(t, w, th)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				n++
				var fs []string
				for _, f := range st.Frames {
					fs = append(fs, f.String())
				}
				if mine, _ := ourFrames(st); !st.Complete {
					broken++
					t.Logf("round %d: %s: ended early (%v): %s", round, name, st.Reason, strings.Join(fs, " <- "))
				} else if !hasShape(name, mine) {
					t.Errorf("round %d: %s: not the thread's shape: %s", round, name, strings.Join(fs, " <- "))
				}
			}
			time.Sleep(time.Millisecond) // let the threads move on
		}
		t.Logf("%s: %d stopped-thread stacks walked: %v", jdk.Name(), n, w.Counts())
		if 1000*broken > 5*n {
			t.Errorf("%d of %d walks ended early, want at most 0.5%%", broken, n)
		}
	})
}
