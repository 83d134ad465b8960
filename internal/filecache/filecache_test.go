package filecache

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

type parsed struct{ data []byte }

func TestCacheShares(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "lib.so")
	if err := os.WriteFile(p, []byte("ELF"), 0o644); err != nil {
		t.Fatal(err)
	}
	open := func() ID {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		id, ok := Identify(f)
		if !ok {
			t.Fatal("no identity for a regular file")
		}
		return id
	}
	var c Cache[parsed]
	reads := 0
	read := func() (*parsed, error) { reads++; return &parsed{data: make([]byte, 1<<20)}, nil }
	a, _ := c.Get(open(), read)
	b, _ := c.Get(open(), read)
	if a != b || reads != 1 {
		t.Errorf("the same file read %d times (shared: %v)", reads, a == b)
	}
	if _, err := c.Get(ID{Ino: 1}, func() (*parsed, error) { return nil, errors.New("corrupt") }); err == nil {
		t.Error("read's error was not returned")
	}
	if c.Has(ID{Ino: 1}) {
		t.Error("a failed read was stored")
	}
	// Replaced at its path: another identity, read again.
	if err := os.WriteFile(p+".new", []byte("ELF2"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(p+".new", p); err != nil {
		t.Fatal(err)
	}
	if d, _ := c.Get(open(), read); d == a || reads != 2 {
		t.Errorf("a replaced file was not read again (%d reads)", reads)
	}
	// a, b and d are no longer used: the cache must let them go.
	deadline := time.Now().Add(10 * time.Second)
	for c.Len() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d entries held after every value was dropped", c.Len())
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
}

func TestIdentifyNotRegular(t *testing.T) {
	f, err := os.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, ok := Identify(f); ok {
		t.Error("a directory has an identity to share by")
	}
}
