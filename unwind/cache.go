package unwind

// genCache is a map bounded to twice its limit that keeps what is in use: when the current generation
// is full it becomes the old one (the one before is dropped), and an entry found in the old one is put
// back into the current one. Entries used since the last turn survive it; a JVM that keeps compiling new
// code (new pcs) no longer grows the walker's caches to their bound and keeps them there.
type genCache[K comparable, V any] struct {
	cur, old map[K]V
	limit    int
}

func newGenCache[K comparable, V any](limit int) *genCache[K, V] {
	return &genCache[K, V]{limit: limit}
}

func (c *genCache[K, V]) get(k K) (V, bool) {
	if v, ok := c.cur[k]; ok {
		return v, true
	}
	v, ok := c.old[k]
	if ok {
		c.put(k, v)
	}
	return v, ok
}

func (c *genCache[K, V]) put(k K, v V) {
	if c.cur == nil || len(c.cur) >= c.limit {
		c.old, c.cur = c.cur, make(map[K]V, min(c.limit, 1024))
	}
	c.cur[k] = v
}

func (c *genCache[K, V]) len() int { return len(c.cur) + len(c.old) }
