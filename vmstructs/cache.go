package vmstructs

import (
	"container/list"
	"sync"
)

// lruPageSize is the unit of the page cache; it matches the page size of x86-64, so that a page is
// either wholly readable or not at all.
const lruPageSize = 4096

// lruBypass is the size from which reads go straight to the memory: a large read would evict many
// small fields for data that is rarely read twice.
const lruBypass = 16 * lruPageSize

// Cached returns m with a least-recently-used cache of at most pages 4 KiB pages in front of it, for
// the many small reads of the typed views. Only whole pages that read without error are cached; other
// reads go to m, so results and errors are m's own. The cache never expires: use it for memory that
// does not change (a core file), or for one pass over a live process that may see stale data, and
// drop it afterwards. pages < 1 returns m itself. It is safe for concurrent use if m is.
func Cached(m Memory, pages int) Memory {
	if pages < 1 {
		return m
	}
	return &lruCache{m: m, max: pages, pages: map[uint64]*list.Element{}}
}

type lruCache struct {
	m   Memory
	max int

	mu    sync.Mutex
	pages map[uint64]*list.Element // page address -> element of lru holding a *lruPage
	lru   list.List                // front: most recently used
}

type lruPage struct {
	addr uint64
	data [lruPageSize]byte
}

// ReadAt implements Memory.
func (c *lruCache) ReadAt(p []byte, addr uint64) (int, error) {
	if len(p) >= lruBypass {
		return c.m.ReadAt(p, addr)
	}
	n := 0
	for n < len(p) {
		a := addr + uint64(n)
		if a < addr { // wrapped around: let m decide
			k, err := c.m.ReadAt(p[n:], a)
			return n + k, err
		}
		base := a &^ (lruPageSize - 1)
		chunk := min(len(p)-n, int(base+lruPageSize-a)) // also right on the last page: the sum wraps to 0
		if c.copyPage(p[n:n+chunk], base, a) {
			n += chunk
			continue
		}
		k, err := c.m.ReadAt(p[n:n+chunk], a)
		n += k
		if err != nil {
			return n, err
		}
		if k == 0 {
			return n, &FaultError{Addr: addr, Len: len(p)}
		}
	}
	return n, nil
}

// copyPage copies from the page at base, loading it if needed, and reports whether the page is
// cached.
func (c *lruCache) copyPage(dst []byte, base, a uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.pages[base]; ok {
		c.lru.MoveToFront(e)
		copy(dst, e.Value.(*lruPage).data[a-base:])
		return true
	}
	var pg *lruPage
	if c.lru.Len() >= c.max {
		e := c.lru.Back()
		pg = e.Value.(*lruPage)
		delete(c.pages, pg.addr)
		c.lru.Remove(e)
	} else {
		pg = new(lruPage)
	}
	if n, err := c.m.ReadAt(pg.data[:], base); err != nil || n != len(pg.data) {
		return false
	}
	pg.addr = base
	c.pages[base] = c.lru.PushFront(pg)
	copy(dst, pg.data[a-base:])
	return true
}
