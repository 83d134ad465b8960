package hotspot

import (
	"cmp"
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/jvmkit/jvmkit/usdt"
)

// Pause is one collection as -Xlog:gc reports it: a young, mixed or full collection, or G1's Remark or
// Cleanup pause. HotSpot brackets the work it does inside a safepoint with gc__begin and gc__end (an
// SvcGCMarker), and each collection in it with its memory manager's mem__pool__gc__begin and __end
// probes, one per memory pool: a safepoint of Parallel or Serial can hold a young collection and a full
// one (the old generation filled up), which are two pauses, told apart by their managers.
type Pause struct {
	Start    uint64        `json:"start_ns"` // CLOCK_MONOTONIC (= -Xlog's timenanos on Linux)
	Duration time.Duration `json:"duration_ns"`
	// Full is a full collection: gc__begin said so, or its memory manager is a full collector's (PS
	// MarkSweep, MarkSweepCompact, G1 Old Generation).
	Full bool `json:"full"`
	TID  int  `json:"tid"`
	// Manager is the memory manager that reported the collection ("PS Scavenge", "G1 Young Generation",
	// "G1 Concurrent GC" for G1's Remark and Cleanup on JDK 21+); empty when it reported none.
	Manager string `json:"manager,omitempty"`
	// Pools are every memory pool's use before and after the collection, as its manager reported it; for a
	// pause no manager reports (G1's Remark and Cleanup before JDK 21), the one pool HeapPool read by the
	// probes themselves (GCOptions.HeapUsed), with no Manager and no Max.
	Pools []PoolUsage `json:"pools,omitempty"`
}

// PoolUsage is a memory pool's use around a collection.
type PoolUsage struct {
	Manager string `json:"manager"` // "G1 Young Generation"; "" for HeapPool
	Pool    string `json:"pool"`    // "G1 Eden Space"
	Before  uint64 `json:"before"`
	After   uint64 `json:"after"`
	Max     uint64 `json:"max"`
	// begun and ended say which probes were seen: a manager may report only after (recordPreGCUsage).
	begun, ended bool
}

// Heap reports whether the pool is part of the Java heap (not the code cache or metaspace): the pools
// whose sum -Xlog:gc prints as the heap before and after.
func (u *PoolUsage) Heap() bool {
	return !strings.HasPrefix(u.Pool, "CodeHeap") && u.Pool != "Metaspace" && u.Pool != "Compressed Class Space" &&
		u.Pool != "Code Cache"
}

// fullManagers are the memory managers of full collections.
var fullManagers = map[string]bool{"PS MarkSweep": true, "MarkSweepCompact": true, "G1 Old Generation": true}

// GCTrace is a running trace of gc__begin, gc__end and the memory pool probes of one JVM.
type GCTrace struct {
	tr   *usdt.Tracer
	heap bool // gc__begin and gc__end carry the heap's used bytes as their last argument
	gcPairing
}

// GCOptions tune TraceGC.
type GCOptions struct {
	// HeapUsed, when not 0, is the address of a 64-bit count of the Java heap's used bytes in the traced
	// process (vmstructs.JVM.HeapUsedCounter): read at gc__begin and gc__end, it gives a pause that no
	// memory manager reports (G1's Remark and Cleanup before JDK 21) the heap's use before and after, as
	// the pool HeapPool.
	HeapUsed uint64
}

// HeapPool is the pool of a pause's heap use read at gc__begin and gc__end (GCOptions.HeapUsed), for a
// pause that no memory manager reported.
const HeapPool = "Java heap"

// TraceGC attaches to the collection probes of process pid, whose modules mods are (usdt.Modules). They
// need no flag.
func TraceGC(ctx context.Context, pid int, mods []usdt.Module, o GCOptions) (*GCTrace, error) {
	sites, err := Sites(mods, "gc__begin", "gc__end", "mem__pool__gc__begin", "mem__pool__gc__end")
	if err != nil {
		return nil, err
	}
	if o.HeapUsed != 0 {
		for i := range sites {
			if p := &sites[i].Probe; p.Name == "gc__begin" || p.Name == "gc__end" {
				// An absolute address: no register, the displacement alone.
				p.Args = append(slices.Clone(p.Args), usdt.Arg{Kind: usdt.ArgMem, Size: 8, Value: int64(o.HeapUsed)})
			}
		}
	}
	tr, err := usdt.Attach(ctx, sites, usdt.Options{PID: pid, StringSize: 64, BufferSize: 1 << 20})
	if err != nil {
		return nil, err
	}
	return &GCTrace{tr: tr, heap: o.HeapUsed != 0}, nil
}

// Next returns the next pause, waiting for it; io.EOF after Stop (or the JVM's exit) once every event is
// read.
func (g *GCTrace) Next() (Pause, error) {
	for {
		if p, ok := g.pop(); ok {
			return p, nil
		}
		ev, err := g.tr.Read()
		if err != nil {
			if errors.Is(err, io.EOF) {
				g.flush()
				if p, ok := g.pop(); ok {
					return p, nil
				}
			}
			return Pause{}, err
		}
		e, err := Decode(&ev)
		if err != nil {
			return Pause{}, err
		}
		if g.heap && (ev.Probe.Name == "gc__begin" || ev.Probe.Name == "gc__end") {
			var used uint64
			last := len(ev.Args) - 1
			ok := last >= 0 && ev.Faults&(1<<last) == 0
			if ok {
				used = ev.Args[last]
			}
			g.addHeap(e, used, ok)
			continue
		}
		g.add(e)
	}
}

