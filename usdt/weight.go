package usdt

import (
	"fmt"

	"github.com/cilium/ebpf/asm"
)

// ThreadWeight weighs each firing by the growth of a counter of the firing thread, read from the traced
// process's memory in the probe's context: the counter is the sum of the 64-bit values at Add minus those
// at Sub, offsets from the thread's base address that Aggregator.SetThread or Tracer.SetThread gives
// (HotSpot: a JavaThread's allocated bytes, the weight of JFR's allocation samples). A thread's first firing is
// weighed from the counter value SetThread gave, or not at all if that was 0. Firings of threads without
// a base, with an unreadable counter or with a growth above Max are counted in Bucket.Unweighted instead.
type ThreadWeight struct {
	Add, Sub []int32
	// Epoch, when set, is the offset of a 64-bit value that changes when the thread starts a new
	// allocation buffer (HotSpot: its TLAB's start), and makes the weights those of a sample taken at
	// each new buffer, as JFR's allocation samples are: a firing that sees a new Epoch weighs the counter's
	// growth since the thread's previous sample; a firing where Direct (the offset of a value that grows
	// by what the thread allocates outside a buffer: HotSpot's allocated bytes) grew but Epoch did not
	// weighs Direct's growth alone, which the next buffer's firing does not weigh again; other firings
	// (allocations inside the current buffer, which some code reports one by one) are not weighed
	// (Bucket.Unweighted): the buffer's next sample stands for them. Weighing them by their own size
	// instead would count them twice in expectation: the buffer samples fall on the allocations that
	// report themselves as often as on the others.
	Epoch, Direct *int32
	// Top, with an Epoch, is the offset of the buffer's top (its used part is Top - Epoch), and Size the
	// probe argument that is the firing's allocation size: a firing that sees a new Epoch is then a new
	// buffer's sample only when the buffer's used part is that size (the firing's allocation is the
	// buffer's first) or the Epoch is 0 (no buffer). Otherwise the buffer's start fired unseen (before
	// the trace, or from code that does not report new buffers) and the firing is not weighed, the
	// thread's values left as they were: the next sample weighs since the last one seen, not since a
	// start that was missed.
	Top  *int32
	Size int
	// Threads are given their base before the uprobes are attached, so that no firing of theirs goes
	// unweighted for want of one.
	Threads []WeightedThread
	// Max, when not 0, is the largest weight taken (a counter that went back, or a thread whose base is
	// stale because the tid was reused, gives an absurd growth).
	Max uint64
	// MaxThreads bounds the threads with a base; default 4096.
	MaxThreads int
	// Only, in a trace (Attach), records only the firings that carry a weight: the others cost a record
	// each and stand for nothing (HotSpot: allocations inside a TLAB, which its sample stands for). An
	// aggregation counts every firing and refuses it.
	Only bool
	// Window, in an aggregation with Epoch, Direct and Top, copies at each new buffer's sample the start of
	// the thread's previous buffer (see BufferWindow).
	Window *BufferWindow
}

// BufferWindow asks an aggregation to copy, at each new buffer's sample, the first bytes of the thread's
// previous buffer out of the traced process, and to hand them to Handle with the sample's weight. HotSpot:
// a TLAB holds the objects its thread allocated in it, one after the other, so the start of the previous
// TLAB is a stretch of the thread's allocations that the new TLAB's sample stands for, where the sample's
// own allocation (the first object of the new TLAB) is one point of it. The copy is taken in the probe:
// the buffer's memory is the thread's until the collector reuses it.
//
// The previous buffer is the one whose start the thread's previous sample saw (Epoch), and its used
// part the growth of Direct since then (HotSpot adds a TLAB's used bytes to the thread's allocated
// bytes when it retires it; allocations outside a TLAB fire themselves and are taken out). A window is
// copied only when that is known to hold: the previous sample was seen (no buffer's start fired unseen
// in between), and the 32-bit value at Stable (HotSpot: CollectedHeap::_total_collections, which every
// collection that moves or frees objects increments before it starts) did not change since it.
type BufferWindow struct {
	// Bytes is the most bytes copied per window, a power of 2 from 16 to MaxWindowBytes. A used part
	// longer than that is copied from its start to a point chosen at random from Bytes/2 to Bytes-1:
	// buffers that all start at the same point of a loop would otherwise all end their windows at the
	// same point of it too, and weigh the objects there more than once per round.
	Bytes int
	// Stable is the address of the 32-bit value that must be unchanged between two samples.
	Stable uint64
	// BufferSize is the size of the ring buffer the windows go through; default 8 MiB.
	BufferSize int
	// Handle is called for each window, from one goroutine, until the aggregation stops (Stop hands it the
	// windows still buffered first).
	Handle func(Window)
}

