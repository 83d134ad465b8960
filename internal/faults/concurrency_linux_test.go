package faults_test

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/jvmkit/jvmkit/internal/testutil"
	"github.com/jvmkit/jvmkit/perfmap"
)

type mapsJSON struct {
	JVMs []struct {
		PID      int      `json:"pid"`
		Strategy string   `json:"strategy"`
		Entries  int      `json:"entries"`
		Paths    []string `json:"paths"`
		Error    string   `json:"error"`
	} `json:"jvms"`
}

// TestConcurrentGjmaps runs 3 to 5 writers of the same 8 JVMs' maps at once (half JDK 17, half the newest
// JDK), 20 rounds: gjmaps, each with a strategy of its own, and gjcmd Compiler.perfmap. Every run that
// reports a map must report a complete one (the entry count of a lone run with its strategy, within the
// JIT's churn), and after each round every JVM's map file must be whole and be what one of the runs
// wrote: no run reports success for a map it did not write, no map is empty or cut.
func TestConcurrentGjmaps(t *testing.T) {
	testutil.MustHaveRoot(t)
	jdks := testutil.JDKs(t)
	newest := jdks[len(jdks)-1]
	var jvms []*testutil.JVM
	var pids []string
	for i := range 8 {
		jdk := testutil.JDK17(t)
		if i%2 == 1 {
			jdk = newest
		}
		j := testutil.StartJVM(t, jdk, testutil.JVMOptions{JVMArgs: []string{"-Xmx32m"}})
		jvms = append(jvms, j)
		pids = append(pids, strconv.Itoa(j.PID))
		t.Cleanup(func() { os.Remove("/tmp/perf-" + strconv.Itoa(j.PID) + ".map") })
	}
	all := strings.Join(pids, ",")
	strategies := []string{"vmstructs", "jcmd", "agent", "auto", "gjcmd"}

	// A lone run of each strategy: the entry counts every concurrent run must reach.
	lone := map[string]map[int]int{}
	for _, s := range strategies[:4] {
		r := tool(t, "gjmaps", "-p", all, "--strategy", s, "--json")
		var m mapsJSON
		if err := json.Unmarshal([]byte(r.stdout), &m); err != nil || r.code != 0 {
			t.Fatalf("lone %s run: %v\n%s", s, err, r)
		}
		lone[s] = map[int]int{}
		for _, j := range m.JVMs {
			lone[s][j.PID] = j.Entries
		}
	}
	t.Logf("lone runs: %v", lone)
	// The JIT's churn: an idle JVM compiles the odd method late; a map may differ by this much.
	churn := func(n int) int { return max(4, n/50) }

	rng := rand.New(rand.NewPCG(testutil.Seed(t), 0))
	reported, complete, failed := 0, 0, 0
	for round := range 20 {
		n := 3 + rng.IntN(3)
		var chosen []string
		for range n {
			chosen = append(chosen, strategies[rng.IntN(len(strategies))])
		}
		results := make([]result, n)
		var wg sync.WaitGroup
		gjcmd := false
		for i, s := range chosen {
			if s == "gjcmd" {
				gjcmd = true
				wg.Go(func() {
					for _, p := range pids {
						if r := tool(t, "gjcmd", p, "Compiler.perfmap"); r.code != 0 {
							t.Errorf("round %d: %s", round, r)
						}
					}
				})
				continue
			}
			wg.Go(func() { results[i] = tool(t, "gjmaps", "-p", all, "--strategy", s, "--json") })
		}
		wg.Wait()
		wrote := map[int][]int{} // pid -> entry counts the runs reported for it
		for i, r := range results {
			if chosen[i] == "gjcmd" {
				continue
			}
			var m mapsJSON
			if err := json.Unmarshal([]byte(r.stdout), &m); err != nil {
				t.Fatalf("round %d: %s: bad JSON: %v\n%s", round, chosen[i], err, r)
			}
			for _, j := range m.JVMs {
				if j.Error != "" {
					failed++
					t.Errorf("round %d: %s run failed for %d: %s", round, chosen[i], j.PID, j.Error)
					continue
				}
				reported++
				want := lone[chosen[i]][j.PID]
				if chosen[i] == "auto" {
					want = lone["vmstructs"][j.PID]
				}
				if d := j.Entries - want; d < -churn(want) || d > churn(want) {
					t.Errorf("round %d: %s reported %d entries for %d; a lone run has %d", round, chosen[i], j.Entries, j.PID, want)
					continue
				}
				complete++
				wrote[j.PID] = append(wrote[j.PID], j.Entries)
			}
		}
		for _, p := range pids {
			pid, _ := strconv.Atoi(p)
			path := "/tmp/perf-" + p + ".map"
			f, err := os.Open(path)
			if err != nil {
				t.Errorf("round %d: %v", round, err)
				continue
			}
			entries, err := perfmap.Parse(f)
			f.Close()
			if gjcmd {
				// The JVM's own map, as gjcmd had it written.
				wrote[pid] = append(wrote[pid], lone["jcmd"][pid])
			}
			if err != nil || !slices.ContainsFunc(wrote[pid], func(n int) bool { return abs(n-len(entries)) <= churn(n) }) {
				t.Errorf("round %d: %s holds %d entries (%v); the runs reported %v", round, path, len(entries), err, wrote[pid])
			}
		}
	}
	t.Logf("20 rounds: %d maps reported, %d complete, %d failed runs", reported, complete, failed)
	// Temporary files of these JVMs' maps (other names in /tmp may belong to other tests running now).
	for _, p := range pids {
		if left, _ := filepath.Glob("/tmp/.perf-" + p + ".map.*.tmp"); len(left) > 0 {
			t.Errorf("left behind: %q", left)
		}
	}
	for _, j := range jvms {
		if !j.Alive() {
			t.Errorf("%s died", j)
		}
	}
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