// section is one memory manager's report inside a safepoint: one collection.
type section struct {
	manager    string
	start, end uint64 // first mem__pool__gc__begin, last __end
	pools      []PoolUsage
}

// done reports whether every pool that began has ended.
func (s *section) done() bool {
	for i := range s.pools {
		if !s.pools[i].ended {
			return false
		}
	}
	return true
}

// bracket is a gc__begin/gc__end pair of one thread with the sections reported inside (or, for G1's
// concurrent pauses on JDK 21+, whose manager ends after gc__end, right after) it.
type bracket struct {
	tid        int
	begin, end uint64
	ended      bool
	full       bool
	sections   []*section
	// heap is the heap's used bytes read at gc__begin and gc__end (GCOptions.HeapUsed); heapSeen says which
	// were read.
	heap     [2]uint64
	heapSeen [2]bool
}

// gcPairing turns the probes' events into pauses: pure, so that it is tested on recorded sequences.
type gcPairing struct {
	open map[int]*bracket // by thread: a bracket not emitted yet
	// early are sections begun on a thread outside a bracket: G1's Remark and Cleanup on JDK 21+ begin
	// their manager's report before gc__begin; ZGC's and Shenandoah's concurrent cycles report outside
	// any pause (dropped when they end).
	early map[int]*section
	ready []Pause
}

// pop returns the oldest pause ready.
func (g *gcPairing) pop() (Pause, bool) {
	if len(g.ready) == 0 {
		return Pause{}, false
	}
	p := g.ready[0]
	g.ready = g.ready[1:]
	return p, true
}

// add feeds one event to the pairing; pauses become ready once their bracket and sections are complete.
func (g *gcPairing) add(e Event) {
	if g.open == nil {
		g.open = make(map[int]*bracket)
		g.early = make(map[int]*section)
	}
	h := e.Head()
	b := g.open[h.TID]
	switch e := e.(type) {
	case *GCBegin:
		if b != nil && b.ended {
			g.emit(b) // a manager that never ended: what was seen
		}
		nb := &bracket{tid: h.TID, begin: h.Time, full: e.Full}
		if s := g.early[h.TID]; s != nil {
			nb.sections = append(nb.sections, s)
			delete(g.early, h.TID)
		}
		g.open[h.TID] = nb
	case *Marker: // gc__end
		if b == nil || b.ended {
			return // the trace started inside a collection
		}
		b.end, b.ended = h.Time, true
		g.maybeEmit(b)
	case *MemPoolGC:
		end := h.Probe == "hotspot:mem__pool__gc__end"
		if b == nil || b.ended && !end && !b.has(e.Manager) {
			g.addEarly(h, e, end)
			return
		}
		var s *section
		for i := len(b.sections) - 1; i >= 0; i-- {
			if b.sections[i].manager == e.Manager {
				s = b.sections[i]
				break
			}
		}
		// A manager's pools begin together, then end together: a begin after its pools ended is the
		// manager's next collection.
		if s == nil || !end && s.end != 0 {
			if b.ended && !end {
				return // a new collection after gc__end belongs to no pause
			}
			s = &section{manager: e.Manager, start: h.Time}
			b.sections = append(b.sections, s)
		}
		i := slices.IndexFunc(s.pools, func(u PoolUsage) bool { return u.Pool == e.Pool })
		if i < 0 {
			s.pools = append(s.pools, PoolUsage{Manager: e.Manager, Pool: e.Pool})
			i = len(s.pools) - 1
		}
		u := &s.pools[i]
		if end {
			u.After, u.ended = e.Used, true
			s.end = h.Time
		} else {
			u.Before, u.begun = e.Used, true
		}
		u.Max = e.Max
		if b.ended {
			g.maybeEmit(b)
		}
	}
}

// has reports whether a section of manager is still waiting for its pools' ends.
func (b *bracket) has(manager string) bool {
	for _, s := range b.sections {
		if s.manager == manager && !s.done() {
			return true
		}
	}
	return false
}

// addHeap adds a gc__begin or gc__end event e that read the heap's used bytes too (GCOptions.HeapUsed);
// ok is false when that read failed.
func (g *gcPairing) addHeap(e Event, used uint64, ok bool) {
	h := e.Head()
	_, begin := e.(*GCBegin)
	if begin {
		g.add(e) // opens the bracket
	}
	if b := g.open[h.TID]; b != nil && ok && !b.ended {
		i := 1
		if begin {
			i = 0
		}
		b.heap[i], b.heapSeen[i] = used, true
	}
	if !begin {
		g.add(e) // may emit the pause
	}
}