// MaxWindowBytes bounds BufferWindow.Bytes.
const MaxWindowBytes = 64 << 10

// Window is one copied window: the sample's site and key (as Bucket has them), its weight, the address
// the copy starts at, and the bytes: the previous buffer's used part, or its first BufferWindow.Bytes/2 to
// BufferWindow.Bytes-1 when it is longer (Used tells). A sample that has a window (or should have had one: see
// Aggregator.Windows) counts in its key's bucket as a weighted firing of weight 0: its weight is the
// window's.
type Window struct {
	Site   int
	Key    []uint64
	Weight uint64
	Start  uint64
	Used   uint64
	Data   []byte
}

// WeightedThread is a thread's base address and the values now of ThreadWeight's counter, Epoch and
// Direct (see Aggregator.SetThread).
type WeightedThread struct {
	TID                    int
	Base                   uint64
	Counter, Epoch, Direct uint64
}

// maxWeightTerms bounds ThreadWeight.Add plus Sub.
const maxWeightTerms = 4

func (w *ThreadWeight) withDefaults(what string) (*ThreadWeight, error) {
	ww := *w
	if ww.MaxThreads == 0 {
		ww.MaxThreads = 4096
	}
	switch {
	case len(ww.Add) == 0 || len(ww.Add)+len(ww.Sub) > maxWeightTerms:
		return nil, fmt.Errorf("usdt: %s: a weight of %d+%d terms (1 to %d, at least one added)", what, len(ww.Add), len(ww.Sub), maxWeightTerms)
	case ww.MaxThreads < 1 || ww.MaxThreads > 1<<20:
		return nil, fmt.Errorf("usdt: %s: %d weighted threads", what, ww.MaxThreads)
	case (ww.Direct != nil || ww.Top != nil) && ww.Epoch == nil:
		return nil, fmt.Errorf("usdt: %s: a weight with Direct or Top needs an Epoch", what)
	}
	if win := ww.Window; win != nil {
		switch {
		case ww.Epoch == nil || ww.Direct == nil || ww.Top == nil:
			return nil, fmt.Errorf("usdt: %s: a window needs a weight with Epoch, Direct and Top", what)
		case win.Bytes < 16 || win.Bytes > MaxWindowBytes || win.Bytes&(win.Bytes-1) != 0:
			return nil, fmt.Errorf("usdt: %s: a window of %d bytes (a power of 2 from 16 to %d)", what, win.Bytes, MaxWindowBytes)
		case win.Stable == 0 || win.Handle == nil:
			return nil, fmt.Errorf("usdt: %s: a window without its stable value's address or its handler", what)
		}
		w2 := *win
		if w2.BufferSize == 0 {
			w2.BufferSize = 8 << 20
		}
		ww.Window = &w2
	}
	return &ww, nil
}

// validate checks the weight's size argument against probe p; a nil weight is valid.
func (w *ThreadWeight) validate(p *Probe) error {
	if w != nil && w.Top != nil && (w.Size < 0 || w.Size >= len(p.Args)) {
		return fmt.Errorf("probe %s has %d arguments: no size argument %d", p, len(p.Args), w.Size)
	}
	return nil
}

// mapThreads is the map of the weighed threads: BPF_MAP_TYPE_HASH, u32 tid → u64 base, u64 the counter at
// its previous weighed firing, u64 Epoch, u64 Direct, u64 the window's stable value at its previous
// sample (noStable when the next sample has no window) (threadValueSize bytes).
const (
	mapThreads      = "threads"
	threadValueSize = 40
	// noStable is never a 32-bit stable value: no window at the thread's next sample.
	noStable = 1 << 62
)

