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
