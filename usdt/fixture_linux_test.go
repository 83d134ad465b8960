package usdt_test

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/internal/testutil"
	"github.com/jvmkit/jvmkit/usdt"
)

// TestFixtureNotes compares the notes of every fixture build with readelf -n and checks that the fixture
// covers what it should: every argument kind, semaphores, several sites of one probe, 0 to 12 arguments.
func TestFixtureNotes(t *testing.T) {
	for _, f := range buildFixtures(t) {
		t.Run(f.name, func(t *testing.T) {
			probes := checkReadelf(t, f.probe)
			sites := make(map[string]int)
			var consts, regs, mems, sib, sym, floats, semas int
			maxArgs := 0
			for _, p := range probes {
				sites[p.Name]++
				maxArgs = max(maxArgs, len(p.Args))
				if p.Semaphore != 0 {
					semas++
				}
				for _, a := range p.Args {
					switch a.Kind {
					case usdt.ArgConst:
						consts++
					case usdt.ArgReg:
						regs++
					case usdt.ArgMem:
						mems++
					}
					if a.Index != "" {
						sib++
					}
					if a.Symbol != "" {
						sym++
					}
					if a.Float {
						floats++
					}
				}
			}
			t.Logf("%d sites: %d const, %d reg, %d mem (%d SIB, %d symbol) arguments, %d floats, %d semaphores",
				len(probes), consts, regs, mems, sib, sym, floats, semas)
			if sites["multi"] != 3 || sites["sema"] != 1 || semas != 1 || maxArgs != 12 || sites["noargs"] != 1 {
				t.Errorf("sites %v, %d semaphores, at most %d arguments", sites, semas, maxArgs)
			}
			if consts == 0 || regs == 0 || mems == 0 || floats == 0 {
				t.Errorf("the fixture lacks an argument kind")
			}
			if strings.HasSuffix(f.name, "O2") && (sib == 0 || sym == 0) {
				t.Errorf("the -O2 build has no SIB or no symbol-relative argument")
			}
		})
	}
}

func monotonicNow(t testing.TB) uint64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		t.Fatal(err)
	}
	return uint64(ts.Nano())
}

// readAll reads a stopped trace to its end.
func readAll(t testing.TB, tr *usdt.Tracer) []usdt.Event {
	t.Helper()
	var events []usdt.Event
	for {
		ev, err := tr.Read()
		if errors.Is(err, io.EOF) {
			return events
		}
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, ev)
	}
}

// TestTraceFixture traces every probe of each fixture build and compares each value with what the fixture
// passed; the semaphore is counted up while the trace runs and back down after.
func TestTraceFixture(t *testing.T) {
	testutil.MustHaveBPF(t)
	for _, f := range buildFixtures(t) {
		// Batch: the same events, read in batches without a wake-up each.
		for _, batch := range []time.Duration{0, 50 * time.Millisecond} {
			name := f.name
			if batch > 0 {
				name += "-batch"
			}
			t.Run(name, func(t *testing.T) { traceFixture(t, f, batch) })
		}
	}
}

func traceFixture(t *testing.T, f fixture, batch time.Duration) {
	fx := startFixture(t, f.exe)
	ctx := context.Background()
	mods, err := usdt.Modules(ctx, fx.pid)
	if err != nil {
		t.Fatal(err)
	}
	if got := fx.sema(); got != 0 {
		t.Fatalf("semaphore %d before the trace", got)
	}
	before := fx.fire(0)
	for _, l := range before {
		if strings.HasPrefix(l, "fx:sema ") {
			t.Errorf("fx:sema fired without a tracer: %q", l)
		}
	}

	sites := fixtureSites(t, mods, f.probe)
	tr, err := usdt.Attach(ctx, sites, usdt.Options{PID: fx.pid, Batch: batch})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if got := fx.sema(); got != 1 {
		t.Errorf("semaphore %d while tracing, want 1", got)
	}
	start := monotonicNow(t)
	var lines []string
	for _, n := range []int{1, 7, 12345} {
		lines = append(lines, fx.fire(n)...)
	}
	end := monotonicNow(t)
	if err := tr.Stop(); err != nil {
		t.Fatal(err)
	}
	if got := fx.sema(); got != 0 {
		t.Errorf("semaphore %d after the trace stopped, want 0", got)
	}
	fx.fire(2) // nothing may come of this
	events := readAll(t, tr)

	if len(events) != len(lines) {
		t.Errorf("%d events, the fixture fired %d probes", len(events), len(lines))
	}
	multiPCs := make(map[uint64]bool)
	last := uint64(0)
	for i := range min(len(events), len(lines)) {
		ev := events[i]
		if err := checkEvent(ev, lines[i]); err != nil {
			t.Error(err)
		}
		if ev.PID != fx.pid || ev.TID != fx.pid {
			t.Errorf("event %d: pid %d tid %d, want %d", i, ev.PID, ev.TID, fx.pid)
		}
		if ev.Time < start || ev.Time > end || ev.Time < last {
			t.Errorf("event %d: time %d not in [%d, %d] after %d", i, ev.Time, start, end, last)
		}
		last = ev.Time
		if ev.Probe.Name == "multi" {
			multiPCs[ev.Probe.PC] = true
		}
	}
	if len(multiPCs) != 3 {
		t.Errorf("fx:multi fired from %d sites, want 3", len(multiPCs))
	}
	drops, err := tr.Drops()
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range drops {
		if d != 0 {
			t.Errorf("site %d: %d drops", i, d)
		}
	}
	t.Logf("%d events from %d sites, all values as passed", len(events), len(sites))
}

