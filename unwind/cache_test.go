package unwind

import "testing"

// TestGenCache: bounded to twice its limit, and what is used since the last turn survives it.
func TestGenCache(t *testing.T) {
	c := newGenCache[int, int](4)
	for i := range 100 {
		c.put(i, i*10)
		if _, ok := c.get(0); !ok && i > 0 {
			t.Fatalf("after put %d: the entry in use (0) was dropped", i)
		}
		if c.len() > 8 {
			t.Fatalf("after put %d: %d entries, limit 4 a generation", i, c.len())
		}
	}
	if v, ok := c.get(99); !ok || v != 990 {
		t.Errorf("get(99) = %d, %v", v, ok)
	}
	if _, ok := c.get(50); ok {
		t.Error("an entry not used for many turns is still there")
	}
}
