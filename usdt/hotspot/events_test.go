package hotspot

import (
	"debug/elf"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/jvmkit/jvmkit/usdt"
)

func probe(t testing.TB, name, args string) *usdt.Probe {
	t.Helper()
	a, err := usdt.ParseArgs(elf.EM_X86_64, args)
	if err != nil {
		t.Fatal(err)
	}
	return &usdt.Probe{Provider: "hotspot", Name: name, Machine: elf.EM_X86_64, ArgString: args, Args: a}
}

func TestDecode(t *testing.T) {
	alloc := probe(t, "object__alloc", "-8@%rcx 8@%rax -4@%edx 8@%r12")
	h := Header{Probe: "hotspot:object__alloc", Time: 5, PID: 10, TID: 11, Site: 2}
	got, err := Decode(&usdt.Event{Site: 2, Probe: alloc, Time: 5, PID: 10, TID: 11, Args: []uint64{1, 0x1000, 2, 56},
		Strings: []usdt.String{{Arg: 1, Data: []byte("[B")}}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&ObjectAlloc{Header: h, JavaTID: 1, Class: "[B", Size: 56}, got); diff != "" {
		t.Error(diff)
	}

	pool := probe(t, "mem__pool__gc__end", "8@%rax 8@%rbx 8@%rcx 8@%rdx 8@%rsi 8@%rdi 8@%r8 8@%r9")
	got, err = Decode(&usdt.Event{Probe: pool, Args: []uint64{1, 2, 3, 4, 5, 6, 7, 8},
		Strings: []usdt.String{{Arg: 0, Data: []byte("G1 Young Generation")}, {Arg: 2, Data: []byte("G1 Eden Space")}}})
	if err != nil {
		t.Fatal(err)
	}
	want := &MemPoolGC{Header: Header{Probe: "hotspot:mem__pool__gc__end"}, Manager: "G1 Young Generation", Pool: "G1 Eden Space",
		Init: 5, Used: 6, Committed: 7, Max: 8}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Error(diff)
	}

	gc := probe(t, "gc__begin", "1@%al")
	if got, err = Decode(&usdt.Event{Probe: gc, Args: []uint64{1}}); err != nil || !got.(*GCBegin).Full {
		t.Errorf("gc__begin: %#v, %v", got, err)
	}
	end := probe(t, "gc__end", "")
	if got, err = Decode(&usdt.Event{Probe: end}); err != nil {
		t.Errorf("gc__end: %v", err)
	} else if _, ok := got.(*Marker); !ok {
		t.Errorf("gc__end: %#v", got)
	}
	// Too few arguments, or not a HotSpot probe: an error, never a panic.
	if _, err := Decode(&usdt.Event{Probe: alloc, Args: []uint64{1}}); !errors.Is(err, ErrEvent) {
		t.Errorf("short event: %v", err)
	}
	other := &usdt.Probe{Provider: "python", Name: "function__entry"}
	if _, err := Decode(&usdt.Event{Probe: other}); !errors.Is(err, ErrEvent) {
		t.Errorf("python probe: %v", err)
	}
}

// TestCatalogue checks that every probe's strings are within its arguments and that the decoder knows it.
func TestCatalogue(t *testing.T) {
	for _, p := range Probes() {
		for _, s := range p.Strings {
			if s.Ptr >= len(p.Args) || s.Len >= len(p.Args) {
				t.Errorf("%s: string %v beyond %d arguments", &p, s, len(p.Args))
			}
		}
		ev := &usdt.Event{Probe: &usdt.Probe{Provider: p.Provider, Name: p.Name, Args: make([]usdt.Arg, len(p.Args))},
			Args: make([]uint64, len(p.Args))}
		if _, err := Decode(ev); err != nil {
			t.Errorf("%s: %v", &p, err)
		}
	}
	if p, ok := Lookup("object__alloc"); !ok || p.Flag != AllocProbes {
		t.Errorf("Lookup(object__alloc) = %+v, %v", p, ok)
	}
}

