package jitlog

// liveSet is an ordered set of non-overlapping address ranges, each naming a span: a treap keyed by start
// address, its nodes in an arena.
type liveSet struct {
	nodes []tnode
	free  []int32
	root  int32
	seed  uint64
}

type tnode struct {
	start, end  uint64
	span        int32
	prio        uint32
	left, right int32
}

const nilNode = -1

func newLiveSet() *liveSet { return &liveSet{root: nilNode, seed: 0x9e3779b97f4a7c15} }

func (s *liveSet) rand() uint32 {
	// xorshift64*: deterministic, so that builds are reproducible.
	s.seed ^= s.seed >> 12
	s.seed ^= s.seed << 25
	s.seed ^= s.seed >> 27
	return uint32((s.seed * 2685821657736338717) >> 32)
}

func (s *liveSet) alloc(start, end uint64, span int32) int32 {
	n := tnode{start: start, end: end, span: span, prio: s.rand(), left: nilNode, right: nilNode}
	if k := len(s.free); k > 0 {
		i := s.free[k-1]
		s.free = s.free[:k-1]
		s.nodes[i] = n
		return i
	}
	s.nodes = append(s.nodes, n)
	return int32(len(s.nodes) - 1)
}

// split cuts t into the nodes with start < key and those with start >= key.
func (s *liveSet) split(t int32, key uint64) (l, r int32) {
	if t == nilNode {
		return nilNode, nilNode
	}
	n := &s.nodes[t]
	if n.start < key {
		a, b := s.split(n.right, key)
		s.nodes[t].right = a
		return t, b
	}
	a, b := s.split(n.left, key)
	s.nodes[t].left = b
	return a, t
}

// merge joins l and r, every key of l below every key of r.
func (s *liveSet) merge(l, r int32) int32 {
	if l == nilNode {
		return r
	}
	if r == nilNode {
		return l
	}
	if s.nodes[l].prio > s.nodes[r].prio {
		s.nodes[l].right = s.merge(s.nodes[l].right, r)
		return l
	}
	s.nodes[r].left = s.merge(l, s.nodes[r].left)
	return r
}

// get returns the span of the range starting at start, or -1.
func (s *liveSet) get(start uint64) int32 {
	t := s.root
	for t != nilNode {
		n := &s.nodes[t]
		switch {
		case start < n.start:
			t = n.left
		case start > n.start:
			t = n.right
		default:
			return n.span
		}
	}
	return -1
}

// overlaps tells whether some range overlaps [start, end).
func (s *liveSet) overlaps(start, end uint64) bool {
	// The range with the greatest start below end is the only candidate, as ranges do not overlap.
	t, best := s.root, int32(nilNode)
	for t != nilNode {
		n := &s.nodes[t]
		if n.start < end {
			best = t
			t = n.right
		} else {
			t = n.left
		}
	}
	return best != nilNode && s.nodes[best].end > start
}

// insert adds [start, end); the caller has removed what overlaps it.
func (s *liveSet) insert(start, end uint64, span int32) {
	l, r := s.split(s.root, start)
	s.root = s.merge(s.merge(l, s.alloc(start, end, span)), r)
}

// replace inserts [start, end), which is not empty, and removes the ranges it overlaps, calling gone with
// their spans; unless dup says that the range already at start is the same code: then it changes
// nothing and returns false.
func (s *liveSet) replace(start, end uint64, span int32, dup func(old int32) bool, gone func(old int32)) bool {
	a, b := s.split(s.root, start)
	if b != nilNode {
		m := b
		for s.nodes[m].left != nilNode {
			m = s.nodes[m].left
		}
		if s.nodes[m].start == start && dup(s.nodes[m].span) {
			s.root = s.merge(a, b)
			return false
		}
	}
	a = s.dropLastIfReaches(a, start, gone)
	c, d := s.split(b, end)
	s.drop(c, gone)
	s.root = s.merge(s.merge(a, s.alloc(start, end, span)), d)
	return true
}

// dropLastIfReaches removes the last range of t if it ends after start, and returns the new root.
func (s *liveSet) dropLastIfReaches(t int32, start uint64, gone func(old int32)) int32 {
	if t == nilNode {
		return t
	}
	parent, last := int32(nilNode), t
	for s.nodes[last].right != nilNode {
		parent, last = last, s.nodes[last].right
	}
	if s.nodes[last].end <= start {
		return t
	}
	if gone != nil {
		gone(s.nodes[last].span)
	}
	child := s.nodes[last].left
	s.free = append(s.free, last)
	if parent == nilNode {
		return child
	}
	s.nodes[parent].right = child
	return t
}

// removeOverlapping removes every range that overlaps [start, end), which is not empty, and calls fn with
// its span.
func (s *liveSet) removeOverlapping(start, end uint64, fn func(span int32)) {
	a, b := s.split(s.root, start)
	a = s.dropLastIfReaches(a, start, fn) // in a, only the last range can reach start
	c, d := s.split(b, end)
	s.drop(c, fn)
	s.root = s.merge(a, d)
}

// remove removes the range starting at start, if there is one.
func (s *liveSet) remove(start uint64) {
	a, b := s.split(s.root, start)
	c, d := s.split(b, start+1)
	if start == ^uint64(0) {
		c, d = b, nilNode
	}
	s.drop(c, nil)
	s.root = s.merge(a, d)
}

// drop frees the nodes of t, calling fn for each (in no particular order).
func (s *liveSet) drop(t int32, fn func(span int32)) {
	if t == nilNode {
		return
	}
	s.drop(s.nodes[t].left, fn)
	s.drop(s.nodes[t].right, fn)
	if fn != nil {
		fn(s.nodes[t].span)
	}
	s.free = append(s.free, t)
}

// each calls fn for every range in address order.
func (s *liveSet) each(fn func(start, end uint64, span int32)) {
	var walk func(t int32)
	walk = func(t int32) {
		if t == nilNode {
			return
		}
		walk(s.nodes[t].left)
		fn(s.nodes[t].start, s.nodes[t].end, s.nodes[t].span)
		walk(s.nodes[t].right)
	}
	walk(s.root)
}