// addEarly records a pool event outside a bracket: a section that a gc__begin on the thread will adopt,
// or, once it ends without one, nothing.
func (g *gcPairing) addEarly(h *Header, e *MemPoolGC, end bool) {
	s := g.early[h.TID]
	if s == nil || s.manager != e.Manager {
		if end {
			return
		}
		s = &section{manager: e.Manager, start: h.Time}
		g.early[h.TID] = s
	}
	if end {
		delete(g.early, h.TID) // a report that ended outside any pause: a concurrent cycle
		return
	}
	s.pools = append(s.pools, PoolUsage{Manager: e.Manager, Pool: e.Pool, Before: e.Used, Max: e.Max, begun: true})
}

// maybeEmit emits an ended bracket whose sections are complete.
func (g *gcPairing) maybeEmit(b *bracket) {
	for _, s := range b.sections {
		if !s.done() {
			return
		}
	}
	g.emit(b)
}

// emit turns a bracket into its pauses: one per section (a collection), the first starting at
// gc__begin, the last ending at gc__end or at its manager's last report if that comes later; none
// reported, the bracket itself.
func (g *gcPairing) emit(b *bracket) {
	delete(g.open, b.tid)
	end := b.end
	if len(b.sections) == 0 {
		p := Pause{Start: b.begin, Duration: dur(b.begin, end), Full: b.full, TID: b.tid}
		if b.heapSeen[0] && b.heapSeen[1] {
			p.Pools = []PoolUsage{{Pool: HeapPool, Before: b.heap[0], After: b.heap[1], begun: true, ended: true}}
		}
		g.ready = append(g.ready, p)
		return
	}
	for i, s := range b.sections {
		start, stop := s.start, s.end
		if i == 0 {
			start = min(b.begin, s.start)
		}
		if i == len(b.sections)-1 {
			stop = max(end, s.end)
		} else if next := b.sections[i+1].start; next >= start {
			// A young collection that failed over to a full one in the same safepoint (Serial,
			// Parallel): -Xlog:gc times the young pause until the full one starts, its promotion-failure
			// work after its manager's report included (1.4 ms of a 1.55 ms young pause once, JDK 17
			// Serial), and Serial's full one may even start inside that report. So the young pause ends
			// where the next collection starts.
			stop = next
		}
		if stop == 0 {
			stop = start
		}
		p := Pause{Start: start, Duration: dur(start, stop), TID: b.tid, Manager: s.manager, Pools: s.pools,
			Full: fullManagers[s.manager] || b.full && len(b.sections) == 1}
		for k := range p.Pools {
			if !p.Pools[k].begun { // reported after only: the same before
				p.Pools[k].Before = p.Pools[k].After
			}
		}
		g.ready = append(g.ready, p)
	}
}

// flush emits the brackets that ended but wait for a manager's report (the trace ended); one the trace
// ended inside is dropped, like one it started inside.
func (g *gcPairing) flush() {
	var bs []*bracket
	for _, b := range g.open {
		if b.ended {
			bs = append(bs, b)
		}
	}
	slices.SortFunc(bs, func(x, y *bracket) int { return cmp.Compare(x.begin, y.begin) })
	for _, b := range bs {
		g.emit(b)
	}
	clear(g.open)
	clear(g.early)
}

func dur(a, b uint64) time.Duration {
	if b < a {
		return 0
	}
	return time.Duration(b - a)
}

// Stop detaches the uprobes; Next then returns what is buffered, then io.EOF.
func (g *GCTrace) Stop() error { return g.tr.Stop() }

// Exited is closed when the JVM exits (the trace then stops by itself).
func (g *GCTrace) Exited() <-chan struct{} { return g.tr.Exited() }

// Drops returns the events lost because the ring buffer was full.
func (g *GCTrace) Drops() (uint64, error) {
	d, err := g.tr.Drops()
	var n uint64
	for _, x := range d {
		n += x
	}
	return n, err
}

// Close detaches and frees everything.
func (g *GCTrace) Close() error { return g.tr.Close() }

// GCSummary summarises pauses.
type GCSummary struct {
	Count int           `json:"count"`
	Full  int           `json:"full"`
	Total time.Duration `json:"total_ns"`
	Mean  time.Duration `json:"mean_ns"`
	P50   time.Duration `json:"p50_ns"`
	P99   time.Duration `json:"p99_ns"`
	Max   time.Duration `json:"max_ns"`
}

// Summarize computes a summary; percentiles are nearest-rank.
func Summarize(pauses []Pause) GCSummary {
	var s GCSummary
	if len(pauses) == 0 {
		return s
	}
	ds := make([]time.Duration, len(pauses))
	for i, p := range pauses {
		ds[i] = p.Duration
		s.Total += p.Duration
		if p.Full {
			s.Full++
		}
	}
	slices.Sort(ds)
	s.Count = len(ds)
	s.Mean = s.Total / time.Duration(len(ds))
	rank := func(q float64) time.Duration {
		i := int(q*float64(len(ds))+0.999999) - 1
		return ds[max(0, min(i, len(ds)-1))]
	}
	s.P50, s.P99, s.Max = rank(0.50), rank(0.99), ds[len(ds)-1]
	return s
}