func TestGCPairing(t *testing.T) {
	hdr := func(probe string, tid int, ts uint64) Header {
		return Header{Probe: "hotspot:" + probe, TID: tid, Time: ts}
	}
	begin := func(ts uint64, full bool) Event { return &GCBegin{Header: hdr("gc__begin", 1, ts), Full: full} }
	end := func(ts uint64) Event { return &Marker{hdr("gc__end", 1, ts)} }
	pool := func(probe string, ts uint64, manager, pool string, used uint64) Event {
		return &MemPoolGC{Header: hdr("mem__pool__gc__"+probe, 1, ts), Manager: manager, Pool: pool, Used: used, Max: 4000}
	}
	events := []Event{
		end(50), // the trace started inside a collection
		// A young collection.
		begin(100, false),
		pool("begin", 110, "Copy", "eden", 1000),
		pool("begin", 111, "Copy", "Metaspace", 7),
		pool("end", 190, "Copy", "eden", 0),
		pool("end", 191, "Copy", "Metaspace", 7),
		end(200),
		// A full collection without pools.
		begin(300, true),
		end(1300),
		// Parallel: a young collection, then a full one, in one safepoint that gc__begin calls minor.
		begin(2000, false),
		pool("begin", 2010, "PS Scavenge", "eden", 900),
		pool("end", 2100, "PS Scavenge", "eden", 0),
		pool("begin", 2110, "PS MarkSweep", "old", 3000),
		pool("end", 2500, "PS MarkSweep", "old", 1000),
		end(2510),
		// G1's Remark on JDK 21+: the concurrent manager begins before gc__begin and ends after gc__end.
		pool("begin", 2990, "G1 Concurrent GC", "G1 Old Gen", 500),
		begin(3000, false),
		end(3050),
		pool("end", 3060, "G1 Concurrent GC", "G1 Old Gen", 400),
		// A young collection, whose pools start where Remark left them.
		begin(4000, false),
		pool("begin", 4001, "G1 Young Generation", "G1 Old Gen", 400),
		pool("end", 4090, "G1 Young Generation", "G1 Old Gen", 450),
		end(4100),
		// A manager reporting outside any pause is ignored.
		pool("begin", 5000, "ZGC Cycles", "ZHeap", 10),
		pool("end", 5100, "ZGC Cycles", "ZHeap", 5),
		// The trace ends inside a collection: dropped.
		begin(6000, false),
		pool("begin", 6010, "G1 Young Generation", "G1 Old Gen", 450),
	}
	var g gcPairing
	var got []Pause
	for _, e := range events {
		g.add(e)
		for p, ok := g.pop(); ok; p, ok = g.pop() {
			got = append(got, p)
		}
	}
	g.flush()
	for p, ok := g.pop(); ok; p, ok = g.pop() {
		got = append(got, p)
	}
	u := func(manager, pool string, before, after uint64) PoolUsage {
		return PoolUsage{Manager: manager, Pool: pool, Before: before, After: after, Max: 4000}
	}
	want := []Pause{
		{Start: 100, Duration: 100, TID: 1, Manager: "Copy", Pools: []PoolUsage{u("Copy", "eden", 1000, 0), u("Copy", "Metaspace", 7, 7)}},
		{Start: 300, Duration: 1000, TID: 1, Full: true},
		// The young pause lasts until the full one starts, as -Xlog:gc times it.
		{Start: 2000, Duration: 110, TID: 1, Manager: "PS Scavenge", Pools: []PoolUsage{u("PS Scavenge", "eden", 900, 0)}},
		{Start: 2110, Duration: 400, TID: 1, Full: true, Manager: "PS MarkSweep", Pools: []PoolUsage{u("PS MarkSweep", "old", 3000, 1000)}},
		{Start: 2990, Duration: 70, TID: 1, Manager: "G1 Concurrent GC", Pools: []PoolUsage{u("G1 Concurrent GC", "G1 Old Gen", 500, 400)}},
		{Start: 4000, Duration: 100, TID: 1, Manager: "G1 Young Generation", Pools: []PoolUsage{u("G1 Young Generation", "G1 Old Gen", 400, 450)}},
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(PoolUsage{})); diff != "" {
		t.Error(diff)
	}
	s := Summarize(got[:2])
	if s.Count != 2 || s.Full != 1 || s.Total != 1100 || s.Max != 1000 || s.P50 != 100 || s.P99 != 1000 || s.Mean != 550 {
		t.Errorf("summary %+v", s)
	}
	if s := Summarize(nil); s != (GCSummary{}) {
		t.Errorf("empty summary %+v", s)
	}
	if h := u("m", "Metaspace", 0, 0); h.Heap() {
		t.Error("Metaspace is not heap")
	}
}

