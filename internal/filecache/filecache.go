// Package filecache shares what was read of a file among its readers: processes that map the same file
// (many JVMs of one JDK map one libjvm.so, whose symbols and call frame information are megabytes in
// memory) get one copy of it. A copy is held only while some reader holds it, so a long-running reader
// (the fleet agent, a recorder) does not keep the files of processes long gone.
package filecache

import (
	"os"
	"runtime"
	"sync"
	"weak"
)

// ID is a file's identity: device, inode, size and modification time. A file replaced at its path (a
// JDK upgraded in place) has another.
type ID struct {
	Dev, Ino uint64
	Size     int64
	Mtime    int64 // ns since the epoch
}

// Identify returns the identity of an open regular file; false when there is none to give (not a
// regular file, or a system without inode numbers).
func Identify(f *os.File) (ID, bool) {
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return ID{}, false
	}
	return identify(f, fi)
}

// Cache maps file identities to what was read of them, weakly: an entry goes when the last value
// returned for it is no longer referenced. The zero value is ready to use; it is safe for concurrent use.
type Cache[V any] struct {
	mu sync.Mutex
	m  map[ID]weak.Pointer[V]
}

// Get returns the value for id, calling read for it when there is none. read runs without the cache's
// lock (it may take seconds), so two readers of a new file may both read it: the first stored wins. An
// error from read is returned and nothing is stored.
func (c *Cache[V]) Get(id ID, read func() (*V, error)) (*V, error) {
	if v := c.load(id); v != nil {
		return v, nil
	}
	v, err := read()
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.valueLocked(id); old != nil {
		return old, nil
	}
	if c.m == nil {
		c.m = map[ID]weak.Pointer[V]{}
	}
	c.m[id] = weak.Make(v)
	runtime.AddCleanup(v, c.drop, id)
	return v, nil
}

// Len returns the number of entries, live or not yet cleaned up.
func (c *Cache[V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

// Has reports whether a value for id is held.
func (c *Cache[V]) Has(id ID) bool { return c.load(id) != nil }

func (c *Cache[V]) load(id ID) *V {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.valueLocked(id)
}

// valueLocked returns id's value while it is held, nil otherwise; c.mu is held.
func (c *Cache[V]) valueLocked(id ID) *V {
	if wp, ok := c.m[id]; ok {
		return wp.Value()
	}
	return nil
}

// drop removes id's entry once its value is gone (not one stored for id since).
func (c *Cache[V]) drop(id ID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[id]; ok && c.valueLocked(id) == nil {
		delete(c.m, id)
	}
}
