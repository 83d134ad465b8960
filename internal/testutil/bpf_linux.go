package testutil

import (
	"os"
	"testing"

	"github.com/cilium/ebpf"
)

// MustHaveBPF skips the test (fails it under CI) unless it can create BPF ring buffers and uprobes:
// root on Linux 5.8 or later with the uprobe PMU.
func MustHaveBPF(t testing.TB) {
	t.Helper()
	SkipInShort(t, "BPF")
	MustHaveRoot(t)
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.RingBuf, MaxEntries: uint32(os.Getpagesize())})
	if err != nil {
		Skipf(t, "test needs BPF ring buffers (Linux 5.8, CAP_BPF): %v", err)
	}
	_ = m.Close()
	if _, err := os.Stat("/sys/bus/event_source/devices/uprobe/type"); err != nil {
		Skipf(t, "test needs the uprobe PMU (CONFIG_UPROBE_EVENTS): %v", err)
	}
}
