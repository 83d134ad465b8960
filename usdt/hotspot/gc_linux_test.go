package hotspot_test

import (
	"cmp"
	"encoding/json"
	"math"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jvmkit/jvmkit/internal/testutil"
	"github.com/jvmkit/jvmkit/usdt/hotspot"
)

// xlogPause is a pause line of -Xlog:gc (and gc+phases for ZGC) with the timenanos decoration:
// "[6113869925087ns][6097448091ns] GC(0) Pause Young (Allocation Failure) 32M->15M(123M) 393.574ms".
var xlogPause = regexp.MustCompile(`(?m)^\[(\d+)ns\]\[\d+ns\] GC\(\d+\) (?:[YOyo]: )?Pause ([A-Za-z ]+?)(?: \((?:[^()]|\([^()]*\))*\))*(?: (\d+)M->(\d+)M\(\d+M\))? ([0-9.]+)ms$`)

type loggedPause struct {
	end      uint64 // timenanos: printed as the pause ends
	kind     string // "Young", "Full", "Remark", "Cleanup", "Mark Start", ...
	before   int    // heap MB, -1 when the line has none
	after    int
	duration time.Duration
}

func parseXlog(s string) []loggedPause {
	var out []loggedPause
	for _, m := range xlogPause.FindAllStringSubmatch(s, -1) {
		end, _ := strconv.ParseUint(m[1], 10, 64)
		ms, _ := strconv.ParseFloat(m[5], 64)
		p := loggedPause{end: end, kind: m[2], before: -1, after: -1, duration: time.Duration(ms * 1e6)}
		if m[3] != "" {
			p.before, _ = strconv.Atoi(m[3])
			p.after, _ = strconv.Atoi(m[4])
		}
		out = append(out, p)
	}
	return out
}

type gcOutput struct {
	Schema string `json:"schema"`
	Data   struct {
		DurationNS  int64             `json:"duration_ns"`
		WindowStart uint64            `json:"window_start_ns"`
		WindowEnd   uint64            `json:"window_end_ns"`
		Pauses      []hotspot.Pause   `json:"pauses"`
		Summary     hotspot.GCSummary `json:"summary"`
	} `json:"data"`
}

// heapMB sums the heap pools of a pause, before and after, in MB as -Xlog:gc rounds them (down).
func heapMB(p *hotspot.Pause) (before, after int) {
	var b, a uint64
	for i := range p.Pools {
		if p.Pools[i].Heap() {
			b += p.Pools[i].Before
			a += p.Pools[i].After
		}
	}
	return int(b >> 20), int(a >> 20)
}

