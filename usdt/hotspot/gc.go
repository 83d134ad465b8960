package hotspot

import (
	"context"
	"slices"
	"time"

	"github.com/jvmkit/jvmkit/usdt"
)

// Pause is one collection as gc__begin and gc__end bracket it: the work HotSpot does inside the safepoint
// under an SvcGCMarker (G1 young, mixed and full collections, Parallel's and Serial's collections, and G1's
// remark and cleanup pauses), without the time it took to reach the safepoint. -Xlog:gc's pause times cover
// about the same span.
type Pause struct {
	Start    uint64        `json:"start_ns"` // CLOCK_MONOTONIC
	Duration time.Duration `json:"duration_ns"`
	Full     bool          `json:"full"`
	TID      int           `json:"tid"`
	// Pools are the memory pools the collection reported (mem__pool__gc__begin and __end), in bytes used
	// before and after.
	Pools []PoolUsage `json:"pools,omitempty"`
}

// PoolUsage is a memory pool's use around a collection.
type PoolUsage struct {
	Manager string `json:"manager"` // "G1 Young Generation"
	Pool    string `json:"pool"`    // "G1 Eden Space"
	Before  uint64 `json:"before"`
	After   uint64 `json:"after"`
	Max     uint64 `json:"max"`
}

// GCTrace is a running trace of gc__begin, gc__end and the memory pool probes of one JVM.
type GCTrace struct {
	tr   *usdt.Tracer
	open map[int]*Pause // by thread: the collection it is in
	// pools seen on a thread outside a collection, kept for the next one on that thread.
	pending map[int][]PoolUsage
}

// TraceGC attaches to the collection probes of process pid, whose modules mods are (usdt.Modules). They
// need no flag.
func TraceGC(ctx context.Context, pid int, mods []usdt.Module) (*GCTrace, error) {
	sites, err := Sites(mods, "gc__begin", "gc__end", "mem__pool__gc__begin", "mem__pool__gc__end")
	if err != nil {
		return nil, err
	}
	tr, err := usdt.Attach(ctx, sites, usdt.Options{PID: pid, StringSize: 64, BufferSize: 1 << 20})
	if err != nil {
		return nil, err
	}
	return &GCTrace{tr: tr, open: make(map[int]*Pause), pending: make(map[int][]PoolUsage)}, nil
}

// Next returns the next pause, waiting for it; io.EOF after Stop (or the JVM's exit) once every event is
// read.
func (g *GCTrace) Next() (Pause, error) {
	for {
		ev, err := g.tr.Read()
		if err != nil {
			return Pause{}, err
		}
		e, err := Decode(&ev)
		if err != nil {
			return Pause{}, err
		}
		if p, ok := g.add(e); ok {
			return p, nil
		}
	}
}

// add feeds one event to the pairing; it returns a pause at its gc__end.
func (g *GCTrace) add(e Event) (Pause, bool) {
	h := e.Head()
	switch e := e.(type) {
	case *GCBegin:
		g.open[h.TID] = &Pause{Start: h.Time, Full: e.Full, TID: h.TID, Pools: g.pending[h.TID]}
		delete(g.pending, h.TID)
	case *Marker: // gc__end
		p := g.open[h.TID]
		if p == nil {
			return Pause{}, false // the trace started inside a collection
		}
		delete(g.open, h.TID)
		if h.Time >= p.Start {
			p.Duration = time.Duration(h.Time - p.Start)
		}
		return *p, true
	case *MemPoolGC:
		var list []PoolUsage
		if p := g.open[h.TID]; p != nil {
			list = p.Pools
		} else {
			list = g.pending[h.TID]
		}
		end := h.Probe == "hotspot:mem__pool__gc__end"
		i := slices.IndexFunc(list, func(u PoolUsage) bool { return u.Manager == e.Manager && u.Pool == e.Pool })
		if i < 0 {
			list = append(list, PoolUsage{Manager: e.Manager, Pool: e.Pool})
			i = len(list) - 1
		}
		if end {
			list[i].After = e.Used
		} else {
			list[i].Before = e.Used
		}
		list[i].Max = e.Max
		if p := g.open[h.TID]; p != nil {
			p.Pools = list
		} else {
			g.pending[h.TID] = list
		}
	}
	return Pause{}, false
}

// Stop detaches the uprobes; Next then returns what is buffered, then io.EOF.
func (g *GCTrace) Stop() error { return g.tr.Stop() }

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
