package jitlog

import (
	"cmp"
	"slices"

	"github.com/jvmkit/jvmkit/perfmap"
)

// PerfMap returns the perf map of process pid as of time t: the spans valid then, by address. They do
// not overlap.
func (r *Resolver) PerfMap(pid int, t uint64) []perfmap.Entry {
	p := r.procs[pid]
	if p == nil {
		return nil
	}
	var out []perfmap.Entry
	for i := range p.spans {
		if p.spans[i].ValidAt(t) {
			out = append(out, p.spans[i].Entry)
		}
	}
	slices.SortFunc(out, func(a, b perfmap.Entry) int { return cmp.Compare(a.Start, b.Start) })
	return out
}

// PerfMapWindow returns a perf map of process pid for the time window [from, to] (inclusive): the
// spans valid at some time in it, by address. A perf map has one name per address for the whole
// profile, so where spans of the window overlap (code replaced during the window) one is kept whole
// and the others are left out: the span valid for the longest part of the window, as it gets the most
// samples of a steady workload; on equal parts the later. Samples of left-out code get the kept name
// or none; jvmkit symbolize names them by time instead.
func (r *Resolver) PerfMapWindow(pid int, from, to uint64) []perfmap.Entry {
	p := r.procs[pid]
	if p == nil || from > to {
		return nil
	}
	type cand struct {
		span   int32
		weight uint64
	}
	var cands []cand
	for i := range p.spans {
		s := &p.spans[i]
		a, b := max(s.From, from), min(s.To-1, to) // inclusive bounds of the overlap
		if s.From < s.To && a <= b {
			cands = append(cands, cand{int32(i), b - a})
		}
	}
	slices.SortFunc(cands, func(x, y cand) int {
		if c := cmp.Compare(y.weight, x.weight); c != 0 {
			return c
		}
		if c := cmp.Compare(p.spans[y.span].From, p.spans[x.span].From); c != 0 {
			return c
		}
		return cmp.Compare(y.span, x.span)
	})
	kept := newLiveSet()
	var out []perfmap.Entry
	for _, c := range cands {
		s := &p.spans[c.span]
		if kept.overlaps(s.Start, s.End()) {
			continue
		}
		kept.insert(s.Start, s.End(), c.span)
		out = append(out, s.Entry)
	}
	slices.SortFunc(out, func(a, b perfmap.Entry) int { return cmp.Compare(a.Start, b.Start) })
	return out
}
