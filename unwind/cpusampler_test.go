//go:build linux && amd64

package unwind

import (
	"testing"
	"time"

	"github.com/jvmkit/jvmkit/internal/testutil"
)

// TestCPUSampler samples two busy JVMs with one event per CPU, only one of them chosen: every
// sample is of the chosen JVM, its walks reach the thread root as a Sampler's do, after Remove no
// further sample comes, and the other JVM's come once it is added.
func TestCPUSampler(t *testing.T) {
	testutil.MustHaveBPF(t)
	jdk := testutil.JDK17(t)
	chosen, w := liveJVM(t, jdk, "Unwind", unwindArgs)
	other := testutil.StartJVM(t, jdk, testutil.JVMOptions{Main: "Unwind", JVMArgs: unwindArgs})
	s, err := NewCPUSampler(SamplerOptions{Frequency: 499})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Add(chosen.PID); err != nil {
		t.Fatal(err)
	}
	names := commThreads(t, chosen.PID, "uw-")
	var total, walked, complete, foreign int
	deadline := time.Now().Add(time.Minute)
	for walked < 1000 && time.Now().Before(deadline) {
		time.Sleep(s.DrainEvery()) // a poll interval, not synchronisation
		s.Drain(func(smp *Sample) {
			total++
			if smp.PID != chosen.PID {
				foreign++
				return
			}
			st := w.Walk(smp)
			if _, ok := names[smp.TID]; ok {
				walked++
				if st.Complete {
					complete++
				}
			}
		})
	}
	if foreign > 0 {
		t.Errorf("%d of %d samples are of another process (want only %d's; %d was busy too)", foreign, total, chosen.PID, other.PID)
	}
	if walked < 1000 {
		t.Fatalf("only %d samples of the workload's threads in a minute", walked)
	}
	share := 100 * float64(complete) / float64(walked)
	t.Logf("%d samples, %d of the workload's threads, %.2f%% reached the root; lost %d", total, walked, share, s.Lost())
	if share < 99.5 {
		t.Errorf("%.2f%% of samples reached the root, want >= 99.5%%", share)
	}
	s.Remove(chosen.PID)
	s.Drain(func(*Sample) {})          // what was taken before Remove
	time.Sleep(300 * time.Millisecond) // a span to sample nothing in, not synchronisation
	n := 0
	s.Drain(func(*Sample) { n++ })
	if n > 0 {
		t.Errorf("%d samples after Remove", n)
	}
	if err := s.Add(other.PID); err != nil {
		t.Fatal(err)
	}
	n = 0
	for deadline := time.Now().Add(30 * time.Second); n < 100 && time.Now().Before(deadline); {
		time.Sleep(s.DrainEvery()) // a poll interval, not synchronisation
		s.Drain(func(smp *Sample) {
			if smp.PID == other.PID {
				n++
			}
		})
	}
	if n < 100 {
		t.Errorf("%d samples of the other JVM once added, want >= 100 (it was busy all along)", n)
	}
}