// TestGCAgainstXlog compares jvmkit gc with the JVM's own -Xlog:gc (timenanos, the same clock as the
// probes) on Serial, Parallel, G1 and ZGC, on every JDK, with a workload that makes young, full (the old
// generation filling up, and System.gc()), and, on G1, Remark and Cleanup pauses: every logged pause
// inside the traced window is traced, one to one, full ones flagged full; durations agree with the log's
// (ZGC's log times its pauses around the probes, whose own cost is a large part of
// pauses of 15-40 µs: counts only); pool figures of G1's pauses equal the log's
// heap before and after; duration_ns is the traced window.
func TestGCAgainstXlog(t *testing.T) {
	testutil.MustHaveBPF(t)
	collectors := []struct {
		name string
		args []string
		mix  []string // GCMix's retained MB and System.gc period
	}{
		{"serial", []string{"-XX:+UseSerialGC", "-Xmx128m"}, []string{"50", "1500"}},
		{"parallel", []string{"-XX:+UseParallelGC", "-Xmx128m"}, []string{"50", "1500"}},
		{"g1", []string{"-XX:+UseG1GC", "-Xmx128m"}, []string{"60", "1500"}},
		{"z", []string{"-XX:+UseZGC", "-Xmx256m"}, []string{"40", "0"}},
	}
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		testutil.SkipWithoutProbes(t, jdk)
		for _, c := range collectors {
			t.Run(c.name, func(t *testing.T) {
				logSpec := "-Xlog:gc:stdout:timenanos,uptimenanos"
				if c.name == "z" {
					logSpec = "-Xlog:gc,gc+phases:stdout:timenanos,uptimenanos"
				}
				j := testutil.StartJVM(t, jdk, testutil.JVMOptions{Main: "GCMix", Args: c.mix, JVMArgs: append(c.args, logSpec)})
				out, errOut, code := jvmkit(t, "gc", strconv.Itoa(j.PID), "--duration", "3s", "--json")
				if code != 0 {
					t.Fatalf("jvmkit gc: exit status %d\n%s", code, errOut)
				}
				var g gcOutput
				if err := json.Unmarshal([]byte(out), &g); err != nil || g.Schema != "jvmkit.gc/v1" {
					t.Fatalf("jvmkit gc --json: %v\n%s", err, out)
				}
				d := &g.Data
				if window := int64(d.WindowEnd - d.WindowStart); d.WindowStart == 0 || math.Abs(float64(window-d.DurationNS)) > 0.01*float64(window) {
					t.Errorf("duration_ns %d, window %d..%d", d.DurationNS, d.WindowStart, d.WindowEnd)
				}
				// The log line of a pause is printed as it ends: wait for one after the window.
				deadline := time.Now().Add(10 * time.Second)
				var logged []loggedPause
				for {
					logged = parseXlog(j.Stdout())
					if len(logged) > 0 && logged[len(logged)-1].end > d.WindowEnd || time.Now().After(deadline) {
						break
					}
					time.Sleep(50 * time.Millisecond)
				}
				// Compare the pauses well inside the window: one straddling its edges may be in either.
				lo, hi := d.WindowStart+uint64(100*time.Millisecond), d.WindowEnd-uint64(100*time.Millisecond)
				inWindow := func(end uint64) bool { return end >= lo && end <= hi }
				// A pause at an edge can be inside by one end and outside by the other (the log's line
				// is printed a little before gc__end): logged and traced pauses a little beyond the edges
				// are matched one to one too, and only those inside count (a logged one missing, a
				// traced one extra).
				edge := uint64(20 * time.Millisecond)
				var logBand []loggedPause
				nIn := 0 // logged pauses inside the window
				for _, p := range logged {
					if p.end+edge >= lo && p.end <= hi+edge {
						logBand = append(logBand, p)
					}
					if inWindow(p.end) {
						nIn++
					}
				}
				var traced []hotspot.Pause
				for _, p := range d.Pauses {
					if e := p.Start + uint64(p.Duration); e+edge >= lo && e <= hi+edge {
						traced = append(traced, p)
					}
				}
				slices.SortStableFunc(traced, func(a, b hotspot.Pause) int { return cmp.Compare(a.Start, b.Start) })
				used := make([]bool, len(traced))
				match := matchPauses(logBand, traced)
				var missing, wrongFull, pools, poolsOff, remarks, durations, longer int
				var sumDiff float64
				kinds := map[string]int{}
				for k, lp := range logBand {
					in := inWindow(lp.end)
					if in {
						kinds[lp.kind]++
					}
					best := match[k]
					if best < 0 {
						if !in {
							continue
						}
						missing++
						nearest := uint64(math.MaxUint64)
						for _, p := range traced {
							nearest = min(nearest, pauseDistance(lp, p))
						}
						t.Logf("logged pause %s of %v ending at %d: not traced (nearest %v away)", lp.kind, lp.duration, lp.end, time.Duration(nearest))
						continue
					}
					used[best] = true
					if !in {
						continue
					}
					p := &traced[best]
					if p.Full != (lp.kind == "Full") {
						wrongFull++
						t.Errorf("logged pause %s ending at %d traced with full=%t (manager %q)", lp.kind, lp.end, p.Full, p.Manager)
					}
					sumDiff += math.Abs(float64(p.Duration - lp.duration))
					// A young collection that failed over to a full one in the same safepoint (Serial) is
					// traced until the full one's manager reports: HotSpot fires nothing where it ends.
					failedOver := best+1 < len(traced) && traced[best+1].Start == p.Start+uint64(p.Duration)
					// The probes bracket the log's timed span of a collection (it starts after gc__begin
					// or the manager's first report, and ends before gc__end): such a traced pause is never
					// shorter. Longer, by how long the VM thread was off the CPU in between on a loaded
					// machine. G1's Remark and Cleanup are the other way round: their log timer starts
					// before the monitoring scope and SvcGCMarker that fire the probes and stops after them
					// (VM_G1PauseConcurrent::doit), so the log's span holds the traced one; on a loaded
					// machine it was once 645 µs longer (0.819 ms logged, 174 µs traced, JDK 17).
					logHolds := c.name == "g1" && (lp.kind == "Remark" || lp.kind == "Cleanup")
					if c.name != "z" && !failedOver {
						durations++
						switch {
						case lp.kind == "Full":
							// A full collection's pause is its manager's probes, which run inside the
							// log's "Pause Full" timer (Serial's collect_generation, G1's full collector):
							// traced shorter, by 0.14-0.64 ms measured on a loaded machine (JDK 17 Serial,
							// JDK 25 G1, 2026-11-30), or longer where gc__begin/end bound it. No direction
							// is asserted; the count of pauses longer by more than 1 ms and 10% is.
						case logHolds && p.Duration > lp.duration+500*time.Microsecond:
							t.Errorf("logged pause %s: %v, traced %v: longer, though the log's timer holds the probes", lp.kind, lp.duration, p.Duration)
						case !logHolds && p.Duration+500*time.Microsecond < lp.duration:
							t.Errorf("logged pause %s: %v, traced %v: shorter", lp.kind, lp.duration, p.Duration)
						}
						if diff := p.Duration - lp.duration; diff > time.Millisecond && diff > lp.duration/10 {
							longer++
						}
					}
					if lp.before >= 0 && len(p.Pools) > 0 {
						// The pools are what the JVM's memory managers report; the log's heap figures
						// are the heap's own. They agree after every pause, and before G1's Remark and
						// Cleanup (the issue); G1's pools lag the heap by the regions being allocated
						// into before a young pause (one or two regions), which is HotSpot's own figure.
						pools++
						b, a := heapMB(p)
						// At Remark and Cleanup the pools are as the last young pause left them, while the
						// log's heap also counts what was allocated since into the current regions: up to
						// two regions (1 MB each in this heap) apart, measured.
						exact := lp.kind == "Remark" || lp.kind == "Cleanup"
						if absInt(a-lp.after) > 2 || exact && absInt(b-lp.before) > 2 {
							poolsOff++
							t.Errorf("logged pause %s %dM->%dM, traced pools %dM->%dM (manager %q)", lp.kind, lp.before, lp.after, b, a, p.Manager)
						}
						if exact {
							remarks++
						}
					}
				}
				// Every G1 Remark and Cleanup has heap figures: the "G1 Concurrent GC" manager's pools from
				// JDK 21, the heap's own used bytes read by the probes before (jvmkit gc finds the counter
				// through VMStructs).
				if c.name == "g1" && remarks < kinds["Remark"]+kinds["Cleanup"] {
					t.Errorf("%d of %d Remark and Cleanup pauses have heap figures, want all", remarks, kinds["Remark"]+kinds["Cleanup"])
				}
				// Every logged pause must be traced. Known gap, not explained yet: ZGC on JDK 21 once had one
				// of 294 pauses (a 0.7 ms Mark Start among ~100 pauses a second) with no traced pause
				// within 5 ms; it is tolerated there up to 1 in 200 and always logged.
				if allowed := 0; missing > 0 {
					if c.name == "z" {
						allowed = nIn / 200
					}
					if missing > allowed {
						t.Errorf("%d of %d logged pauses not traced (see above)", missing, nIn)
					}
				}
				extra, inside := 0, 0
				for i, u := range used {
					p := traced[i]
					if !inWindow(p.Start + uint64(p.Duration)) {
						continue
					}
					inside++
					if !u {
						extra++
						t.Errorf("traced pause at %d, %v, full %t, manager %q: not in the log; its lines near it:\n%s",
							p.Start, p.Duration, p.Full, p.Manager, linesNear(j.Stdout(), p.Start, 20*time.Millisecond))
					}
				}
				t.Logf("%s %s: %d pauses logged inside the window %v, %d traced; %d missing, %d extra, %d with the wrong full flag; "+
					"mean |duration difference| %v (%d of %d compared longer by more than 1 ms and 10%%); %d pauses with pools (%d Remark or Cleanup), %d off; kinds %v",
					jdk.Name(), c.name, nIn, time.Duration(d.DurationNS), inside, missing, extra, wrongFull,
					time.Duration(sumDiff/float64(max(1, nIn))), longer, durations, pools, remarks, poolsOff, kinds)
				if mean := sumDiff / float64(max(1, nIn)); mean > float64(time.Millisecond) {
					t.Errorf("traced durations differ from the log's by %v on average", time.Duration(mean))
				}
				if nIn == 0 {
					t.Errorf("no pause logged inside the window:\n%s", strings.Join(strings.Split(j.Stdout(), "\n")[:min(20, strings.Count(j.Stdout(), "\n"))], "\n"))
				}
			})
		}
	})
}