// weightSlots are the stack slots (offsets from R10) weightCode uses: it leaves the firing's weight in
// weight and 1 in unweighted when it has none (else 0); with a Window, the previous buffer's start in
// wstart and the bytes to copy from it in wlen (0: no window), and 1 in sample when the firing is a new
// buffer's sample (a window was looked for: with wlen 0, one that could not be had). The others are its
// scratch. It also uses the 8 bytes at R10-8.
type weightSlots struct {
	weight, unweighted, tid, counter, epoch, direct, top, size int16
	wstart, wlen, sample                                       int16
}

// weightCode is the code that weighs a firing (see ThreadWeight), with the weighed threads' map
// (mapThreads). thread is a callee-saved register it may use; R6 must hold the probe's context. Its labels
// start with "w_".
func weightCode(w *ThreadWeight, regs ptRegs, p *Probe, thread asm.Register, sl weightSlots) (asm.Instructions, error) {
	var insns asm.Instructions
	add := func(is ...asm.Instruction) { insns = append(insns, is...) }
	if w.Window != nil {
		// No window unless windowCode chooses one: every other path leaves wlen (and wstart) 0.
		add(
			asm.Mov.Imm(asm.R1, 0),
			asm.StoreMem(asm.R10, sl.wlen, asm.R1, asm.DWord),
			asm.StoreMem(asm.R10, sl.wstart, asm.R1, asm.DWord),
			asm.StoreMem(asm.R10, sl.sample, asm.R1, asm.DWord),
		)
	}
	add(
		asm.FnGetCurrentPidTgid.Call(),
		asm.StoreMem(asm.R10, sl.tid, asm.R0, asm.Word), // the low half: the tid
		asm.LoadMapPtr(asm.R1, 0).WithReference(mapThreads),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, int32(sl.tid)),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "w_no_weight"),
		asm.Mov.Reg(thread, asm.R0),
		asm.Mov.Imm(asm.R1, 0),
		asm.StoreMem(asm.R10, sl.counter, asm.R1, asm.DWord),
	)

	// read puts the 64-bit value at off from the thread's base into R0, or leaves for no_weight (with a
	// Window, through no_window: a buffer's start may have gone unseen).
	unread := "w_no_weight"
	if w.Window != nil {
		unread = "w_no_window"
	}
	read := func(off int32) {
		add(
			asm.Mov.Reg(asm.R1, asm.R10),
			asm.Add.Imm(asm.R1, -8),
			asm.Mov.Imm(asm.R2, 8),
			asm.LoadMem(asm.R3, thread, 0, asm.DWord),
			asm.Add.Imm(asm.R3, off),
			asm.FnProbeReadUser.Call(),
			asm.JNE.Imm(asm.R0, 0, unread),
			asm.LoadMem(asm.R0, asm.R10, -8, asm.DWord),
		)
	}
	terms := append(append([]int32(nil), w.Add...), w.Sub...)
	for k, off := range terms {
		op := asm.Add
		if k >= len(w.Add) {
			op = asm.Sub
		}
		read(off)
		add(
			asm.LoadMem(asm.R1, asm.R10, sl.counter, asm.DWord),
			op.Reg(asm.R1, asm.R0),
			asm.StoreMem(asm.R10, sl.counter, asm.R1, asm.DWord),
		)
	}
	// The thread's own firings are the only writers of its entry's values (the probe runs on it):
	// [8] the counter at the previous weighed firing, 0 for none yet, [16] Epoch, [24] Direct.
	if w.Epoch == nil {
		add(
			asm.LoadMem(asm.R1, asm.R10, sl.counter, asm.DWord),
			asm.LoadMem(asm.R2, thread, 8, asm.DWord),
			asm.StoreMem(thread, 8, asm.R1, asm.DWord),
			asm.JEq.Imm(asm.R2, 0, "w_no_weight"),
			asm.Sub.Reg(asm.R1, asm.R2),
		)
	} else {
		read(*w.Epoch)
		add(asm.StoreMem(asm.R10, sl.epoch, asm.R0, asm.DWord))
		if w.Direct != nil {
			read(*w.Direct)
		} else {
			add(asm.Mov.Imm(asm.R0, 0))
		}
		add(asm.StoreMem(asm.R10, sl.direct, asm.R0, asm.DWord))
		if w.Top != nil {
			read(*w.Top)
			add(asm.StoreMem(asm.R10, sl.top, asm.R0, asm.DWord))
			size, err := loadArg(regs, p, w.Size, asm.R10, -8, nil)
			if err != nil {
				return nil, err
			}
			add(size...)
			add(asm.StoreMem(asm.R10, sl.size, asm.R0, asm.DWord))
		}
		newEpoch := "w_new_epoch"
		if w.Top != nil {
			newEpoch = "w_epoch_changed"
		}
		add(
			asm.LoadMem(asm.R1, asm.R10, sl.counter, asm.DWord),
			asm.LoadMem(asm.R2, thread, 8, asm.DWord),
			asm.LoadMem(asm.R3, asm.R10, sl.epoch, asm.DWord),
			asm.LoadMem(asm.R4, asm.R10, sl.direct, asm.DWord),
			asm.JEq.Imm(asm.R2, 0, "w_first"),
			asm.LoadMem(asm.R5, thread, 16, asm.DWord),
			asm.JNE.Reg(asm.R3, asm.R5, newEpoch),
			asm.LoadMem(asm.R5, thread, 24, asm.DWord),
			// Inside the current buffer: no weight, the buffer's next sample stands for it.
			asm.JEq.Reg(asm.R4, asm.R5, "w_no_weight"),
			// Outside a buffer: Direct's growth, taken out of what the next buffer's firing weighs.
			asm.StoreMem(thread, 24, asm.R4, asm.DWord),
			asm.Sub.Reg(asm.R4, asm.R5),
			asm.Add.Reg(asm.R2, asm.R4),
			asm.StoreMem(thread, 8, asm.R2, asm.DWord),
			asm.Mov.Reg(asm.R1, asm.R4),
			asm.Ja.Label("w_weighed"),
			// The first firing only sets the values.
			asm.StoreMem(thread, 8, asm.R1, asm.DWord).WithSymbol("w_first"),
			asm.StoreMem(thread, 16, asm.R3, asm.DWord),
			asm.StoreMem(thread, 24, asm.R4, asm.DWord),
		)
		noWindow := asm.Ja.Label("w_no_weight")
		if w.Window != nil {
			noWindow = asm.LoadImm(asm.R1, noStable, asm.DWord).WithSymbol("w_no_window")
			add(
				noWindow,
				asm.StoreMem(thread, 32, asm.R1, asm.DWord),
				asm.Ja.Label("w_no_weight"),
			)
		} else {
			add(noWindow)
		}
		if w.Top != nil {
			// A new Epoch: a new buffer's sample only if this allocation is the buffer's first. If not,
			// a buffer's start fired unseen: the next sample has no window.
			notFirst := "w_no_weight"
			if w.Window != nil {
				notFirst = "w_no_window"
			}
			add(
				asm.JEq.Imm(asm.R3, 0, "w_new_epoch").WithSymbol("w_epoch_changed"),
				asm.LoadMem(asm.R0, asm.R10, sl.top, asm.DWord),
				asm.Sub.Reg(asm.R0, asm.R3),
				asm.LoadMem(asm.R5, asm.R10, sl.size, asm.DWord),
				asm.JNE.Reg(asm.R0, asm.R5, notFirst),
			)
		}
		store := asm.StoreMem(thread, 8, asm.R1, asm.DWord)
		if win := w.Window; win != nil {
			add(windowCode(win, thread, sl)...)
			add(
				asm.LoadMem(asm.R1, asm.R10, sl.counter, asm.DWord),
				asm.LoadMem(asm.R2, thread, 8, asm.DWord),
				asm.LoadMem(asm.R3, asm.R10, sl.epoch, asm.DWord),
				asm.LoadMem(asm.R4, asm.R10, sl.direct, asm.DWord),
			)
		} else {
			store = store.WithSymbol("w_new_epoch")
		}
		add(
			// A new buffer: everything since the previous sample, less what outside-buffer firings weighed.
			store,
			asm.StoreMem(thread, 16, asm.R3, asm.DWord),
			asm.StoreMem(thread, 24, asm.R4, asm.DWord),
			asm.Sub.Reg(asm.R1, asm.R2),
			asm.Mov.Reg(asm.R0, asm.R1).WithSymbol("w_weighed"),
		)
	}
	if w.Max != 0 {
		add(
			asm.LoadImm(asm.R2, int64(w.Max), asm.DWord),
			asm.JGT.Reg(asm.R1, asm.R2, "w_no_weight"),
		)
	}
	add(
		asm.StoreMem(asm.R10, sl.weight, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R1, 0),
		asm.StoreMem(asm.R10, sl.unweighted, asm.R1, asm.DWord),
		asm.Ja.Label("w_weight_done"),
		asm.Mov.Imm(asm.R1, 0).WithSymbol("w_no_weight"),
		asm.StoreMem(asm.R10, sl.weight, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R1, 1),
		asm.StoreMem(asm.R10, sl.unweighted, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("w_weight_done"),
	)
	return insns, nil
}