// TestTracePIDFilter runs two copies of a fixture: a trace of one pid sees only its events, a trace
// without pid sees both (the fixture file is this test's own, so nobody else fires it).
func TestTracePIDFilter(t *testing.T) {
	testutil.MustHaveBPF(t)
	f := buildFixtures(t)[0]
	a, b := startFixture(t, f.exe), startFixture(t, f.exe)
	ctx := context.Background()
	mods, err := usdt.Modules(ctx, a.pid)
	if err != nil {
		t.Fatal(err)
	}
	sites := fixtureSites(t, mods, f.probe, "multi", "sema")
	for _, pid := range []int{a.pid, 0} {
		tr, err := usdt.Attach(ctx, sites, usdt.Options{PID: pid})
		if err != nil {
			t.Fatal(err)
		}
		wantSema := map[int]int{a.pid: 1, b.pid: 0}
		if pid == 0 {
			wantSema[b.pid] = 1
		}
		for _, fx := range []*fixtureProc{a, b} {
			if got := fx.sema(); got != wantSema[fx.pid] {
				t.Errorf("trace of pid %d: semaphore of %d is %d, want %d", pid, fx.pid, got, wantSema[fx.pid])
			}
		}
		a.fire(1)
		b.fire(2)
		if err := tr.Stop(); err != nil {
			t.Fatal(err)
		}
		count := make(map[int]int)
		for _, ev := range readAll(t, tr) {
			count[ev.PID]++
		}
		_ = tr.Close()
		want := map[int]int{a.pid: 4} // 3 multi + 1 sema
		if pid == 0 {
			want[b.pid] = 4
		}
		if len(count) != len(want) || count[a.pid] != want[a.pid] || count[b.pid] != want[b.pid] {
			t.Errorf("trace of pid %d: events per pid %v, want %v", pid, count, want)
		}
	}
}

// TestTraceDrops fills a one-page ring buffer without reading it: every firing is either read later or
// counted as a drop.
func TestTraceDrops(t *testing.T) {
	testutil.MustHaveBPF(t)
	f := buildFixtures(t)[0]
	fx := startFixture(t, f.exe)
	ctx := context.Background()
	mods, err := usdt.Modules(ctx, fx.pid)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := usdt.Attach(ctx, fixtureSites(t, mods, f.probe, "longstr"), usdt.Options{PID: fx.pid, BufferSize: os.Getpagesize()})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	const rounds = 60
	for n := range rounds {
		fx.fire(n)
	}
	if err := tr.Stop(); err != nil {
		t.Fatal(err)
	}
	events := readAll(t, tr)
	drops, err := tr.Drops()
	if err != nil {
		t.Fatal(err)
	}
	if len(drops) != 1 || drops[0] == 0 || uint64(len(events))+drops[0] != rounds {
		t.Errorf("%d events and %v drops, want %d in all with some drops", len(events), drops, rounds)
	}
	t.Logf("%d events, %d dropped", len(events), drops[0])
}

// TestTraceEndsWithProcess checks that a trace of a pid ends by itself when the process exits.
func TestTraceEndsWithProcess(t *testing.T) {
	testutil.MustHaveBPF(t)
	f := buildFixtures(t)[0]
	fx := startFixture(t, f.exe)
	ctx := context.Background()
	mods, err := usdt.Modules(ctx, fx.pid)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := usdt.Attach(ctx, fixtureSites(t, mods, f.probe, "noargs"), usdt.Options{PID: fx.pid})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	fx.fire(1)
	fx.quit()
	done := make(chan []usdt.Event)
	go func() { done <- readAll(t, tr) }()
	select {
	case events := <-done:
		if len(events) != 1 {
			t.Errorf("%d events, want 1", len(events))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the trace did not end within 10s of the process's exit")
	}
	select {
	case <-tr.Exited():
	default:
		t.Error("the trace ended but Exited is not closed")
	}
}

func TestAttachErrors(t *testing.T) {
	f := buildFixtures(t)[0]
	probes, err := usdt.ReadFile(f.probe)
	if err != nil {
		t.Fatal(err)
	}
	var str usdt.Probe
	for _, p := range probes {
		if p.Name == "str" {
			str = p
		}
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		sites []usdt.Site
		opts  usdt.Options
		want  string
	}{
		{"no sites", nil, usdt.Options{}, "no probe sites"},
		{"string index", []usdt.Site{{File: f.probe, Probe: str, Strings: []usdt.StringArg{{Ptr: 0, Len: 5}}}}, usdt.Options{}, "no string"},
		{"string size", []usdt.Site{{File: f.probe, Probe: str}}, usdt.Options{StringSize: 1 << 20}, "string size"},
		{"buffer size", []usdt.Site{{File: f.probe, Probe: str}}, usdt.Options{BufferSize: 12345}, "power of two"},
		{"no offset", []usdt.Site{{File: f.probe, Probe: usdt.Probe{Provider: "p", Name: "n", PC: 1}}}, usdt.Options{}, "no loadable segment"},
	} {
		_, err := usdt.Attach(ctx, tc.sites, tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error about %q", tc.name, err, tc.want)
		}
	}
}