// pauseDistance is how far apart a logged and a traced pause are in time: 0 when their spans overlap (the
// log's span is its end less its duration).
// matchPauses pairs logged pauses (by their lines' times) with traced ones (by start), one to one and
// in order: the pauses of a JVM are its VM thread's, one after the other, so the pairs never cross. Of
// the pairings, the one of least cost: a pair costs its distance (at most 5 ms), plus 5 ms if one is full
// and the other not (where Serial's young collection fails over to a full one in the same safepoint, the
// traced boundary between the two is where the full one's manager first reports, and the log's young
// span can overlap the traced full pause); a pause left unpaired costs 5 ms. It returns, for each logged
// pause, the index of its traced one, or -1.
//
// The nearest traced pause is not always the right one: the log's line is printed as the pause ends,
// late when the VM thread is off the CPU or its stdout's pipe is full. Once (ZGC, JDK 25) a Mark End's
// line came 4.4 ms after its traced pause, 0.7 ms before the next pause (Relocate Start); matched to the
// nearest, the Mark End took the Relocate Start's traced pause, leaving one missing and one extra.
func matchPauses(logged []loggedPause, traced []hotspot.Pause) []int {
	const limit, skip = uint64(5 * time.Millisecond), uint64(5 * time.Millisecond)
	n, m := len(logged), len(traced)
	pair := func(i, j int) (uint64, bool) {
		d := pauseDistance(logged[i], traced[j])
		if d > limit {
			return 0, false
		}
		if traced[j].Full != (logged[i].kind == "Full") {
			d += skip
		}
		return d, true
	}
	// cost[i][j]: the least cost of the first i logged and j traced pauses.
	cost := make([][]uint64, n+1)
	for i := range cost {
		cost[i] = make([]uint64, m+1)
		for j := range cost[i] {
			switch {
			case i == 0:
				cost[i][j] = uint64(j) * skip
			case j == 0:
				cost[i][j] = uint64(i) * skip
			default:
				c := min(cost[i-1][j], cost[i][j-1]) + skip
				if d, ok := pair(i-1, j-1); ok {
					c = min(c, cost[i-1][j-1]+d)
				}
				cost[i][j] = c
			}
		}
	}
	match := make([]int, n)
	for i, j := n, m; i > 0; {
		if j > 0 {
			if d, ok := pair(i-1, j-1); ok && cost[i][j] == cost[i-1][j-1]+d {
				match[i-1] = j - 1
				i, j = i-1, j-1
				continue
			}
			if cost[i][j] == cost[i][j-1]+skip {
				j--
				continue
			}
		}
		match[i-1] = -1
		i--
	}
	return match
}

