package fleet_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"
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
	var b []byte
	// Pyroscope's querier sometimes fails a query on its own (a 500 "canceled: stream error ... CANCEL"
	// between its components, once in a make test run): asked again, it answers. The answer is then
	// compared exactly; only its own errors are retried, twice, and logged.
	for attempt := 1; ; attempt++ {
		resp, err := queryClient.Post(url+"/querier.v1.QuerierService/SelectMergeStacktraces", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatalf("pyroscope query: %v", err)
		}
		b, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			break
		}
		if resp.StatusCode < 500 || attempt == 3 {
			t.Fatalf("pyroscope query %s: %s: %s", req["labelSelector"], resp.Status, b)
		}
		t.Logf("pyroscope query %s: %s: %s; asking again", req["labelSelector"], resp.Status, b)
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
