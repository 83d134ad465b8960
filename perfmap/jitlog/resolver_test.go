package jitlog_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/jvmkit/jvmkit/perfmap"
	"github.com/jvmkit/jvmkit/perfmap/jitlog"
)

const pid = 4242

func load(t uint64, start, size uint64, name string) jitlog.Record {
	return jitlog.Record{Time: t, PID: pid, Kind: jitlog.Load, Start: start, Size: size, Name: name, Source: jitlog.SourceUSDT}
}

func snap(t uint64, start, size uint64, name string) jitlog.Record {
	return jitlog.Record{Time: t, PID: pid, Kind: jitlog.Snapshot, Start: start, Size: size, Name: name, Source: jitlog.SourceVMStructs}
}

func unload(t uint64, name string) jitlog.Record {
	return jitlog.Record{Time: t, PID: pid, Kind: jitlog.Unload, Name: name, Source: jitlog.SourceUSDT}
}

type lookupCase struct {
	pid       int
	addr, t   uint64
	name      string // "" for no match
	exact     bool
	from, end uint64 // checked when from+end > 0
}

func checkLookups(t *testing.T, r *jitlog.Resolver, cases []lookupCase) {
	t.Helper()
	for _, c := range cases {
		p := c.pid
		if p == 0 {
			p = pid
		}
		m, ok := r.Lookup(p, c.addr, c.t)
		if !ok {
			if c.name != "" {
				t.Errorf("Lookup(%d, %#x, %d): no match, want %q", p, c.addr, c.t, c.name)
			}
			continue
		}
		if m.Name != c.name || m.Exact != c.exact {
			t.Errorf("Lookup(%d, %#x, %d) = %q exact %v, want %q exact %v", p, c.addr, c.t, m.Name, m.Exact, c.name, c.exact)
		}
		if c.from+c.end > 0 && (m.From != c.from || m.To != c.end) {
			t.Errorf("Lookup(%d, %#x, %d): %q valid [%d, %d), want [%d, %d)", p, c.addr, c.t, m.Name, m.From, m.To, c.from, c.end)
		}
	}
}

// TestRenamedMidRun: code at one address replaced by other code gets each name at its time.
func TestRenamedMidRun(t *testing.T) {
	r := jitlog.NewResolver([]jitlog.Record{
		load(200, 0x1000, 0x100, "B"), // out of order: sorted by time
		load(100, 0x1000, 0x100, "A"),
	})
	checkLookups(t, r, []lookupCase{
		{addr: 0x1010, t: 100, name: "A", exact: true, from: 100, end: 200},
		{addr: 0x10ff, t: 199, name: "A", exact: true},
		{addr: 0x1000, t: 200, name: "B", exact: true, from: 200, end: jitlog.Forever},
		{addr: 0x1010, t: 1e12, name: "B", exact: true},
		{addr: 0x1010, t: 50, name: "A", exact: false}, // before any load: the nearest in time
		{addr: 0x1100, t: 150}, // just past the end
		{addr: 0xfff, t: 150},
	})
	if st := r.Stats(); st.Superseded != 1 || st.Spans != 2 {
		t.Errorf("stats %+v", st)
	}
}

func TestUnloaded(t *testing.T) {
	r := jitlog.NewResolver([]jitlog.Record{
		load(100, 0x2000, 0x100, "C"),
		unload(300, "C"),
		unload(400, "C"), // nothing live left
		unload(400, "never loaded"),
	})
	checkLookups(t, r, []lookupCase{
		{addr: 0x2000, t: 200, name: "C", exact: true, from: 100, end: 300},
		{addr: 0x2000, t: 300, name: "C", exact: false},
		{addr: 0x2000, t: 99, name: "C", exact: false},
	})
	if st := r.Stats(); st.Unloaded != 1 || st.UnmatchedUnloads != 2 {
		t.Errorf("stats %+v", st)
	}
}

// TestReplayDuplicates: JVMTI GenerateEvents replays loads of live code; they change nothing.
func TestReplayDuplicates(t *testing.T) {
	r := jitlog.NewResolver([]jitlog.Record{
		load(100, 0x3000, 0x100, "D"),
		load(500, 0x3000, 0x100, "D"),
		load(500, 0x3000, 0x100, "D"),
		load(600, 0x3000, 0x80, "D"), // other size: new code
	})
	checkLookups(t, r, []lookupCase{
		{addr: 0x3000, t: 550, name: "D", exact: true, from: 100, end: 600},
		{addr: 0x3000, t: 600, name: "D", exact: true, from: 600, end: jitlog.Forever},
		{addr: 0x3090, t: 700, name: "D", exact: false},
	})
	if st := r.Stats(); st.Duplicates != 2 || st.Spans != 2 {
		t.Errorf("stats %+v", st)
	}
}

