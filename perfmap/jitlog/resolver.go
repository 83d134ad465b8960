package jitlog

import (
	"cmp"
	"math"
	"slices"
	"strings"

	"github.com/jvmkit/jvmkit/perfmap"
)

// Forever is the To of a span still valid at the end of the log.
const Forever = math.MaxUint64

// Span is a piece of code with a name for a while: in process PID, the Entry's range of addresses held
// the code named Entry.Name from time From (inclusive) to time To (exclusive), in nanoseconds of
// CLOCK_MONOTONIC. From is 0 for code of a snapshot that nothing before contradicts (valid since
// before the log began), To is Forever for code still live at the end of the log.
type Span struct {
	PID int `json:"pid"`
	perfmap.Entry
	From uint64 `json:"from"`
	To   uint64 `json:"to"`
	// Kind is the record the span comes from: Load, Snapshot, or Unload for code whose LOAD the log
	// lost (damage) but whose UNLOAD, with its address, it has: valid until the unload, from as far
	// back as nothing contradicts (as a snapshot's).
	Kind   Kind   `json:"kind"`
	Source string `json:"source,omitempty"`
	Time   uint64 `json:"time"` // the time of that record
	// Uncertain says that the log lost records of this code: an UNLOAD without its LOAD. Its From
	// (Kind Unload) or To (code that such an UNLOAD shows gone before it) is a guess, and a name it
	// gives may be wrong.
	Uncertain bool `json:"uncertain,omitempty"`
}

// End is the first address after the span's code.
func (s *Span) End() uint64 { return end(s.Start, s.Size) }

// ValidAt tells whether the span names its code at time t.
func (s *Span) ValidAt(t uint64) bool { return s.From <= t && t < s.To }

// Match is the answer to a lookup: the span for the address, and whether it was valid at the time asked
// (Exact) or is, among the spans of that address, the one nearest in time (a fallback: the code was
// unloaded before, or loaded only after, the time asked, or the log missed a load). An Exact match of
// an Uncertain span may be wrong too: the log lost records of its code.
type Match struct {
	Span
	Exact bool
}

// Stats counts what NewResolver made of the records.
type Stats struct {
	Records int `json:"records"`
	Spans   int `json:"spans"`
	// Duplicates are LOAD and SNAPSHOT records of code that was already live: LOADs replayed for a JVMTI
	// agent (GenerateEvents), snapshot entries of code loaded before the snapshot.
	Duplicates int `json:"duplicates"`
	Superseded int `json:"superseded"` // spans ended by newer code overlapping them
	Unloaded   int `json:"unloaded"`   // spans ended by an UNLOAD
	// UnmatchedUnloads are UNLOADs of a name with no live code in the process.
	UnmatchedUnloads int `json:"unmatched_unloads"`
	// LostLoads are UNLOADs with an address whose code the log has not live there: its LOAD was lost
	// (damage). The code becomes an Uncertain span of Kind Unload; or, where other code is live over
	// its range, that code is ended at the unload, Uncertain.
	LostLoads int `json:"lost_loads"`
	Empty     int `json:"empty"` // LOAD and SNAPSHOT records of no code (size 0), ignored
}

// Resolver answers which code had which name at which time. It is built once from the records of one
// or more logs and is then safe for concurrent use.
type Resolver struct {
	procs map[int]*procIndex
	pids  []int
	stats Stats
	last  uint64
}

// procIndex holds the spans of one process and a segment tree over their address ranges: the tree's
// leaves are the elementary intervals between the spans' start and end addresses, and a span is listed
// at the O(log n) nodes that cover its range exactly. As at any moment the live spans of a process do
// not overlap, the spans listed at one node (which all cover that node's addresses) are never valid at
// the same time: sorted by From, a binary search finds the one valid at t. A lookup walks from the
// address's leaf towards the root, skipping nodes with no spans (up): O(log n) for the leaf, then a
// binary search at each of the few nodes on the way that list spans of the address.
type procIndex struct {
	first  uint64 // the time of the earliest record
	spans  []Span
	coords []uint64   // leaf i is [coords[i], coords[i+1])
	tops   []uint64   // coords[0], coords[topStride], ...: a cache-friendly first step of the leaf search
	nodes  []treeNode // 2n+1 for n leaves; node k lists items[nodes[k].first:nodes[k+1].first]
	items  []item
}

// item is a span listed at a node, with its times: a lookup reads no span.
type item struct {
	from, to uint64
	span     int32
}

