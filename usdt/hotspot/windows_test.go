package hotspot

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/jvmkit/jvmkit/usdt"
	"github.com/jvmkit/jvmkit/vmstructs"
)

// TestWindowsLoop feeds windows of TLABs that all start at the same point of a loop, as the probe copies
// them (a TLAB longer than windowBytes: its first windowBytes/2 to windowBytes-1 bytes), and checks that
// the classes' shares of the spread weight are their shares of the loop's bytes, for loops whose round is
// short and long next to the window. Counted alike, the objects at the start of a round would get more
// (up to a fifth more with a round of 1,200 bytes); with the weights rising from the window's start and
// its random end, a round of 384 bytes is spread to within 1% of each class's share, one of 1,200 to
// within 6% (the weights' smoothing is over 2 KiB).
func TestWindowsLoop(t *testing.T) {
	type obj struct {
		klass uint64
		size  int
	}
	tolerance := map[string]float64{"short": 0.01, "long": 0.06}
	loops := map[string][]obj{
		// The Alloc workload: 8 x 32, 2 x 56, 1 x 16 (384 bytes).
		"short": {{1, 32}, {1, 32}, {1, 32}, {1, 32}, {2, 56}, {1, 32}, {1, 32}, {2, 56}, {1, 32}, {1, 32}, {3, 16}},
		// A round of 1,200 bytes: its first object is 16 of them.
		"long": {{3, 16}, {1, 96}, {1, 96}, {1, 96}, {1, 96}, {1, 96}, {1, 96}, {1, 96}, {1, 96}, {1, 96}, {1, 96}, {2, 224}},
	}
	layout := vmstructs.ObjectLayout{Narrow: true, Base: 0x800000, LengthOffset: 12, Align: 8}
	for name, loop := range loops {
		t.Run(name, func(t *testing.T) {
			var round []byte
			want := map[string]float64{}
			var roundBytes float64
			for _, o := range loop {
				b := make([]byte, o.size)
				binary.LittleEndian.PutUint32(b[8:], uint32(o.klass*8))
				round = append(round, b...)
				want[string(rune('A'+o.klass))] += float64(o.size)
				roundBytes += float64(o.size)
			}
			var tlab []byte
			for len(tlab) < windowBytes {
				tlab = append(tlab, round...)
			}
			w := &windows{layout: layout, klasses: map[uint64]klassEntry{}, lh: map[string]int32{}, bytes: map[string]float64{}, samples: map[string]uint64{}}
			for _, o := range loop {
				w.klasses[0x800000+o.klass*8] = klassEntry{name: string(rune('A' + o.klass)), lh: int32(o.size), ok: true}
				w.lh[string(rune('A'+o.klass))] = int32(o.size) // as klass records them
			}
			rnd := rand.New(rand.NewPCG(1, 2))
			for range 20000 {
				n := windowBytes/2 + rnd.IntN(windowBytes/2) // as the probe chooses it
				w.handle(usdt.Window{Key: []uint64{1}, Weight: 1000, Used: 8192, Data: tlab[:n]})
			}
			var total float64
			for _, b := range w.bytes {
				total += b
			}
			for c, b := range want {
				got, share := w.bytes[c]/total, b/roundBytes
				t.Logf("%s: %.2f%% of the weight, %.2f%% of the bytes", c, 100*got, 100*share)
				if math.Abs(got-share) > tolerance[name]*share {
					t.Errorf("class %s: %.2f%% of the weight, want %.2f%% (within %.0f%% of it)", c, 100*got, 100*share, 100*tolerance[name])
				}
			}
		})
	}
}