// TestResized: the recorder logs a load again at its time with the whole size once it finds its blob
// (the first record had insts_size): the later record of the two wins, from the load's time on.
func TestResized(t *testing.T) {
	r := jitlog.NewResolver([]jitlog.Record{
		load(100, 0x4000, 0x80, "E"),
		load(200, 0x5000, 0x40, "F"),
		load(100, 0x4000, 0x100, "E"), // written later, same time
	})
	checkLookups(t, r, []lookupCase{
		{addr: 0x4000, t: 100, name: "E", exact: true, from: 100, end: jitlog.Forever},
		{addr: 0x40f0, t: 150, name: "E", exact: true, from: 100, end: jitlog.Forever}, // in the stubs
		{addr: 0x5000, t: 250, name: "F", exact: true},
	})
}

// TestTieredUnload: a method's C1 code, replaced by its C2 code elsewhere, is unloaded first; the
// UNLOAD (names only) ends the oldest live code of that name.
func TestTieredUnload(t *testing.T) {
	r := jitlog.NewResolver([]jitlog.Record{
		load(100, 0x6000, 0x100, "M"),
		load(200, 0x7000, 0x100, "M"),
		unload(300, "M"),
	})
	checkLookups(t, r, []lookupCase{
		{addr: 0x6000, t: 250, name: "M", exact: true, from: 100, end: 300},
		{addr: 0x6000, t: 350, name: "M", exact: false},
		{addr: 0x7000, t: 350, name: "M", exact: true, from: 200, end: jitlog.Forever},
	})
}

func TestUnloadByAddress(t *testing.T) {
	r := jitlog.NewResolver([]jitlog.Record{
		load(100, 0x6000, 0x100, "M"),
		load(200, 0x7000, 0x100, "M"),
		{Time: 300, PID: pid, Kind: jitlog.Unload, Start: 0x7000, Name: "M"},
		{Time: 300, PID: pid, Kind: jitlog.Unload, Start: 0x6000, Name: "other"}, // the name must match
	})
	checkLookups(t, r, []lookupCase{
		{addr: 0x7000, t: 350, name: "M", exact: false},
		{addr: 0x6000, t: 350, name: "M", exact: true},
	})
}

func TestPartialOverlap(t *testing.T) {
	r := jitlog.NewResolver([]jitlog.Record{
		load(100, 0x8000, 0x100, "P"),
		load(200, 0x8080, 0x100, "Q"),
	})
	checkLookups(t, r, []lookupCase{
		{addr: 0x8010, t: 150, name: "P", exact: true},
		{addr: 0x8010, t: 250, name: "P", exact: false}, // P ended when Q took part of it
		{addr: 0x8090, t: 250, name: "Q", exact: true},
		{addr: 0x8090, t: 150, name: "P", exact: true},
		{addr: 0x8170, t: 150, name: "Q", exact: false},
	})
}

// TestSnapshot: snapshot code is valid since the beginning, or since the end of code it overlaps; it
// does not replace a LOAD of the same code.
func TestSnapshot(t *testing.T) {
	r := jitlog.NewResolver([]jitlog.Record{
		load(100, 0x3000, 0x100, "G"),
		unload(200, "G"),
		load(150, 0x4000, 0x100, "int Foo.bar()"),
		snap(1000, 0x3000, 0x100, "H"),
		snap(1000, 0x4000, 0x130, "int Foo.bar()"), // the LOAD's code, with stubs
		snap(1000, 0x5000, 0x400, "Interpreter"),
		snap(2000, 0x5000, 0x400, "Interpreter"), // a second snapshot
	})
	checkLookups(t, r, []lookupCase{
		{addr: 0x5000, t: 10, name: "Interpreter", exact: true, from: 0, end: jitlog.Forever},
		{addr: 0x3000, t: 150, name: "G", exact: true},
		{addr: 0x3000, t: 250, name: "H", exact: true, from: 200, end: jitlog.Forever},
		{addr: 0x4000, t: 1500, name: "int Foo.bar()", exact: true, from: 150, end: jitlog.Forever},
		{addr: 0x4120, t: 1500}, // the snapshot's larger size was dropped with it
	})
	if st := r.Stats(); st.Duplicates != 2 {
		t.Errorf("stats %+v", st)
	}
}