type treeNode struct {
	first uint32
	up    int32 // the nearest ancestor that lists spans, or 0
}

const topStride = 32

// NewResolver builds a resolver from records, which may come in any order (they are sorted by time; at
// equal times the order given is kept). The rules:
//
//   - LOAD: the code is valid from the record's time. Live code of the process that it overlaps ends
//     then (HotSpot reused the memory). A LOAD of exactly the live code at its start (same size and
//     name) is a duplicate and ignored: JVMTI's GenerateEvents replays loads for agents.
//   - SNAPSHOT: as LOAD, but a duplicate also when a LOAD's span is live at its start (the snapshot saw
//     code the log already has; the LOAD's name wins), and valid not from the snapshot's time but from
//     the end of the latest span that overlapped it before, or from the beginning (From 0).
//   - UNLOAD: ends the oldest live span of the process with that name. The probe carries no address;
//     the oldest is the one HotSpot frees first, as a method's tier-3 (C1) code is freed after its
//     tier-4 (C2) code replaced it. An UNLOAD with a Start ends the span at that address instead.
//   - An UNLOAD with a Start and Size whose code is not live there (its LOAD lost in damage): the code
//     was live until the unload, since a time unknown. It becomes an Uncertain span of Kind Unload,
//     valid from as far back as nothing contradicts (as a SNAPSHOT), so that samples before the unload
//     get its name, marked uncertain, and not that of code loaded there later. Code live over its
//     range at the unload contradicts it: that code is ended at the unload instead, Uncertain.
//
// Names with line breaks get spaces, as in perf maps.
func NewResolver(recs []Record) *Resolver {
	r := &Resolver{procs: make(map[int]*procIndex)}
	r.stats.Records = len(recs)
	order := make([]int32, len(recs))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, func(a, b int32) int {
		if c := cmp.Compare(recs[a].PID, recs[b].PID); c != 0 {
			return c
		}
		return cmp.Compare(recs[a].Time, recs[b].Time)
	})
	for i := 0; i < len(order); {
		j := i
		pid := recs[order[i]].PID
		for j < len(order) && recs[order[j]].PID == pid {
			r.last = max(r.last, recs[order[j]].Time)
			j++
		}
		p := r.sweep(recs, order[i:j])
		p.backdate()
		p.index()
		r.procs[pid] = p
		r.pids = append(r.pids, pid)
		r.stats.Spans += len(p.spans)
		i = j
	}
	return r
}

func cleanName(s string) string {
	if strings.ContainsAny(s, "\r\n") {
		return strings.NewReplacer("\r", " ", "\n", " ").Replace(s)
	}
	return s
}

// sweep turns the records of one process, in time order, into spans with their times of validity.
func (r *Resolver) sweep(recs []Record, order []int32) *procIndex {
	p := &procIndex{first: recs[order[0]].Time}
	live := newLiveSet()
	byName := make(map[string][]int32) // live spans by name, oldest first; ended ones are skipped lazily
	closeSpan := func(i int32, t uint64) {
		p.spans[i].To = t
		live.remove(p.spans[i].Start)
	}
	for _, o := range order {
		rec := recs[o]
		// Forever means "not ended": a record at that very time is taken as a nanosecond earlier.
		rec.Time = min(rec.Time, Forever-1)
		name := cleanName(rec.Name)
		switch rec.Kind {
		case Load, Snapshot:
			e := end(rec.Start, rec.Size)
			if e == rec.Start {
				r.stats.Empty++
				continue
			}
			i := int32(len(p.spans))
			dup := func(old int32) bool {
				s := &p.spans[old]
				return s.Size == rec.Size && s.Name == name || rec.Kind == Snapshot && s.Kind == Load
			}
			if !live.replace(rec.Start, e, i, dup, func(old int32) {
				p.spans[old].To = rec.Time
				r.stats.Superseded++
			}) {
				r.stats.Duplicates++
				continue
			}
			p.spans = append(p.spans, Span{
				PID: rec.PID, Entry: perfmap.Entry{Start: rec.Start, Size: rec.Size, Name: name},
				From: rec.Time, To: Forever, Kind: rec.Kind, Source: rec.Source, Time: rec.Time,
			})
			byName[name] = append(byName[name], i)
		case Unload:
			if rec.Start != 0 {
				if i := live.get(rec.Start); i >= 0 && (name == "" || p.spans[i].Name == name) {
					closeSpan(i, rec.Time)
					r.stats.Unloaded++
					continue
				}
				e := end(rec.Start, rec.Size)
				if e == rec.Start {
					r.stats.UnmatchedUnloads++
					continue
				}
				r.stats.LostLoads++
				if live.overlaps(rec.Start, e) {
					// The lost LOAD replaced this code at a time unknown: it ended by the unload.
					live.removeOverlapping(rec.Start, e, func(old int32) {
						p.spans[old].To, p.spans[old].Uncertain = rec.Time, true
					})
					continue
				}
				// Valid from the unload back: backdate extends it as far as nothing contradicts.
				p.spans = append(p.spans, Span{
					PID: rec.PID, Entry: perfmap.Entry{Start: rec.Start, Size: rec.Size, Name: name},
					From: rec.Time, To: rec.Time, Kind: Unload, Source: rec.Source, Time: rec.Time, Uncertain: true,
				})
				continue
			}
			q := byName[name]
			found := false
			for len(q) > 0 && !found {
				i := q[0]
				q = q[1:]
				if p.spans[i].To == Forever {
					closeSpan(i, rec.Time)
					found = true
				}
			}
			if len(q) == 0 {
				delete(byName, name)
			} else {
				byName[name] = q
			}
			if found {
				r.stats.Unloaded++
			} else {
				r.stats.UnmatchedUnloads++
			}
		}
	}
	return p
}

