package jvmkit

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/jvmkit/jvmkit/usdt/hotspot"
)

// TestAllocTableUnsized: firings whose size is unknown are counted apart and said so, per class and in the
// total, never summed into the bytes.
func TestAllocTableUnsized(t *testing.T) {
	prof := &hotspot.AllocProfile{
		Count: 15, Bytes: 320, Unsized: 5, Sizes: hotspot.SizesClass,
		Classes: []hotspot.ClassAlloc{
			{Class: "Obj", Count: 10, Bytes: 320, InstanceSize: 32},
			{Class: "byte[]", Count: 5, Unsized: 5},
		},
	}
	var out bytes.Buffer
	if err := writeAllocTable(&out, 42, "17.0.15", 3*time.Second, false, prof, prof.Classes); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"15 allocations, 320 B (+ 5 allocations of unknown size)",
		"this JVM's probe passes wrong sizes, so other sizes are unknown",
		"byte[]  (size unknown)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the table lacks %q:\n%s", want, got)
		}
	}
}

// TestAllocFoldedScale: a recorded firing stands for --sample N firings (every firing is weighed before
// the random choice), so its count and its bytes are multiplied by N.
func TestAllocFoldedScale(t *testing.T) {
	p := &hotspot.AllocProfile{Stacks: []hotspot.AllocStack{
		{Class: "byte[]", Thread: "main", Count: 3, Bytes: 300},
		{Class: "Foo", Thread: "main", Count: 1, Bytes: 16},
	}}
	for _, c := range []struct {
		byBytes             bool
		scale               int64
		wantBytes, wantFoos int64
	}{
		{false, 64, 192, 64},
		{true, 64, 19200, 1024},
		{true, 1, 300, 16},
	} {
		f := allocFolded(p, c.byBytes, false, c.scale)
		got := map[string]int64{}
		for _, s := range f.Stacks {
			got[s.Frames[len(s.Frames)-1]] = s.Count
		}
		if got["byte[]"] != c.wantBytes || got["Foo"] != c.wantFoos {
			t.Errorf("bytes %v, scale %d: %v, want byte[] %d, Foo %d", c.byBytes, c.scale, got, c.wantBytes, c.wantFoos)
		}
	}
}
