//go:build linux

package realapps

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jvmkit/jvmkit/flame"
	"github.com/jvmkit/jvmkit/internal/testutil"
	"github.com/jvmkit/jvmkit/jvmti"
	"github.com/jvmkit/jvmkit/usdt"
	"github.com/jvmkit/jvmkit/usdt/hotspot"
)

// allocData is jvmkit.alloc/v1's data.
type allocData struct {
	// The window counted, CLOCK_MONOTONIC (with --switch-flags: the flag on to off).
	WindowStart int64                `json:"window_start_ns"`
	WindowEnd   int64                `json:"window_end_ns"`
	Mode        string               `json:"mode"`
	Flags       []hotspot.FlagState  `json:"flags"`
	Profile     hotspot.AllocProfile `json:"profile"`
}

// perClass sums a figure of each class, hidden classes' addresses dropped (two runs name the same lambda
// differently).
func (a *allocData) perClass(f func(c *hotspot.ClassAlloc) uint64) map[string]int64 {
	m := map[string]int64{}
	for i := range a.Profile.Classes {
		c := &a.Profile.Classes[i]
		m[NormalizeMethod(c.Class)] += int64(f(c))
	}
	return m
}

func (a *allocData) bytes() map[string]int64 {
	return a.perClass(func(c *hotspot.ClassAlloc) uint64 { return c.Bytes })
}

func (a *allocData) counts() map[string]int64 {
	return a.perClass(func(c *hotspot.ClassAlloc) uint64 { return c.Count })
}

func (a *allocData) samples() map[string]int64 {
	return a.perClass(func(c *hotspot.ClassAlloc) uint64 { return c.Samples })
}

// precision is what a class's estimate rests on: its samples, or, where the samples' weights were spread
// over TLAB windows, the windows that held it.
func (a *allocData) precision() map[string]int64 {
	return a.perClass(func(c *hotspot.ClassAlloc) uint64 { return max(c.Samples, c.Windows) })
}