func TestProcessesApart(t *testing.T) {
	other := load(100, 0x1000, 0x100, "other")
	other.PID = 7
	r := jitlog.NewResolver([]jitlog.Record{load(100, 0x1000, 0x100, "mine"), other})
	checkLookups(t, r, []lookupCase{
		{addr: 0x1000, t: 150, name: "mine", exact: true},
		{pid: 7, addr: 0x1000, t: 150, name: "other", exact: true},
		{pid: 8, addr: 0x1000, t: 150},
	})
	if !cmp.Equal(r.PIDs(), []int{7, pid}) || r.Last() != 100 {
		t.Errorf("PIDs %v Last %d", r.PIDs(), r.Last())
	}
}

func TestPerfMaps(t *testing.T) {
	r := jitlog.NewResolver([]jitlog.Record{
		snap(50, 0x500, 0x100, "Interpreter"),
		load(100, 0x1000, 0x100, "A"),
		load(300, 0x1000, 0x100, "B"), // A lived 200, B lives on
		load(100, 0x2000, 0x100, "C"),
		unload(150, "C"),
		load(120, 0x3000, 0x100, "E"),
		load(130, 0x3080, 0x100, "F"), // overlaps E, which lived 10
		load(1000, 0x4000, 0x100, "late"),
	})
	e := func(start uint64, name string) perfmap.Entry {
		return perfmap.Entry{Start: start, Size: 0x100, Name: name}
	}
	if diff := cmp.Diff([]perfmap.Entry{e(0x500, "Interpreter"), e(0x1000, "A"), e(0x2000, "C"), e(0x3080, "F")}, r.PerfMap(pid, 140)); diff != "" {
		t.Errorf("PerfMap at 140 (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]perfmap.Entry{e(0x500, "Interpreter"), e(0x1000, "B"), e(0x3080, "F"), e(0x4000, "late")}, r.PerfMap(pid, r.Last())); diff != "" {
		t.Errorf("PerfMap at the end (-want +got):\n%s", diff)
	}
	// Window [100, 450]: A 200 ns, B 150 ns → A; E 10 ns, F 320 ns → F.
	if diff := cmp.Diff([]perfmap.Entry{e(0x500, "Interpreter"), e(0x1000, "A"), e(0x2000, "C"), e(0x3080, "F")}, r.PerfMapWindow(pid, 100, 450)); diff != "" {
		t.Errorf("PerfMapWindow [100, 450] (-want +got):\n%s", diff)
	}
	// Window [200, 600]: A 100 ns, B 301 ns → B.
	if diff := cmp.Diff([]perfmap.Entry{e(0x500, "Interpreter"), e(0x1000, "B"), e(0x3080, "F")}, r.PerfMapWindow(pid, 200, 600)); diff != "" {
		t.Errorf("PerfMapWindow [200, 600] (-want +got):\n%s", diff)
	}
	if got := r.PerfMapWindow(pid, 600, 200); got != nil {
		t.Errorf("an empty window gave %v", got)
	}
}

// randomLog makes a log of n records of one process with heavy reuse of a small code area.
func randomLog(rng *rand.Rand, n int, area uint64) []jitlog.Record {
	recs := make([]jitlog.Record, 0, n)
	t := uint64(1000)
	var names []string
	for range n {
		t += uint64(rng.IntN(3)) // equal times happen
		switch k := rng.IntN(20); {
		case k < 2 && len(names) > 0:
			recs = append(recs, unload(t, names[rng.IntN(len(names))]))
		case k < 4:
			start := uint64(rng.IntN(int(area)/16)) * 16
			recs = append(recs, snap(t, start, uint64(1+rng.IntN(64))*16, fmt.Sprintf("S%d", rng.IntN(50))))
		default:
			start := uint64(rng.IntN(int(area)/16)) * 16
			name := fmt.Sprintf("M%d", rng.IntN(50))
			names = append(names, name)
			recs = append(recs, load(t, start, uint64(1+rng.IntN(64))*16, name))
			if rng.IntN(10) == 0 { // a replay
				recs = append(recs, recs[len(recs)-1])
			}
		}
	}
	return recs
}

// TestRandomAgainstScan checks the index against a scan of all spans, and the invariant the index
// relies on: spans valid at the same time do not overlap.
func TestRandomAgainstScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 50 {
		recs := randomLog(rng, 10+rng.IntN(500), 4096)
		r := jitlog.NewResolver(recs)
		spans := r.Spans(pid)
		for i := range spans {
			for j := i + 1; j < len(spans); j++ {
				a, b := &spans[i], &spans[j]
				if a.Start < b.End() && b.Start < a.End() && max(a.From, b.From) < min(a.To, b.To) {
					t.Fatalf("round %d: spans %+v and %+v overlap in space and time", round, *a, *b)
				}
			}
		}
		for range 2000 {
			addr := uint64(rng.IntN(4096 + 2048))
			tm := uint64(900 + rng.IntN(int(r.Last()-900+100)))
			m, ok := r.Lookup(pid, addr, tm)
			// The scan: the valid span, else the nearest in time.
			var want *jitlog.Span
			var wantExact bool
			best := uint64(1<<64 - 1)
			for i := range spans {
				s := &spans[i]
				if s.From >= s.To || addr < s.Start || addr >= s.End() {
					continue
				}
				if s.ValidAt(tm) {
					want, wantExact = s, true
					break
				}
				d := s.From - tm
				if s.To <= tm {
					d = tm - s.To
				}
				if d < best || d == best && s.From < want.From {
					want, best = s, d
				}
			}
			if ok != (want != nil) || ok && (m.Exact != wantExact || m.Span != *want) {
				t.Fatalf("round %d: Lookup(%#x, %d) = %+v %v, want %+v exact %v", round, addr, tm, m, ok, want, wantExact)
			}
		}
	}
}