// TestGCPairingHeap: a pause no manager reports gets the heap's used bytes read by gc__begin and gc__end
// (G1's Remark and Cleanup before JDK 21); a pause with pools, or with a failed read, does not.
func TestGCPairingHeap(t *testing.T) {
	hdr := func(probe string, ts uint64) Header { return Header{Probe: "hotspot:" + probe, TID: 1, Time: ts} }
	begin := func(ts uint64) Event { return &GCBegin{Header: hdr("gc__begin", ts)} }
	end := func(ts uint64) Event { return &Marker{hdr("gc__end", ts)} }
	var g gcPairing
	g.addHeap(begin(100), 5<<20, true) // Remark
	g.addHeap(end(200), 3<<20, true)
	g.addHeap(begin(300), 3<<20, true) // a young pause: its manager's pools
	g.add(&MemPoolGC{Header: hdr("mem__pool__gc__begin", 301), Manager: "G1 Young Generation", Pool: "G1 Eden Space", Used: 1 << 20})
	g.add(&MemPoolGC{Header: hdr("mem__pool__gc__end", 399), Manager: "G1 Young Generation", Pool: "G1 Eden Space", Used: 0})
	g.addHeap(end(400), 2<<20, true)
	g.addHeap(begin(500), 0, false) // a read that failed
	g.addHeap(end(600), 2<<20, true)
	var got []Pause
	for p, ok := g.pop(); ok; p, ok = g.pop() {
		got = append(got, p)
	}
	want := []Pause{
		{Start: 100, Duration: 100, TID: 1, Pools: []PoolUsage{{Pool: HeapPool, Before: 5 << 20, After: 3 << 20}}},
		{Start: 300, Duration: 100, TID: 1, Manager: "G1 Young Generation",
			Pools: []PoolUsage{{Manager: "G1 Young Generation", Pool: "G1 Eden Space", Before: 1 << 20}}},
		{Start: 500, Duration: 100, TID: 1},
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(PoolUsage{})); diff != "" {
		t.Error(diff)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add("object__alloc", 4, []byte("[B"), uint64(56))
	f.Add("mem__pool__gc__begin", 8, []byte("G1 Eden Space"), uint64(0))
	f.Add("monitor__wait", 5, []byte("java/lang/Object"), uint64(10))
	f.Add("gc__end", 0, []byte(nil), uint64(0))
	f.Add("nonesuch", 3, []byte("x"), uint64(1))
	f.Fuzz(func(t *testing.T, name string, nargs int, s []byte, v uint64) {
		if nargs < 0 || nargs > usdt.MaxArgs {
			return
		}
		ev := &usdt.Event{Probe: &usdt.Probe{Provider: "hotspot", Name: name, Args: make([]usdt.Arg, nargs)},
			Args: make([]uint64, nargs), Strings: []usdt.String{{Arg: 0, Data: s}, {Arg: nargs + 1, Data: s}}}
		for i := range ev.Args {
			ev.Args[i] = v
		}
		e, err := Decode(ev)
		if err == nil && e.Head().Probe != "hotspot:"+name {
			t.Errorf("decoded %s as %s", name, e.Head().Probe)
		}
	})
}
