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
// its previous weighed firing, u64 Epoch, u64 Direct (threadValueSize bytes).
const (
	mapThreads      = "threads"
	threadValueSize = 32
)

// weightSlots are the stack slots (offsets from R10) weightCode uses: it leaves the firing's weight in
// weight and 1 in unweighted when it has none (else 0); the others are its scratch. It also uses the 8
// bytes at R10-8.
type weightSlots struct {
	weight, unweighted, tid, counter, epoch, direct, top, size int16
}

// weightCode is the code that weighs a firing (see ThreadWeight), with the weighed threads' map
// (mapThreads). thread is a callee-saved register it may use; R6 must hold the probe's context. Its labels
// start with "w_".
func weightCode(w *ThreadWeight, regs ptRegs, p *Probe, thread asm.Register, sl weightSlots) (asm.Instructions, error) {
	var insns asm.Instructions
	add := func(is ...asm.Instruction) { insns = append(insns, is...) }
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

	// read puts the 64-bit value at off from the thread's base into R0, or leaves for no_weight.
	read := func(off int32) {
		add(
			asm.Mov.Reg(asm.R1, asm.R10),
			asm.Add.Imm(asm.R1, -8),
			asm.Mov.Imm(asm.R2, 8),
			asm.LoadMem(asm.R3, thread, 0, asm.DWord),
			asm.Add.Imm(asm.R3, off),
			asm.FnProbeReadUser.Call(),
			asm.JNE.Imm(asm.R0, 0, "w_no_weight"),
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
			asm.Ja.Label("w_no_weight"),
		)
		if w.Top != nil {
			// A new Epoch: a new buffer's sample only if this allocation is the buffer's first.
			add(
				asm.JEq.Imm(asm.R3, 0, "w_new_epoch").WithSymbol("w_epoch_changed"),
				asm.LoadMem(asm.R0, asm.R10, sl.top, asm.DWord),
				asm.Sub.Reg(asm.R0, asm.R3),
				asm.LoadMem(asm.R5, asm.R10, sl.size, asm.DWord),
				asm.JNE.Reg(asm.R0, asm.R5, "w_no_weight"),
			)
		}
		add(
			// A new buffer: everything since the previous sample, less what outside-buffer firings weighed.
			asm.StoreMem(thread, 8, asm.R1, asm.DWord).WithSymbol("w_new_epoch"),
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