func parseAlloc(t *testing.T, out string) *allocData {
	t.Helper()
	var doc struct {
		Schema string    `json:"schema"`
		Data   allocData `json:"data"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Schema != "jvmkit.alloc/v1" {
		t.Fatalf("jvmkit alloc --json: %v\n%.2000s", err, out)
	}
	return &doc.Data
}

// allocRun is what testAlloc measured: the sampled run, its window (from the flag switched on to switched
// off), and the full-probe truth of the second instance over the same time.
type allocRun struct {
	sampled  *allocData
	from, to time.Time
	truth    *allocData
	// estimate is the sample's estimator run on the full-probe instance itself (startEstimate), and
	// estTruth that instance's bytes per class over the estimate's window, from bpftrace's counts.
	estimate *allocData
	estTruth map[string]int64
	// heap is alloc --heap-sampling's sampler (jvmti.HeapSample) run on the full-probe instance itself over
	// the same time, and heapTruth that instance's bytes per class over the heap sampler's window.
	heap      *jvmti.HeapProfile
	heapTruth map[string]int64
}

// heapInterval is the heap sampler's mean distance between samples in the real-application tier: the
// full-probe instances, slowed by a trap at every allocation, allocate 5-50 MB in allocSpan here (at
// 64 KiB, 282-746 samples).
const heapInterval = 8 << 10

// heapRun is a heap-sampling session and its window (CLOCK_MONOTONIC ns).
type heapRun struct {
	p        *jvmti.HeapProfile
	err      error
	from, to int64
}

// startHeap runs the heap sampler on JVM pid for allocSpan, in the background.
func startHeap(t *testing.T, pid int) <-chan heapRun {
	done := make(chan heapRun, 1)
	go func() {
		mono, wall := monotonic(), time.Now()
		p, err := jvmti.HeapSample(t.Context(), pid, jvmti.HeapSampleOptions{Duration: allocSpan, Interval: heapInterval})
		r := heapRun{p: p, err: err}
		if p != nil {
			r.from, r.to = mono+p.Start.Sub(wall).Nanoseconds(), mono+p.End.Sub(wall).Nanoseconds()
		}
		done <- r
	}()
	return done
}

// startEstimate traces the full-probe instance with the sampled mode's weights, in process: a sample at
// each new TLAB and each allocation outside one weighs what its thread allocated since its previous
// sample, every other firing nothing. It is the estimator --switch-flags runs, fed by the JVM whose every
// allocation the truth counts: compared with that truth over the same time, it measures the estimator
// alone, without the difference between two instances (which JFR's samples of the sampled JVM show). Its
// truth is bpftrace's count over the same window (estimateTruth).
func startEstimate(t *testing.T, pid int) (*hotspot.AllocTrace, int64) {
	t.Helper()
	mods, err := usdt.Modules(t.Context(), pid)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := hotspot.TraceAlloc(t.Context(), pid, mods, hotspot.AllocOptions{Weights: true, Sampled: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Close() })
	tr.Rebase()
	return tr, monotonic()
}

// endEstimate ends startEstimate's trace and returns what it estimated.
func endEstimate(t *testing.T, tr *hotspot.AllocTrace, from int64) *allocData {
	t.Helper()
	to := monotonic()
	if err := tr.Freeze(uint64(to)); err != nil {
		t.Fatal(err)
	}
	if err := tr.Stop(); err != nil {
		t.Fatal(err)
	}
	p, err := tr.Profile()
	if err != nil {
		t.Fatal(err)
	}
	return &allocData{WindowStart: from, WindowEnd: to, Mode: "sample", Profile: *p}
}

// testAlloc runs alloc --switch-flags on the application and, at the same time, alloc and bpftrace on the
// same probe on the full-probe instance (truth, nil for Tomcat) with its collector traced by jvmkit gc
// (H2: Parallel) and a System.gc() in the window; afterwards the JDK's jcmd must say that the flag is off
// again. The sampled run is compared with JFR and with the truth once the recording is read.
func testAlloc(t *testing.T, tl tools, app, truth *instance) *allocRun {
	run := &allocRun{}
	var bt *testutil.Bpftrace
	var full, tracer *testutil.Background
	var t0 int64
	var est *hotspot.AllocTrace
	var estFrom int64
	var heapDone <-chan heapRun
	if truth != nil {
		// Counted per class and per bucket of CLOCK_MONOTONIC time (bpftrace's nsecs), so that it is compared
		// with jvmkit over the window jvmkit counted: the two attach seconds apart on a loaded machine, and
		// H2's mix of statements changes within seconds (measured: 93.7% agreement over windows that differed
		// by the attach times).
		t.Setenv("BPFTRACE_MAP_KEYS_MAX", "65536") // classes × buckets
		bt = testutil.StartBpftrace(t, fmt.Sprintf(`usdt:%s:hotspot:object__alloc /pid == %d/ {
  @count[str(arg1, arg2), nsecs / %d] = count(); @bytes[str(arg1, arg2), nsecs / %d] = sum(arg3);
}`, truth.LibJVM(t), truth.PID, btBucket.Nanoseconds(), btBucket.Nanoseconds()), "-p", strconv.Itoa(truth.PID))
		if truth.Kind == testutil.H2 {
			// The full-probe instance's collector (Parallel) over the same window: the probes' traps do not
			// change which pauses there are.
			tracer = start(t, tl.jvmkit, "gc", strconv.Itoa(truth.PID), "--duration", allocSpan.String(), "--json")
			t0 = attached(t, tracer, "tracing collections")
		}
		est, estFrom = startEstimate(t, truth.PID)
		heapDone = startHeap(t, truth.PID)
		full = start(t, tl.jvmkit, "alloc", strconv.Itoa(truth.PID), "--duration", allocSpan.String(), "--json")
	}
	sampled := start(t, tl.jvmkit, "alloc", strconv.Itoa(app.PID), "--duration", allocSpan.String(), "--json", "--switch-flags")
	sampled.WaitFor(t, "switched DTraceAllocProbes on", time.Minute)
	if tracer != nil {
		tl.gcRun(t, truth.App)
	}
	sampled.WaitFor(t, "switched DTraceAllocProbes off", allocSpan+time.Minute)
	run.sampled = parseAlloc(t, sampled.Wait(t, time.Minute))
	// JFR's events are compared over the window alloc counted, as it reports it (seeing its messages here
	// took up to seconds on the loaded machine, which moved the window's edges by as much).
	if w := run.sampled; w.WindowStart > 0 && w.WindowEnd > w.WindowStart {
		boot := time.Now().Add(-time.Duration(monotonic())) // CLOCK_MONOTONIC's zero on the wall clock
		run.from, run.to = boot.Add(time.Duration(w.WindowStart)), boot.Add(time.Duration(w.WindowEnd))
	} else {
		t.Errorf("alloc --json: window %d..%d, want CLOCK_MONOTONIC bounds", run.sampled.WindowStart, run.sampled.WindowEnd)
	}
	if run.sampled.Mode != "sample" || run.sampled.Profile.Sizes != hotspot.SizesWeights {
		t.Errorf("alloc --switch-flags: mode %q sized by %q, want a sample sized by weights", run.sampled.Mode, run.sampled.Profile.Sizes)
	}
	if flags := app.Jcmd(t, "VM.flags", "-all"); !strings.Contains(flags, "DTraceAllocProbes") ||
		strings.Contains(grepLine(flags, "DTraceAllocProbes"), "= true") {
		t.Errorf("DTraceAllocProbes is not false after alloc --switch-flags ended:\n%s", grepLine(flags, "DTraceAllocProbes"))
	}
	p := &run.sampled.Profile
	ours := run.sampled.bytes()
	t.Logf("alloc --switch-flags (pid %d): %d firings, %d samples standing for %s in %v (%d windows walked, %d lost, %d not walked, "+
		"%d samples without one standing for %s, spread alike); top 10 by bytes %s", app.PID, p.Count, p.Samples, mib(p.Bytes),
		run.to.Sub(run.from).Round(time.Millisecond), p.Windows, p.WindowsLost, p.WindowsFailed, p.WindowsNone, mib(p.WindowsNoneBytes),
		withCounts(Top(ours, 10), ours))
	if truth == nil {
		return run
	}

	run.truth = parseAlloc(t, full.Wait(t, allocSpan+2*time.Minute))
	run.estimate = endEstimate(t, est, estFrom)
	// The full-probe instance's measurements are over: its load ends before bpftrace prints its maps
	// (tens of thousands of keys), which, with that JVM trapping every allocation on both cores, once took
	// bpftrace over a minute (CI, JDK 17, H2).
	truth.load.Stop()
	bt.Stop()
	maps := bt.Wait(t, 3*time.Minute)
	if tracer != nil {
		compareGC(t, tl, truth.App, truth.gc, tracer.Wait(t, allocSpan+2*time.Minute), allocSpan, t0, monotonic())
	}
	if run.truth.Mode != "all" {
		t.Fatalf("alloc on a JVM with -XX:+DTraceAllocProbes: mode %q, want all", run.truth.Mode)
	}
	fp := &run.truth.Profile
	// An instance whose load did not reach it in the window would make a truth of nothing.
	if fp.Count < 10000 {
		t.Fatalf("the full-probe instance (pid %d) fired %d times in %v: too few for a truth (its load did not reach it?)",
			truth.PID, fp.Count, allocSpan)
	}
	btCount := bucketsIn(t, maps["@count"], run.truth.WindowStart, run.truth.WindowEnd)
	btBytes := bucketsIn(t, maps["@bytes"], run.truth.WindowStart, run.truth.WindowEnd)
	truthBytes := run.truth.bytes()
	countAgree := ShareAgreement(run.truth.counts(), btCount)
	t.Logf("full probe (pid %d): %d allocations, %s in %v (sizes %s, %d unsized); top 10 by bytes %s", truth.PID, fp.Count,
		mib(fp.Bytes), allocSpan, fp.Sizes, fp.Unsized, withCounts(Top(truthBytes, 10), truthBytes))
	t.Logf("bpftrace on the same probe: top 10 by count %s; count shares agree %.1f%% with jvmkit's full run; "+
		"bytes (arg3) top 10 %s", withCounts(Top(btCount, 10), btCount), 100*countAgree, withCounts(Top(btBytes, 10), btBytes))
	record(rowID{app.Kind, app.JDK}, "alloc full probe vs bpftrace, same probe: class count shares agree", pct(countAgree), "bpftrace", "")
	check(t, "alloc.bpftrace", countAgree >= 0.95, "jvmkit alloc's and bpftrace's class shares on the same probe agree %.1f%%, want ≥ 95%%", 100*countAgree)
	if fp.ProbeSizes {
		// This JDK's probe passes sizes (JDK 21+; checked on the instance classes): bpftrace's sums of
		// them are an oracle for the bytes too.
		bytesAgree := ShareAgreement(truthBytes, btBytes)
		record(rowID{app.Kind, app.JDK}, "alloc full probe vs bpftrace, same probe: class byte shares agree", pct(bytesAgree), "bpftrace (arg3)", "")
		check(t, "alloc.bpftrace-bytes", bytesAgree >= 0.95, "jvmkit alloc's and bpftrace's byte shares on the same probe agree %.1f%%, want ≥ 95%%", 100*bytesAgree)
	}
	run.estTruth = estimateTruth(t, maps, run.estimate, run.truth)
	if h := <-heapDone; h.err != nil {
		t.Errorf("heap sampling on the full-probe instance: %v", h.err)
	} else {
		run.heap = h.p
		run.heapTruth = estimateTruth(t, maps, &allocData{WindowStart: h.from, WindowEnd: h.to}, run.truth)
	}
	keepTruthSizes(app.JDK, run.truth)
	return run
}

// estimateTruth is the full-probe instance's bytes per class over the estimate's window: bpftrace's
// counts there, each class's count times its mean size in the full run (the probe's sizes are garbage
// before JDK 21), or bpftrace's sums of the sizes where the probe's are right.
func estimateTruth(t *testing.T, maps map[string]map[string]int64, e, full *allocData) map[string]int64 {
	t.Helper()
	if full.Profile.ProbeSizes {
		return bucketsIn(t, maps["@bytes"], e.WindowStart, e.WindowEnd)
	}
	counts, bytes := full.counts(), full.bytes()
	out := map[string]int64{}
	for c, n := range bucketsIn(t, maps["@count"], e.WindowStart, e.WindowEnd) {
		if counts[c] > 0 {
			out[c] = n * bytes[c] / counts[c]
		}
	}
	return out
}

// btBucket is the time resolution of bpftrace's counts.
const btBucket = 250 * time.Millisecond

// bucketsIn sums a bpftrace map keyed by class and btBucket over the buckets whose middle lies in the
// window [from, to] (CLOCK_MONOTONIC ns): per class, what bpftrace counted in jvmkit's window, to within a
// bucket at each edge.
func bucketsIn(t *testing.T, m map[string]int64, from, to int64) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for k, v := range m {
		i := strings.LastIndexByte(k, ',')
		b, err := strconv.ParseInt(k[i+1:], 10, 64)
		if i < 0 || err != nil {
			t.Fatalf("bpftrace key %q: want class,bucket", k)
		}
		if mid := b*btBucket.Nanoseconds() + btBucket.Nanoseconds()/2; mid >= from && mid <= to {
			out[className(k[:i])] += v
		}
	}
	return out
}

// jfrAlloc is JFR's view of the allocations in a window: its ObjectAllocationSample weights and, the
// throttle off, its sample points (a new TLAB, an allocation outside one), per class.
type jfrAlloc struct {
	weights, points map[string]int64
	samples         int
}

func jfrAllocations(events []testutil.JFREvent, from, to time.Time) jfrAlloc {
	j := jfrAlloc{weights: map[string]int64{}, points: map[string]int64{}}
	for _, e := range inWindow(events, "jdk.ObjectAllocationSample", from, to) {
		if c := e.Values.ObjectClass; c != nil {
			j.weights[className(c.Name)] += e.Values.Weight
			j.points[className(c.Name)]++
			j.samples++
		}
	}
	return j
}

func total(m map[string]int64) int64 {
	var s int64
	for _, v := range m {
		s += v
	}
	return s
}

// sampleSlack is how far off a class's estimate from n samples may be: 1/sqrt(n) of its bytes.
func sampleSlack(samples map[string]int64) func(string) float64 {
	return func(k string) float64 { return min(0.5, 1/math.Sqrt(float64(max(1, samples[k])))) }
}

// compareAllocJFR compares the sampled run with JFR's allocation events in the same JVM and window: its
// samples must be JFR's sample points (a new TLAB, an allocation outside one: the same slow path fires
// both), and its bytes JFR's ObjectAllocationSample weights, which weigh the same way.
func compareAllocJFR(t *testing.T, app *testutil.App, run *allocRun, events []testutil.JFREvent) {
	j := jfrAllocations(events, run.from, run.to)
	ours, points := run.sampled.bytes(), run.sampled.samples()
	pointsAgree := ShareAgreement(points, j.points)
	bytesAgree := ShareAgreement(ours, j.weights)
	overlap := TiedOverlap(ours, j.weights, 10, sampleSlack(run.sampled.precision()))
	ourTotal, jfrTotal := total(ours), total(j.weights)
	totalOff := float64(ourTotal-jfrTotal) / float64(max(1, jfrTotal))
	t.Logf("alloc vs JFR in the same JVM: %d samples vs JFR's %d (per class %.1f%% alike), bytes %s vs JFR's "+
		"%s (%+.1f%%), byte shares agree %.1f%%, top 10 %d/10\n  ours: %s\n   JFR: %s", total(points), j.samples,
		100*pointsAgree, mib(uint64(ourTotal)), mib(uint64(jfrTotal)), 100*totalOff, 100*bytesAgree, overlap,
		withCounts(Top(ours, 10), ours), withCounts(Top(j.weights, 10), j.weights))
	id := rowID{app.Kind, app.JDK}
	note := inconclusive(int64(j.samples), 100)
	record(id, "alloc --switch-flags: samples per class vs JFR ObjectAllocationSample's, same JVM", pct(pointsAgree),
		fmt.Sprintf("JFR: %d samples, ours %d", j.samples, total(points)), note)
	record(id, "alloc --switch-flags: byte shares vs JFR ObjectAllocationSample, same JVM", pct(bytesAgree),
		fmt.Sprintf("top 10: %d/10", overlap), note)
	record(id, "alloc --switch-flags: bytes vs JFR ObjectAllocationSample, same JVM", fmt.Sprintf("%+.1f%%", 100*totalOff),
		fmt.Sprintf("JFR: %s", mib(uint64(jfrTotal))), note)
	if !enough(t, "alloc.jfr", "JFR allocation samples", int64(j.samples), 100) {
		return
	}
	check(t, "alloc.jfr-points", pointsAgree >= 0.95, "samples per class agree %.1f%% with JFR's, want ≥ 95%%", 100*pointsAgree)
	check(t, "alloc.jfr-shares", bytesAgree >= 0.90, "byte shares agree %.1f%% with JFR's ObjectAllocationSample, want ≥ 90%%", 100*bytesAgree)
	check(t, "alloc.jfr-total", math.Abs(totalOff) <= 0.10, "bytes %+.1f%% off JFR's ObjectAllocationSample weights, want within 10%%", 100*totalOff)
}

// compareAllocTruth compares the sampled run's ranking and shares with the full-probe truth (issue 12: top
// 10 by bytes ≥ 9/10, shares ≥ 85%), and JFR's ObjectAllocationSample of the sampled JVM with the same
// truth as a control: where JFR misses too, the two instances differ, not the tool. Classes in our top 10
// that the truth ranks just outside its own count as in it when the truth's bytes are within the sample's
// precision (1/sqrt(samples) of the class) of its 10th class's (TiedOverlap): the applications' 8th to 12th
// classes are often within a few percent of each other (Jetty: three stream classes with exactly the same
// bytes), which no sample ranks apart. The plain overlap is reported beside it.
func compareAllocTruth(t *testing.T, app *testutil.App, run *allocRun, events []testutil.JFREvent) {
	truth := run.truth.bytes()
	ours, points := run.sampled.bytes(), run.sampled.samples()
	j := jfrAllocations(events, run.from, run.to)
	raw := Overlap(Top(ours, 10), Top(truth, 10))
	tied := TiedOverlap(ours, truth, 10, sampleSlack(run.sampled.precision()))
	agree := ShareAgreement(ours, truth)
	jfrTied := TiedOverlap(j.weights, truth, 10, sampleSlack(j.points))
	jfrAgree := ShareAgreement(j.weights, truth)
	t.Logf("sampled (--switch-flags, %d samples) vs full probe: top 10 by bytes %d/10 (%d/10 as ranked), byte shares agree "+
		"%.1f%%; JFR of the sampled JVM vs the full probe: %d/10, %.1f%%; the two instances allocated %s and %s\n  truth: %s",
		total(points), tied, raw, 100*agree, jfrTied, 100*jfrAgree, mib(uint64(total(ours))), mib(run.truth.Profile.Bytes),
		withCounts(Top(truth, 12), truth))
	id := rowID{app.Kind, app.JDK}
	note := inconclusive(total(points), 1000)
	record(id, "alloc --switch-flags vs full probe: top-10 by bytes", fmt.Sprintf("%d/10 (%d/10 as ranked)", tied, raw),
		fmt.Sprintf("≥ 9/10; JFR: %d/10", jfrTied), note)
	record(id, "alloc --switch-flags vs full probe: byte shares agree", pct(agree),
		fmt.Sprintf("≥ 85%%; JFR: %s", pct(jfrAgree)), note)
	if e, et := run.estimate, run.estTruth; e != nil {
		// The estimator in the full-probe JVM itself: the goal without the two instances' difference.
		eb, ep := e.bytes(), e.samples()
		eTied := TiedOverlap(eb, et, 10, sampleSlack(e.precision()))
		eAgree := ShareAgreement(eb, et)
		t.Logf("the sample's estimator in the full-probe JVM (%d samples, %s in %v; %d without a window, %s) vs its full probe over the same window "+
			"(bpftrace): top 10 by bytes %d/10 (%d/10 as ranked), byte shares agree %.1f%%; top 10 %s\n  truth: %s", total(ep),
			mib(e.Profile.Bytes), time.Duration(e.WindowEnd-e.WindowStart).Round(time.Millisecond), e.Profile.WindowsNone,
			mib(e.Profile.WindowsNoneBytes), eTied,
			Overlap(Top(eb, 10), Top(et, 10)), 100*eAgree, withCounts(Top(eb, 10), eb), withCounts(Top(et, 12), et))
		// Per class of the truth's first 12: its bytes, the estimate's, and the estimate's samples against
		// what the truth's byte share predicts (a sample point that falls on a class less often than its
		// bytes say is a bias of the points, not of the weights).
		var per strings.Builder
		tb, all := total(et), total(ep)
		for _, c := range Top(et, 12) {
			fmt.Fprintf(&per, "\n    %-60s truth %9d B  est %9d B  samples %5d (bytes predict %.0f)", c, et[c], eb[c], ep[c],
				float64(all)*float64(et[c])/float64(max(tb, 1)))
		}
		t.Logf("per class, the estimator in the full-probe JVM:%s", per.String())
		record(id, "sample weights in the full-probe JVM vs its full probe: top-10 by bytes", fmt.Sprintf("%d/10", eTied),
			"≥ 9/10", inconclusive(total(ep), 1000))
		record(id, "sample weights in the full-probe JVM vs its full probe: byte shares agree", pct(eAgree), "≥ 85%",
			inconclusive(total(ep), 1000))
		if enough(t, "alloc.estimate", "samples in the full-probe JVM", total(ep), 1000) {
			check(t, "alloc.estimate-top10", eTied >= 9, "the estimator in the full-probe JVM: top 10 by bytes %d/10 of its truth's, want ≥ 9", eTied)
			check(t, "alloc.estimate-shares", eAgree >= 0.85, "the estimator in the full-probe JVM: byte shares agree %.1f%% with its truth's, want ≥ 85%%", 100*eAgree)
		}
	}
	if h, ht := run.heap, run.heapTruth; h != nil {
		// alloc --heap-sampling's sampler in the full-probe JVM itself, against bpftrace's count of every
		// allocation over the same window: samples at random bytes, not where new TLABs start.
		hb, hs := map[string]int64{}, map[string]int64{}
		for c, v := range h.Classes {
			hb[c], hs[c] = int64(v.Bytes), int64(v.Samples)
		}
		hTied := TiedOverlap(hb, ht, 10, sampleSlack(hs))
		hAgree := ShareAgreement(hb, ht)
		t.Logf("alloc --heap-sampling in the full-probe JVM (%d samples, interval %d, %v) vs its full probe over the same window: "+
			"top 10 by bytes %d/10 (%d/10 as ranked), byte shares agree %.1f%%; top 10 %s", h.Samples, h.Interval,
			h.End.Sub(h.Start).Round(time.Millisecond), hTied, Overlap(Top(hb, 10), Top(ht, 10)), 100*hAgree, withCounts(Top(hb, 10), hb))
		note := inconclusive(int64(h.Samples), 1000)
		record(id, "alloc --heap-sampling in the full-probe JVM vs its full probe: top-10 by bytes", fmt.Sprintf("%d/10", hTied), "≥ 9/10", note)
		record(id, "alloc --heap-sampling in the full-probe JVM vs its full probe: byte shares agree", pct(hAgree), "≥ 85%", note)
		if enough(t, "alloc.heap", "heap samples in the full-probe JVM", int64(h.Samples), 1000) {
			check(t, "alloc.heap-top10", hTied >= 9, "alloc --heap-sampling in the full-probe JVM: top 10 by bytes %d/10 of its truth's, want ≥ 9", hTied)
			check(t, "alloc.heap-shares", hAgree >= 0.85, "alloc --heap-sampling in the full-probe JVM: byte shares agree %.1f%% with its truth's, want ≥ 85%%", 100*hAgree)
		}
	}
	// A floor that holds whatever the load (the applications' and this machine's): the
	// truth's 3 first classes are among our 10 first and half the bytes agree.
	first := Top(truth, 3)
	check(t, "alloc.floor", Overlap(first, Top(ours, 10)) == len(first) && agree >= 0.5,
		"the full-probe run's first classes %v are not all in our top 10 %v, or byte shares agree %.1f%% < 50%%",
		first, Top(ours, 10), 100*agree)
	if !enough(t, "alloc.top10", "--switch-flags samples", total(points), 1000) {
		return
	}
	// Keyed per application, as reported.
	top10, shares := "alloc.top10/"+string(app.Kind), "alloc.shares/"+string(app.Kind)
	// JFR's ObjectAllocationSample takes the same points in the same JVM (checked above to 95%): ours ranks
	// the other instance's classes as well as JFR's does, to within two classes, whatever the two instances
	// allocated. Two, because Jetty's 7th to 12th classes are within 20% of each other, inside the
	// samples' precision, so that either may hold two of them in its top 10 that the other holds out
	// (measured, JDK 17: both 7/10 and 8/10 in three runs; once JFR's 9/10 against ours 7/10, ours and
	// JFR's top 10 alike to the precision, byte shares 98.4% alike).
	check(t, "alloc.top10-jfr", tied >= jfrTied-2, "top-10 classes by bytes overlap the full-probe run's in %d/10, JFR's of the same JVM in %d/10: want at least JFR's less 2", tied, jfrTied)
	// The truth is another JVM: where JFR's ObjectAllocationSample, taken in the sampled JVM itself, misses
	// the goal against it too, that JVM allocated otherwise (measured on Jetty, JDK 25: it allocated a
	// quarter as much, byte[] 31% of it against 20% in the sampled one; ours and JFR's both agreed 76%
	// with it, 98.5% with each other). There ours must do as well as JFR's, to within the sampling error.
	if jfrTied < 9 || jfrAgree < 0.85 {
		t.Logf("ORACLE DIFFERS: JFR in the sampled JVM agrees with the full-probe instance in %d/10 and %.1f%% only: "+
			"compared with JFR's figures instead", jfrTied, 100*jfrAgree)
		check(t, top10, tied >= jfrTied-1, "top-10 classes by bytes overlap the full-probe run's in %d/10, JFR's in %d/10: want at least JFR's less 1", tied, jfrTied)
		check(t, shares, agree >= jfrAgree-0.05, "byte shares agree with the full-probe run's %.1f%%, JFR's %.1f%%: want at least JFR's less 5 points", 100*agree, 100*jfrAgree)
		return
	}
	check(t, top10, tied >= 9, "top-10 classes by bytes overlap the full-probe run's in %d/10, want ≥ 9 (JFR: %d/10)", tied, jfrTied)
	check(t, shares, agree >= 0.85, "byte shares agree with the full-probe run's %.1f%%, want ≥ 85%% (JFR: %.1f%%)", 100*agree, 100*jfrAgree)
}

// measureReset counts the object__alloc firings of the application for resetSpan after alloc
// --switch-flags restored the flag: code compiled while it was on may still call the probe (the help
// text says how much, per JDK, from this figure).
func measureReset(t *testing.T, app *testutil.App) {
	ctx := context.Background()
	mods, err := usdt.Modules(ctx, app.PID)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := hotspot.TraceAlloc(ctx, app.PID, mods, hotspot.AllocOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	window := time.NewTimer(resetSpan) // a measurement's window, not a wait for a condition
	<-window.C
	if err := tr.Stop(); err != nil {
		t.Fatal(err)
	}
	p, err := tr.Profile()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("after alloc --switch-flags restored DTraceAllocProbes: %d firings in %v (per site %v)", p.Count, resetSpan, p.PerSite)
	record(rowID{app.Kind, app.JDK}, fmt.Sprintf("alloc: probe firings in %v after the flag was restored", resetSpan),
		strconv.FormatUint(p.Count, 10), "(measured, for the help text)", "")
}

// truthSizes keeps each JDK's full-probe classes (Jetty's and H2's), to compare the sizes JDK 17 and
// later JDKs give the same classes.
var (
	truthMu    sync.Mutex
	truthSizes = map[testutil.JDK]map[string]hotspot.ClassAlloc{}
)

func keepTruthSizes(jdk testutil.JDK, a *allocData) {
	truthMu.Lock()
	defer truthMu.Unlock()
	m := truthSizes[jdk]
	if m == nil {
		m = map[string]hotspot.ClassAlloc{}
		truthSizes[jdk] = m
	}
	for _, c := range a.Profile.Classes {
		if c.InstanceSize > 0 && c.Count > 0 {
			m[NormalizeMethod(c.Class)] = c
		}
	}
}

// compareJDKSizes compares, for the instance classes that JDK 17's full-probe runs and another JDK's both
// allocated, the bytes JDK 17's allocations come to with each JDK's sizes (issue 12: within 5%; JDK 17's
// probe passes no size, so its sizes come from the class's layout helper).
func compareJDKSizes(t *testing.T) {
	truthMu.Lock()
	defer truthMu.Unlock()
	var base testutil.JDK
	for jdk := range truthSizes {
		if jdk.Feature == 17 && jdk.Root == "" {
			base = jdk
		}
	}
	if truthSizes[base] == nil {
		return
	}
	for jdk, other := range truthSizes {
		if jdk == base {
			continue
		}
		var bytes17, bytesOther uint64
		classes := 0
		for name, c := range truthSizes[base] {
			o, ok := other[name]
			if !ok {
				continue
			}
			classes++
			bytes17 += c.Count * c.InstanceSize
			bytesOther += c.Count * o.InstanceSize
		}
		off := (float64(bytes17) - float64(bytesOther)) / float64(max(1, bytesOther))
		t.Logf("instance sizes: JDK 17's full-probe allocations of %d classes also allocated on %s come to %d bytes, %d with %s's sizes (%+.2f%%)",
			classes, jdk.Name(), bytes17, bytesOther, jdk.Name(), 100*off)
		record(rowID{testutil.Apps[0], jdk}, "alloc: JDK 17's bytes of instance classes with this JDK's sizes",
			fmt.Sprintf("%+.2f%%", 100*off), fmt.Sprintf("within 5%% (%d classes)", classes), "")
		if classes == 0 {
			t.Errorf("no instance class allocated on both JDK 17 and %s", jdk.Name())
			continue
		}
		check(t, "alloc.jdk-sizes", math.Abs(off) <= 0.05, "JDK 17's instance bytes are %+.2f%% off %s's, want within 5%%", 100*off, jdk.Name())
	}
}

// stacksSpan is the window of alloc --switch-flags --stacks: its firings are walked one by one, and a
// few seconds of Jetty's give thousands of samples.
const stacksSpan = 4 * time.Second

// stacksRun is an alloc --switch-flags --stacks --bytes run: its bytes per class (the folded stacks'
// leaves) and its window as seen from here.
type stacksRun struct {
	bytes      map[string]int64
	jfrThreads int64 // the bytes of JFR's own threads, left out of bytes
	from, to   time.Time
}

// testAllocStacks runs alloc --switch-flags --stacks --bytes on the application, inside the alloc window's
// JFR recording: the stacks of a sample weigh its samples' weights, so that their bytes per class must be
// JFR's ObjectAllocationSample weights (compareStacksJFR).
func testAllocStacks(t *testing.T, tl tools, app *testutil.App) *stacksRun {
	b := start(t, tl.jvmkit, "alloc", strconv.Itoa(app.PID), "--switch-flags", "--stacks", "--bytes", "--duration", stacksSpan.String())
	b.WaitFor(t, "switched DTraceAllocProbes on", time.Minute)
	run := &stacksRun{bytes: map[string]int64{}, from: time.Now()}
	b.WaitFor(t, "switched DTraceAllocProbes off", stacksSpan+time.Minute)
	run.to = time.Now()
	folded, err := flame.ParseFolded(strings.NewReader(b.Wait(t, time.Minute)))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range folded.Stacks {
		if strings.HasPrefix(s.Frames[0], "JFR ") {
			// JFR's own threads (its periodic tasks, its recorder): JFR leaves their allocations out.
			run.jfrThreads += s.Count
			continue
		}
		run.bytes[s.Frames[len(s.Frames)-1]] += s.Count
	}
	t.Logf("alloc --switch-flags --stacks --bytes (pid %d): %s in %v, and %s by JFR's threads; %s", app.PID,
		mib(uint64(total(run.bytes))), run.to.Sub(run.from).Round(time.Millisecond), mib(uint64(run.jfrThreads)),
		lastLine(b.Stderr.String()))
	return run
}

// compareStacksJFR compares the stacks' bytes per class with JFR's ObjectAllocationSample weights over the
// same window, JFR's own threads left out (JFR excludes them). The window's edges are those this test saw
// alloc's messages at (up to a second late on a loaded machine), a few seconds in which Jetty's mix
// varies (a burst of sun.nio.fs.UnixPath once), and records the reader could not keep up with are lost:
// measured on JDK 17, 91.8-97.8% (the table, over the 8 s window alloc reports: 96-99%; before the
// stacks were weighed, 56%). The shares must agree to 85%.
func compareStacksJFR(t *testing.T, app *testutil.App, run *stacksRun, events []testutil.JFREvent) {
	j := jfrAllocations(events, run.from, run.to)
	agree := ShareAgreement(run.bytes, j.weights)
	t.Logf("alloc --stacks --bytes vs JFR in the same JVM: byte shares agree %.1f%% (JFR: %d samples)\n  ours: %s\n   JFR: %s",
		100*agree, j.samples, withCounts(Top(run.bytes, 10), run.bytes), withCounts(Top(j.weights, 10), j.weights))
	note := inconclusive(int64(j.samples), 100)
	record(rowID{app.Kind, app.JDK}, "alloc --switch-flags --stacks --bytes: class byte shares vs JFR ObjectAllocationSample, same JVM",
		pct(agree), fmt.Sprintf("JFR: %d samples", j.samples), note)
	if !enough(t, "alloc.stacks-jfr", "JFR allocation samples", int64(j.samples), 100) {
		return
	}
	check(t, "alloc.stacks-jfr", agree >= 0.85, "the stacks' byte shares agree %.1f%% with JFR's ObjectAllocationSample weights, want ≥ 85%%", 100*agree)
}

// lastLine is s's last non-empty line.
func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndex(s, "\n")+1:]
}
