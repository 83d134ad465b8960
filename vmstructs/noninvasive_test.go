package vmstructs_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jvmkit/jvmkit/internal/testutil"
	"github.com/jvmkit/jvmkit/vmstructs"
)

// TestReadingDoesNotStall reads the code cache, the threads and the flags of a JVM over and over
// while a ticker thread in it measures how late its 10 ms sleeps wake up: reading through
// /proc/<pid>/mem stops nothing, so no tick may come late beyond scheduling noise.
func TestReadingDoesNotStall(t *testing.T) {
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		cp := testutil.CompileFiles(t, jdk, "../attach/testdata/Ticker.java")
		j := testutil.StartJVM(t, jdk, testutil.JVMOptions{Main: "Ticker", ClassPath: cp, Args: []string{"200"}})
		vm, err := vmstructs.Open(context.Background(), j.PID)
		if err != nil {
			t.Fatal(err)
		}
		defer vm.Close()
		seen := len(j.Stdout())
		rounds := 0
		for end := time.Now().Add(3 * time.Second); time.Now().Before(end); rounds++ {
			if _, err := vm.CodeBlobs(); err != nil {
				t.Fatal(err)
			}
			if _, err := vm.Threads(); err != nil {
				t.Fatal(err)
			}
			if _, err := vm.Flags(); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(100 * time.Millisecond)
		worst := 0
		for _, line := range strings.Split(j.Stdout()[seen:], "\n") {
			if v, ok := strings.CutPrefix(line, "stall "); ok {
				if n, _ := strconv.Atoi(v); n > worst {
					worst = n
				}
			}
		}
		t.Logf("%d rounds of code cache + threads + flags in 3 s; worst tick delay beyond 100 ms: %d ms", rounds, worst)
		// A stopped JVM would show every round as a stall; 2 cores shared with other work give noise.
		if worst >= 500 {
			t.Errorf("the JVM stalled %d ms while being read", worst)
		}
	})
}
