package usdt

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
)

// newThreadMap creates the weighed threads' map (mapThreads) with the weight's threads in it.
func newThreadMap(w *ThreadWeight) (*ebpf.Map, error) {
	m, err := ebpf.NewMap(&ebpf.MapSpec{Name: "usdt_threads", Type: ebpf.Hash, KeySize: 4, ValueSize: threadValueSize,
		MaxEntries: uint32(w.MaxThreads)})
	if err != nil {
		return nil, bpfError("create thread map", err)
	}
	for _, th := range w.Threads {
		if err := setThread(m, th); err != nil {
			_ = m.Close()
			return nil, err
		}
	}
	return m, nil
}

// setThread gives thread th.TID its base and values in the map (see Aggregator.SetThread).
func setThread(m *ebpf.Map, th WeightedThread) error {
	var v [threadValueSize]byte
	ne := binary.NativeEndian
	ne.PutUint64(v[:], th.Base)
	ne.PutUint64(v[8:], th.Counter)
	ne.PutUint64(v[16:], th.Epoch)
	ne.PutUint64(v[24:], th.Direct)
	ne.PutUint64(v[32:], noStable) // its next sample has no window: its previous one was not seen
	if err := m.Update(uint32(th.TID), v[:], ebpf.UpdateAny); err != nil {
		return fmt.Errorf("usdt: set thread %d: %w", th.TID, err)
	}
	return nil
}

// deleteThread forgets thread tid; a nil map has nothing to forget.
func deleteThread(m *ebpf.Map, tid int) error {
	if m == nil {
		return nil
	}
	if err := m.Delete(uint32(tid)); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("usdt: delete thread %d: %w", tid, err)
	}
	return nil
}