// backdate moves the From of snapshot spans and of spans of lost loads (Kind Unload) back as far as
// nothing contradicts them: to the end of the latest span that overlapped them, or to 0. It sweeps
// backwards in time over span ends, carrying the spans being extended in a live set (they do not
// overlap: two that did would be ended by one another first).
func (p *procIndex) backdate() {
	type event struct {
		t     uint64
		begin bool // a snapshot span starts being extended backwards
		span  int32
	}
	var evs []event
	for i := range p.spans {
		s := &p.spans[i]
		if s.Kind == Snapshot || s.Kind == Unload {
			evs = append(evs, event{s.From, true, int32(i)})
		}
		// A lost load's span begins (backwards) at its end, which stops what overlaps it then.
		if s.To != Forever && s.Kind != Unload {
			evs = append(evs, event{s.To, false, int32(i)})
		}
	}
	if len(evs) == 0 {
		return
	}
	// Latest first; at equal times begins first, so that a span ending when a snapshot was taken stops
	// the snapshot's span at that time.
	slices.SortFunc(evs, func(a, b event) int {
		if c := cmp.Compare(b.t, a.t); c != 0 {
			return c
		}
		if a.begin != b.begin {
			if a.begin {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.span, b.span)
	})
	ext := newLiveSet()
	for _, ev := range evs {
		s := &p.spans[ev.span]
		stop := func(j int32) {
			if j != ev.span {
				p.spans[j].From = ev.t
			}
		}
		ext.removeOverlapping(s.Start, s.End(), stop)
		if ev.begin {
			ext.insert(s.Start, s.End(), ev.span)
		}
	}
	ext.each(func(_, _ uint64, span int32) { p.spans[span].From = 0 })
}

// index builds the segment tree.
func (p *procIndex) index() {
	coords := make([]uint64, 0, 2*len(p.spans))
	for i := range p.spans {
		s := &p.spans[i]
		if s.From < s.To {
			coords = append(coords, s.Start, s.End())
		}
	}
	slices.Sort(coords)
	p.coords = slices.Compact(coords)
	n := len(p.coords) - 1
	if n <= 0 {
		return
	}
	for i := 0; i < len(p.coords); i += topStride {
		p.tops = append(p.tops, p.coords[i])
	}
	// Two passes over the canonical nodes of each span: count, then fill.
	visit := func(fn func(node int, span int32)) {
		for i := range p.spans {
			s := &p.spans[i]
			if s.From >= s.To {
				continue
			}
			l, r := p.leaf(s.Start)+n, p.leaf(s.End())+n
			for l < r {
				if l&1 == 1 {
					fn(l, int32(i))
					l++
				}
				if r&1 == 1 {
					r--
					fn(r, int32(i))
				}
				l, r = l>>1, r>>1
			}
		}
	}
	p.nodes = make([]treeNode, 2*n+1)
	visit(func(node int, _ int32) { p.nodes[node+1].first++ })
	for k := 1; k < len(p.nodes); k++ {
		p.nodes[k].first += p.nodes[k-1].first
	}
	p.items = make([]item, p.nodes[2*n].first)
	fill := make([]uint32, 2*n)
	for k := range fill {
		fill[k] = p.nodes[k].first
	}
	visit(func(node int, span int32) {
		p.items[fill[node]] = item{p.spans[span].From, p.spans[span].To, span}
		fill[node]++
	})
	for k := 1; k < 2*n; k++ {
		items := p.items[p.nodes[k].first:p.nodes[k+1].first]
		if len(items) > 1 {
			slices.SortFunc(items, func(a, b item) int { return cmp.Compare(a.from, b.from) })
		}
		if parent := k >> 1; parent >= 1 {
			if p.listed(parent) {
				p.nodes[k].up = int32(parent)
			} else {
				p.nodes[k].up = p.nodes[parent].up
			}
		}
	}
}

func (p *procIndex) listed(k int) bool { return p.nodes[k].first != p.nodes[k+1].first }

// leaf returns the leaf of addr, the last i with coords[i] <= addr; the caller has checked that
// coords[0] <= addr.
func (p *procIndex) leaf(addr uint64) int {
	lo, hi := 0, len(p.tops)
	for hi-lo > 1 {
		m := int(uint(lo+hi) >> 1)
		if p.tops[m] <= addr {
			lo = m
		} else {
			hi = m
		}
	}
	lo, hi = lo*topStride, min(lo*topStride+topStride, len(p.coords))
	for hi-lo > 1 {
		m := int(uint(lo+hi) >> 1)
		if p.coords[m] <= addr {
			lo = m
		} else {
			hi = m
		}
	}
	return lo
}

// Lookup returns the span that named the code at addr in process pid at time t: an exact match if one
// was valid then, else the span at addr nearest in time (ties: the earlier); false if no span ever
// covered addr.
func (r *Resolver) Lookup(pid int, addr, t uint64) (Match, bool) {
	p := r.procs[pid]
	if p == nil {
		return Match{}, false
	}
	i, exact := p.lookup(addr, t)
	if i < 0 {
		return Match{}, false
	}
	return Match{Span: p.spans[i], Exact: exact}, true
}

// lookupRef is Lookup without copying the span.
func (r *Resolver) lookupRef(pid int, addr, t uint64) (s *Span, exact, ok bool) {
	p := r.procs[pid]
	if p == nil {
		return nil, false, false
	}
	i, exact := p.lookup(addr, t)
	if i < 0 {
		return nil, false, false
	}
	return &p.spans[i], exact, true
}

func (p *procIndex) lookup(addr, t uint64) (int32, bool) {
	n := len(p.coords) - 1
	if n <= 0 || addr < p.coords[0] || addr >= p.coords[n] {
		return -1, false
	}
	best, bestDist, bestFrom := int32(-1), uint64(math.MaxUint64), uint64(0)
	node := p.leaf(addr) + n
	if !p.listed(node) {
		node = int(p.nodes[node].up)
	}
	for ; node != 0; node = int(p.nodes[node].up) {
		a, b := int(p.nodes[node].first), int(p.nodes[node+1].first)
		// k: the first listed span with From > t.
		k, e := a, b
		for k < e {
			m := int(uint(k+e) >> 1)
			if p.items[m].from <= t {
				k = m + 1
			} else {
				e = m
			}
		}
		if k > a {
			it := &p.items[k-1]
			if it.to > t {
				return it.span, true
			}
			if d := t - it.to; best < 0 || d < bestDist || d == bestDist && it.from < bestFrom {
				best, bestDist, bestFrom = it.span, d, it.from
			}
		}
		if k < b {
			it := &p.items[k]
			if d := it.from - t; d < bestDist {
				best, bestDist, bestFrom = it.span, d, it.from
			}
		}
	}
	return best, false
}

// Stats says what NewResolver made of the records.
func (r *Resolver) Stats() Stats { return r.stats }

// PIDs returns the processes of the log, in increasing order.
func (r *Resolver) PIDs() []int { return slices.Clone(r.pids) }

// Has tells whether the log has records of process pid.
func (r *Resolver) Has(pid int) bool { return r.procs[pid] != nil }

// Last returns the time of the latest record: the end of the log, for lookups "as of now".
func (r *Resolver) Last() uint64 { return r.last }

// Spans returns the spans of process pid in the order of their records, including spans that were
// never valid (replaced at the time they were loaded: From == To).
func (r *Resolver) Spans(pid int) []Span {
	if p := r.procs[pid]; p != nil {
		return slices.Clone(p.spans)
	}
	return nil
}