// windowCode decides, at a new buffer's sample, whether the thread's previous buffer can be copied (see
// BufferWindow): it leaves its start in sl.wstart and the bytes to copy in sl.wlen (0 for none), and
// records the stable value for the thread's next sample. It starts at label w_new_epoch, clobbers R0-R5
// and keeps the thread's entry (thread) as it found it but for [32].
func windowCode(win *BufferWindow, thread asm.Register, sl weightSlots) asm.Instructions {
	return asm.Instructions{
		asm.Mov.Imm(asm.R1, 0).WithSymbol("w_new_epoch"),
		asm.StoreMem(asm.R10, sl.wlen, asm.R1, asm.DWord),
		asm.StoreMem(asm.R10, -8, asm.R1, asm.DWord),
		// No buffer now (Epoch 0: the allocation went outside one): Direct's growth holds it too, so the
		// previous buffer's used part is not known.
		asm.LoadMem(asm.R3, asm.R10, sl.epoch, asm.DWord),
		asm.JEq.Imm(asm.R3, 0, "w_no_stable"),
		// A new buffer's sample, whose own allocation is a point of the new buffer: it has a window, or
		// its weight is spread (see Aggregator.Windows).
		asm.Mov.Imm(asm.R1, 1),
		asm.StoreMem(asm.R10, sl.sample, asm.R1, asm.DWord),
		asm.Mov.Reg(asm.R1, asm.R10),
		asm.Add.Imm(asm.R1, -8),
		asm.Mov.Imm(asm.R2, 4),
		asm.LoadImm(asm.R3, int64(win.Stable), asm.DWord),
		asm.FnProbeReadUser.Call(),
		asm.LoadMem(asm.R1, asm.R10, -8, asm.DWord),
		asm.JEq.Imm(asm.R0, 0, "w_stable_read"),
		asm.LoadImm(asm.R1, noStable, asm.DWord).WithSymbol("w_no_stable"),
		// [32] is the value at the previous sample; this sample's is kept for the next one.
		asm.LoadMem(asm.R2, thread, 32, asm.DWord).WithSymbol("w_stable_read"),
		asm.StoreMem(thread, 32, asm.R1, asm.DWord),
		asm.JNE.Reg(asm.R1, asm.R2, "w_window_done"),
		asm.LoadImm(asm.R3, noStable, asm.DWord),
		asm.JEq.Reg(asm.R1, asm.R3, "w_window_done"),
		// The previous buffer's used bytes: Direct's growth since the previous sample.
		asm.LoadMem(asm.R3, thread, 16, asm.DWord),
		asm.JEq.Imm(asm.R3, 0, "w_window_done"),
		asm.LoadMem(asm.R1, asm.R10, sl.direct, asm.DWord),
		asm.LoadMem(asm.R2, thread, 24, asm.DWord),
		asm.Sub.Reg(asm.R1, asm.R2),
		asm.JSLE.Imm(asm.R1, 0, "w_window_done"),
		asm.StoreMem(asm.R10, sl.wlen, asm.R1, asm.DWord),
		asm.StoreMem(asm.R10, sl.wstart, asm.R3, asm.DWord),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("w_window_done"),
	}
}