// BenchmarkLookup: lookups in the index of a log of 1M records (one process, churning code cache).
func BenchmarkLookup(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	recs := randomLog(rng, 1_000_000, 256<<20)
	r := jitlog.NewResolver(recs)
	b.Logf("%d records, %d spans", len(recs), r.Stats().Spans)
	type q struct{ addr, t uint64 }
	qs := make([]q, 1<<16)
	for i := range qs {
		qs[i] = q{uint64(rng.IntN(256 << 20)), 1000 + uint64(rng.IntN(int(r.Last()-1000)))}
	}
	b.ResetTimer()
	found := 0
	for i := 0; i < b.N; i++ {
		x := qs[i&(len(qs)-1)]
		if _, ok := r.Lookup(pid, x.addr, x.t); ok {
			found++
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lookups/s")
	if found == 0 && b.N > 100 {
		b.Fatal("nothing found")
	}
}

func BenchmarkNewResolver(b *testing.B) {
	recs := randomLog(rand.New(rand.NewPCG(3, 4)), 1_000_000, 256<<20)
	b.ResetTimer()
	for range b.N {
		jitlog.NewResolver(recs)
	}
	b.ReportMetric(float64(len(recs))*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// lostLoadLog writes, with the package's Writer, a log in which method A is loaded at 0x1000 at 5 s,
// unloaded at 10 s (with its address and size, as the recorder logs unloads) and B is loaded at the same
// address at 12 s; then damages A's LOAD, as a recorder killed mid-write or a bad disk does. It returns
// what ReadAll reads back.
func lostLoadLog(t *testing.T) []jitlog.Record {
	t.Helper()
	a := load(sec(5), 0x1000, 0x100, "int A.a()")
	gone := unload(sec(10), "int A.a()")
	gone.Start, gone.Size = 0x1000, 0x100
	var buf bytes.Buffer
	w, err := jitlog.NewWriter(&buf, jitlog.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Append(snap(sec(1), 0x9000, 0x100, "Interpreter"), a, gone, load(sec(12), 0x1000, 0x80, "int B.b()")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// The header (16 bytes), the snapshot record (40+11+len(source) bytes), then A's LOAD: hit a byte
	// of its name.
	b := buf.Bytes()
	at := 16 + 40 + len("Interpreter") + len(jitlog.SourceVMStructs) + 36 + len("int ")
	if b[at] != 'A' {
		t.Fatalf("byte %d is %q, not A's name", at, b[at])
	}
	b[at] = 'X'
	recs, damage, err := jitlog.ReadAll(bytes.NewReader(b))
	if err != nil || len(damage) != 1 || len(recs) != 3 {
		t.Fatalf("read %d records, damage %v, %v; want 3 records around one damage", len(recs), damage, err)
	}
	return recs
}

// TestLostLoad: an UNLOAD with an address whose LOAD the log lost names the samples before it, marked
// uncertain, and not code loaded at that address after it.
func TestLostLoad(t *testing.T) {
	r := jitlog.NewResolver(lostLoadLog(t))
	checkLookups(t, r, []lookupCase{
		{addr: 0x1010, t: sec(9), name: "int A.a()", exact: true, from: 0, end: sec(10)},
		{addr: 0x10f0, t: sec(9.999), name: "int A.a()", exact: true}, // past B's end: A's only
		{addr: 0x1010, t: sec(13), name: "int B.b()", exact: true, from: sec(12), end: jitlog.Forever},
		// Between the unload and the next load nothing was live: the nearest in time, not Exact.
		{addr: 0x1010, t: sec(11), name: "int A.a()", exact: false},
		{addr: 0x1010, t: sec(11.5), name: "int B.b()", exact: false},
	})
	for _, c := range []struct {
		t         uint64
		uncertain bool
	}{{sec(9), true}, {sec(11), true}, {sec(13), false}} {
		if m, _ := r.Lookup(pid, 0x1010, c.t); m.Uncertain != c.uncertain {
			t.Errorf("Lookup at %d: %q Uncertain %v, want %v", c.t, m.Name, m.Uncertain, c.uncertain)
		}
	}
	if st := r.Stats(); st.LostLoads != 1 || st.UnmatchedUnloads != 0 || st.Spans != 3 {
		t.Errorf("stats %+v: want 1 lost load, 3 spans", st)
	}
	spans := r.Spans(pid)
	if s := spans[1]; s.Kind != jitlog.Unload || !s.Uncertain || s.Name != "int A.a()" {
		t.Errorf("span of the lost load: %+v", s)
	}
}

// TestLostLoadBounds: the span of a lost load reaches back to the end of the code there before it, no
// further; code still live over its range at the unload (the lost LOAD replaced it) ends then,
// uncertain; an UNLOAD without an address or size stays unmatched.
func TestLostLoadBounds(t *testing.T) {
	gone := func(t uint64, start, size uint64, name string) jitlog.Record {
		u := unload(t, name)
		u.Start, u.Size = start, size
		return u
	}
	r := jitlog.NewResolver([]jitlog.Record{
		load(sec(1), 0x1000, 0x100, "P"),
		gone(sec(3), 0x1000, 0x100, "P"),
		gone(sec(10), 0x1000, 0x100, "A"), // loaded after 3 s, LOAD lost
		snap(sec(20), 0x1080, 0x100, "S"), // overlaps A: valid back to A's end only
		load(sec(2), 0x5000, 0x100, "X"),  // live when the UNLOAD of Y at its address comes
		gone(sec(8), 0x5000, 0x100, "Y"),
		gone(sec(8), 0x7000, 0, "Z"),
		unload(sec(8), "W"),
	})
	checkLookups(t, r, []lookupCase{
		{addr: 0x1010, t: sec(2), name: "P", exact: true, from: sec(1), end: sec(3)},
		{addr: 0x1010, t: sec(3), name: "A", exact: true, from: sec(3), end: sec(10)},
		{addr: 0x1090, t: sec(15), name: "S", exact: true, from: sec(10), end: jitlog.Forever},
		{addr: 0x1090, t: sec(9), name: "A", exact: true},
		{addr: 0x5010, t: sec(5), name: "X", exact: true, from: sec(2), end: sec(8)},
		{addr: 0x5010, t: sec(9), name: "X", exact: false},
	})
	if m, _ := r.Lookup(pid, 0x5010, sec(5)); !m.Uncertain {
		t.Errorf("code ended by a lost load's UNLOAD: %+v, want Uncertain", m)
	}
	if m, _ := r.Lookup(pid, 0x1010, sec(2)); m.Uncertain {
		t.Errorf("code before a lost load: %+v, want certain", m)
	}
	if st := r.Stats(); st.LostLoads != 2 || st.UnmatchedUnloads != 2 {
		t.Errorf("stats %+v: want 2 lost loads, 2 unmatched unloads", st)
	}
}
