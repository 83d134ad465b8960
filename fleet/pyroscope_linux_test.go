package fleet_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jvmkit/jvmkit/fleet"
	"github.com/jvmkit/jvmkit/internal/testutil"
)

// queryClient bounds each query: a Pyroscope that cannot answer fails the test instead of hanging it.
var queryClient = &http.Client{Timeout: 30 * time.Second}

// pyroscopeTotal asks Pyroscope (SelectMergeStacktraces, Connect JSON) for the CPU nanoseconds of the
// series with the given labels in [start, end), and the self time of each frame name.
func pyroscopeTotal(t *testing.T, url string, labels map[string]string, start, end time.Time) (int64, map[string]int64) {
	t.Helper()
	var sel []string
	for k, v := range labels {
		sel = append(sel, fmt.Sprintf("%s=%q", k, v))
	}
	sort.Strings(sel)
	req := map[string]any{
		"profileTypeID": "process_cpu:cpu:nanoseconds:cpu:nanoseconds",
		"labelSelector": "{" + strings.Join(sel, ",") + "}",
		"start":         start.UnixMilli(),
		"end":           end.UnixMilli() - 1, // a window's profile is stamped at its start: the next one starts at this end
	}
	body, _ := json.Marshal(req)
	resp, err := queryClient.Post(url+"/querier.v1.QuerierService/SelectMergeStacktraces", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("pyroscope query: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("pyroscope query %s: %s: %s", req["labelSelector"], resp.Status, b)
	}
	var r struct {
		Flamegraph struct {
			Names  []string `json:"names"`
			Levels []struct {
				Values []json.Number `json:"values"`
			} `json:"levels"`
			Total json.Number `json:"total"`
		} `json:"flamegraph"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("pyroscope answer %s: %v", b, err)
	}
	self := map[string]int64{}
	for _, l := range r.Flamegraph.Levels {
		// Each node is 4 values: offset, total, self, name index.
		for i := 0; i+3 < len(l.Values); i += 4 {
			s, _ := l.Values[i+2].Int64()
			ni, _ := l.Values[i+3].Int64()
			if s > 0 && int(ni) < len(r.Flamegraph.Names) {
				self[r.Flamegraph.Names[ni]] += s
			}
		}
	}
	total, _ := r.Flamegraph.Total.Int64()
	return total, self
}

// TestAgentPyroscope pushes two JVMs' windows to a real Pyroscope and reads them back with
// SelectMergeStacktraces: each window's CPU total per JVM series, and its leaf frames.
func TestAgentPyroscope(t *testing.T) {
	testutil.MustHaveRoot(t)
	jdks := testutil.JDKs(t)
	pyro := testutil.StartPyroscope(t)
	const window = 3 * time.Second
	ours := &ourJVMs{pids: map[int]bool{}}
	services := map[int]string{}
	for _, jdk := range []testutil.JDK{jdks[0], jdks[len(jdks)-1]} {
		svc := fmt.Sprintf("pyro-%d", jdk.Feature)
		j := testutil.StartJVM(t, jdk, testutil.JVMOptions{Main: "Busy", Env: []string{"OTEL_SERVICE_NAME=" + svc}})
		ours.add(j.PID)
		services[j.PID] = svc
	}
	tp := newTap()
	agent, err := fleet.New(fleet.Options{Window: window, Select: ours.selects, Sinks: []fleet.Sink{&fleet.Pyroscope{URL: pyro.URL}, tp}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { _ = agent.Run(ctx); close(ran) }()
	defer func() { stop(); <-ran }()
	n := len(tp.waitFor(t, time.Minute, "one window", func(b [][]*fleet.Window) bool { return len(b) >= 1 }))
	tp.waitFor(t, time.Minute, "three more windows", func(b [][]*fleet.Window) bool { return len(b) >= n+3 })
	stop()
	<-ran
	batches := tp.snapshot()
	want := map[int]struct{ service string }{}
	for pid, s := range services {
		want[pid] = struct{ service string }{s}
	}
	// Pyroscope has every window too: its CPU total for the JVM's series over the window's span.
	for i, b := range batches {
		for _, w := range b {
			p, _ := w.Profile()
			var sum int64
			for _, n := range folded(p) {
				sum += n * p.Period
			}
			got, self := pyroscopeTotal(t, pyro.URL, map[string]string{"service_name": want[w.Target.PID].service, "process_pid": strconv.Itoa(w.Target.PID)}, w.Start, w.End)
			if got != sum {
				t.Errorf("pid %d window %d: Pyroscope has %d ns of CPU, the agent sent %d", w.Target.PID, i, got, sum)
			}
			// The leaf frames (pprof: the first line of the first location, by its function's name, which is
			// what Pyroscope shows): each one's self time as the agent sent it.
			leaves := map[string]int64{}
			for _, s := range p.Sample {
				if len(s.Location) > 0 && len(s.Location[0].Line) > 0 {
					leaves[s.Location[0].Line[0].Function.Name] += s.Value[0] * p.Period
				}
			}
			for leaf, n := range leaves {
				if self[leaf] != n {
					t.Errorf("pid %d window %d: Pyroscope has %d ns in %q, the agent sent %d", w.Target.PID, i, self[leaf], leaf, n)
				}
			}
		}
	}
}