func pauseDistance(lp loggedPause, p hotspot.Pause) uint64 {
	lstart, e := lp.end-uint64(lp.duration), p.Start+uint64(p.Duration)
	switch {
	case e < lstart:
		return lstart - e
	case p.Start > lp.end:
		return p.Start - lp.end
	}
	return 0
}

var xlogTime = regexp.MustCompile(`^\[(\d+)ns\]`)

// linesNear returns the lines of the log whose timenanos decoration lies within d of t, and the lines
// without one among them (a log line the workload's own output broke would be one).
func linesNear(log string, t uint64, d time.Duration) string {
	var out []string
	near := false
	for _, line := range strings.Split(log, "\n") {
		if m := xlogTime.FindStringSubmatch(line); m != nil {
			ns, _ := strconv.ParseUint(m[1], 10, 64)
			near = ns+uint64(d) >= t && ns <= t+uint64(d)
		}
		if near {
			out = append(out, "\t"+line)
		}
	}
	return strings.Join(out, "\n")
}

func absInt(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// TestHeldJVM: a trace of a JVM that cannot run (frozen by its cgroup, as podman pause does, or stopped by
// SIGSTOP) says so, instead of printing an empty result that looks like an idle JVM; it still ends and
// exits 0 (what it found is what there was).
func TestHeldJVM(t *testing.T) {
	testutil.MustHaveBPF(t)
	jdk := testutil.JDK17(t)
	testutil.SkipWithoutProbes(t, jdk)
	j := testutil.StartJVM(t, jdk, testutil.JVMOptions{Main: "GCMix", Args: []string{"20", "0"}, JVMArgs: []string{"-Xmx64m"}})
	pid := strconv.Itoa(j.PID)
	for _, c := range []struct {
		how  string
		hold func() (release func())
		want string
	}{
		{"frozen", func() func() { return testutil.Freeze(t, j.PID) }, "frozen by its cgroup's freezer (podman or docker pause)"},
		{"stopped", func() func() { return testutil.StopProcess(t, j.PID) }, "is stopped (state T): resume it (kill -CONT " + pid + ")"},
	} {
		release := c.hold()
		_, errOut, code := jvmkit(t, "gc", pid, "--duration", "200ms")
		release()
		if code != 0 || !strings.Contains(errOut, c.want) || !strings.Contains(errOut, "it runs nothing until then") {
			t.Errorf("jvmkit gc of a %s JVM: exit status %d, want 0 and %q\n%s", c.how, code, c.want, errOut)
		}
	}
	if _, errOut, code := jvmkit(t, "gc", pid, "--duration", "200ms"); code != 0 || strings.Contains(errOut, "runs nothing") || strings.Contains(errOut, "could not run") {
		t.Errorf("jvmkit gc of the JVM running again: exit status %d\n%s", code, errOut)
	}
	// Held in the middle of the trace (a user trial paused a container for 6 s of 8): said at the end.
	cmd := exec.Command(testutil.BuildTool(t, "cmd/jvmkit"), "gc", pid, "--duration", "4s")
	var errBuf testutil.SyncBuffer
	cmd.Stderr = &errBuf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); !strings.Contains(errBuf.String(), "tracing collections"); {
		if time.Now().After(deadline) {
			t.Fatalf("jvmkit gc did not start tracing in a minute:\n%s", errBuf.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	thaw := testutil.Freeze(t, j.PID)
	time.Sleep(2 * time.Second) // held for half of the trace
	thaw()
	err := cmd.Wait()
	if errOut := errBuf.String(); err != nil || !strings.Contains(errOut, "could not run for about") || !strings.Contains(errOut, "frozen") {
		t.Errorf("jvmkit gc of a JVM frozen mid-trace: %v, want status 0 and a note\n%s", err, errOut)
	}
}

// TestMatchPauses: the pairing is one to one and in order, not each logged pause's nearest traced one.
func TestMatchPauses(t *testing.T) {
	ms := func(f float64) uint64 { return uint64(f * float64(time.Millisecond)) }
	tr := func(start, dur float64, full bool) hotspot.Pause {
		return hotspot.Pause{Start: ms(start), Duration: time.Duration(ms(dur)), Full: full}
	}
	lg := func(end, dur float64, kind string) loggedPause {
		return loggedPause{end: ms(end), kind: kind, duration: time.Duration(ms(dur))}
	}
	for _, c := range []struct {
		name   string
		logged []loggedPause
		traced []hotspot.Pause
		want   []int
	}{{
		// ZGC, JDK 25 (CI, 2026-11-30): Mark End's line 4.4 ms after its traced pause, 0.7 ms before
		// Relocate Start's; the nearest-first pairing gave Mark End the Relocate Start.
		name:   "late line",
		logged: []loggedPause{lg(544.908, 0.051, "Mark Start"), lg(552.071, 0.044, "Mark End"), lg(552.847, 0.052, "Relocate Start")},
		traced: []hotspot.Pause{tr(544.85, 0.055, false), tr(547.607, 0.032, false), tr(552.79, 0.054, false)},
		want:   []int{0, 1, 2},
	}, {
		name:   "one missing",
		logged: []loggedPause{lg(10, 1, "Young"), lg(20, 1, "Young"), lg(30, 1, "Young")},
		traced: []hotspot.Pause{tr(9, 1.1, false), tr(29, 1.1, false)},
		want:   []int{0, -1, 1},
	}, {
		name:   "one extra",
		logged: []loggedPause{lg(10, 1, "Young"), lg(30, 1, "Young")},
		traced: []hotspot.Pause{tr(9, 1.1, false), tr(19, 1, false), tr(29, 1.1, false)},
		want:   []int{0, 2},
	}, {
		// Serial's young collection failing over to a full one in the same safepoint: the full one's
		// traced pause starts where the young one's ends, and the log's young span overlaps both.
		name:   "failed over",
		logged: []loggedPause{lg(12, 3, "Young"), lg(20, 8, "Full")},
		traced: []hotspot.Pause{tr(9, 2, false), tr(11, 9.1, true)},
		want:   []int{0, 1},
	}, {
		name:   "too far",
		logged: []loggedPause{lg(10, 1, "Young")},
		traced: []hotspot.Pause{tr(20, 1, false)},
		want:   []int{-1},
	}} {
		if got := matchPauses(c.logged, c.traced); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
