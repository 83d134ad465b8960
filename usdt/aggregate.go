package usdt

import (
	"encoding/binary"
	"fmt"

	"github.com/cilium/ebpf/asm"
)

// Aggregation in the kernel: instead of a record per firing, each site's program counts its firings in a
// BPF hash map, by a key made of the site and some of its argument values, and sums other arguments. A
// firing then costs a map lookup and two atomic adds, and nothing crosses to user space until the caller
// reads the map, which is what it takes to keep up with HotSpot's object__alloc at millions of firings
// per second (a ring buffer record per firing has to be copied, read and decoded, and drops once the
// reader falls behind).
//
// The map's entries are laid out as (native byte order):
//
//	key    offset  size  field
//	       0       4     site index
//	       4       4     0
//	       8       8*k   the values of the key arguments
//	value  0       8     firings
//	       8       8     firings with a summed value out of SumMin..SumMax (not summed)
//	       16      8*s   sums of the summed arguments
//	       ...           with a Weight: 8 bytes of summed weights, 8 of firings without a weight
//	       ...           with a string: s32 bytes copied (or -errno), u32 0, StringSize bytes
//
// A string (such as HotSpot's class name, a pointer and a length) is copied once, by the firing that
// creates the key's entry, so keying by the string's address (a HotSpot Symbol*, which does not move)
// costs no copy on the hot path.

// MaxAggregateArgs bounds AggregateOptions.Key and Sum.
const MaxAggregateArgs = 4

// MaxAggregateStringSize bounds AggregateOptions.StringSize: a new entry is built on the BPF stack, which
// has 512 bytes.
const MaxAggregateStringSize = 256

// AggregateOptions say how Aggregate counts.
type AggregateOptions struct {
	// PID restricts the counts to one process, as Options.PID does.
	PID int
	// Key are the arguments whose values, with the site, key the counts; none counts every firing of a
	// site in one entry.
	Key []int
	// Sum are the arguments whose values are summed per key, such as an allocation's size.
	Sum []int
	// SumMin and SumMax, when SumMax is not 0, bound the summed values (compared as unsigned 64-bit
	// numbers, so a negative signed value is above any SumMax): a firing with a value out of range adds
	// nothing to the sums and is counted in Bucket.OutOfRange. HotSpot passes garbage for some sizes.
	SumMin, SumMax uint64
	// String, when set, is a string argument copied into a key's entry when the entry is created.
	String *StringArg
	// StringSize is the most bytes copied of String, rounded up to a multiple of 8; default and maximum
	// MaxAggregateStringSize.
	StringSize int
	// MaxKeys bounds the number of entries; default 16384. Firings with a new key once the map is full
	// are counted by Aggregator.Missed.
	MaxKeys int
	// Weight, when set, weighs each firing by how much a per-thread counter in the traced process grew
	// since the same thread's previous firing (Bucket.Weight sums it per key).
	Weight *ThreadWeight
}

const defaultMaxKeys = 16384

func (o *AggregateOptions) withDefaults() (AggregateOptions, error) {
	r := *o
	if r.StringSize == 0 {
		r.StringSize = MaxAggregateStringSize
	}
	r.StringSize = (r.StringSize + 7) &^ 7
	if r.MaxKeys == 0 {
		r.MaxKeys = defaultMaxKeys
	}
	switch {
	case r.StringSize < 8 || r.StringSize > MaxAggregateStringSize:
		return r, fmt.Errorf("usdt: aggregate: string size %d not in [1, %d]", o.StringSize, MaxAggregateStringSize)
	case len(r.Key) > MaxAggregateArgs || len(r.Sum) > MaxAggregateArgs:
		return r, fmt.Errorf("usdt: aggregate: more than %d key or summed arguments", MaxAggregateArgs)
	case r.SumMax != 0 && r.SumMin > r.SumMax:
		return r, fmt.Errorf("usdt: aggregate: SumMin %d above SumMax %d", r.SumMin, r.SumMax)
	case r.MaxKeys < 1 || r.MaxKeys > 1<<24:
		return r, fmt.Errorf("usdt: aggregate: %d keys", r.MaxKeys)
	case r.PID < 0 || r.PID > 1<<31-1:
		return r, fmt.Errorf("usdt: pid %d", r.PID)
	}
	if r.Weight != nil {
		w, err := r.Weight.withDefaults("aggregate")
		if err != nil {
			return r, err
		}
		if w.Only {
			return r, fmt.Errorf("usdt: aggregate: a weight with Only (an aggregation counts every firing)")
		}
		r.Weight = w
	}
	return r, nil
}

func (o *AggregateOptions) keySize() int { return 8 + 8*len(o.Key) }

func (o *AggregateOptions) valueSize() int {
	n := 16 + 8*len(o.Sum)
	if o.Weight != nil {
		n += 16
	}
	if o.String != nil {
		n += strHeader + o.StringSize
	}
	return n
}

// Bucket is the count of one key.
type Bucket struct {
	Site  int      // index of the site in the list given to Aggregate
	Key   []uint64 // the values of AggregateOptions.Key, as Event.Args has them
	Count uint64   // firings
	Sums  []uint64 // sums of AggregateOptions.Sum, modulo 2^64
	// OutOfRange are the firings with a summed value outside SumMin..SumMax, included in Count but not in
	// Sums.
	OutOfRange uint64
	// String is AggregateOptions.String as copied when the key was first seen (Arg -1 when there is none).
	String String
	// Weight is the sum of the firings' weights (AggregateOptions.Weight), Unweighted the firings that
	// had none.
	Weight, Unweighted uint64
}

// Map names the aggregation programs refer to.
const (
	mapCounts  = "counts"  // BPF_MAP_TYPE_HASH, key → value as above
	mapMissed  = "missed"  // BPF_MAP_TYPE_PERCPU_ARRAY, [0]: firings whose new key did not fit; windows [1] lost, [2] unreadable, [3] their weight; [4] samples without a window, [5] their weight
	mapWindows = "windows" // BPF_MAP_TYPE_RINGBUF of window records, with a Window
	mapGate    = "gate"    // BPF_MAP_TYPE_ARRAY, [0]: not 0 once the aggregation is frozen
)

// aggSpec is what the aggregation program of one site needs.
type aggSpec struct {
	probe *Probe
	site  uint32
	opts  AggregateOptions
}

func (s *aggSpec) validate() error {
	p := s.probe
	if p.Err != nil {
		return p.Err
	}
	if len(p.Args) > MaxArgs {
		return fmt.Errorf("probe %s has %d arguments, more than %d", p, len(p.Args), MaxArgs)
	}
	for _, i := range append(append([]int(nil), s.opts.Key...), s.opts.Sum...) {
		if i < 0 || i >= len(p.Args) {
			return fmt.Errorf("probe %s has %d arguments: no argument %d", p, len(p.Args), i)
		}
	}
	if err := s.opts.Weight.validate(p); err != nil {
		return err
	}
	if str := s.opts.String; str != nil {
		if str.Ptr < 0 || str.Ptr >= len(p.Args) || str.Len < -1 || str.Len >= len(p.Args) || str.Len == str.Ptr {
			return fmt.Errorf("probe %s has %d arguments: no string at (%d, %d)", p, len(p.Args), str.Ptr, str.Len)
		}
	}
	return nil
}

// program generates the site's aggregation program. Stack frame (offsets from R10):
//
//	-8                  scratch for arguments in memory
//	-16                 1 if a summed value is out of range, else 0
//	-24, -32, -40, -48  with a Weight: the weight, 1 if there is none, the tid, the counter
//	-56, -64            with an Epoch: its value and Direct's
//	-72, -80            with a Top: its value and the Size argument's
//	sumsOff..           the summed values (0 when out of range)
//	keyOff..            the key
//	valOff..            a new entry's value
func (s *aggSpec) program() (asm.Instructions, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	p := s.probe
	regs, err := regsFor(p.Machine)
	if err != nil {
		return nil, err
	}
	const (
		ctx     = asm.R6
		entry   = asm.R7 // the map entry
		ptr     = asm.R8 // a string's address
		scratch = asm.R9 // its length
		eexist  = -17    // -EEXIST from bpf_map_update_elem with BPF_NOEXIST
	)
	o := s.opts
	const overOff = -16
	const weightOff, unweightedOff, tidOff, counterOff, epochOff, directOff = -24, -32, -40, -48, -56, -64
	const topOff, sizeOff, wstartOff, wlenOff, sampleOff = -72, -80, -88, -96, -104
	sumsOff := int16(overOff - 8*len(o.Sum))
	if o.Weight != nil {
		sumsOff = int16(sampleOff - 8*len(o.Sum))
	}
	keyOff := sumsOff - int16(o.keySize())
	valOff := keyOff - int16(o.valueSize())
	if valOff < -512 {
		return nil, fmt.Errorf("probe %s: aggregation needs %d bytes of stack", p, -valOff)
	}

	var insns asm.Instructions
	add := func(is ...asm.Instruction) { insns = append(insns, is...) }
	// load puts argument i's value into R0; a memory argument goes through the 8 bytes at R10-8.
	load := func(i int) error {
		insns, err := loadArg(regs, p, i, asm.R10, -8, nil)
		add(insns...)
		return err
	}

	add(asm.Mov.Reg(ctx, asm.R1))
	if o.PID != 0 {
		add(
			asm.FnGetCurrentPidTgid.Call(),
			asm.RSh.Imm(asm.R0, 32),
			asm.JNE.Imm(asm.R0, int32(o.PID), "exit"),
		)
	}
	// Nothing counts once the aggregation is frozen (Aggregator.Freeze).
	add(
		asm.StoreImm(asm.R10, -8, 0, asm.Word),
		asm.LoadMapPtr(asm.R1, 0).WithReference(mapGate),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, -8),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "exit"),
		asm.LoadMem(asm.R0, asm.R0, 0, asm.Word),
		asm.JNE.Imm(asm.R0, 0, "exit"),
	)
	// cilium/ebpf's asm has no 64-bit store of an immediate: 64-bit constants go through R1.
	add(
		asm.Mov.Imm(asm.R1, 0),
		asm.StoreMem(asm.R10, -8, asm.R1, asm.DWord),
		asm.StoreMem(asm.R10, overOff, asm.R1, asm.DWord),
		asm.StoreImm(asm.R10, keyOff, int64(s.site), asm.Word),
		asm.StoreImm(asm.R10, keyOff+4, 0, asm.Word),
	)
	for k, i := range o.Key {
		if err := load(i); err != nil {
			return nil, err
		}
		add(asm.StoreMem(asm.R10, keyOff+8+int16(8*k), asm.R0, asm.DWord))
	}
	for k, i := range o.Sum {
		if err := load(i); err != nil {
			return nil, err
		}
		add(asm.StoreMem(asm.R10, sumsOff+int16(8*k), asm.R0, asm.DWord))
		if o.SumMax != 0 {
			add(
				asm.LoadImm(asm.R1, int64(o.SumMin), asm.DWord),
				asm.JLT.Reg(asm.R0, asm.R1, "out_of_range"),
				asm.LoadImm(asm.R1, int64(o.SumMax), asm.DWord),
				asm.JGT.Reg(asm.R0, asm.R1, "out_of_range"),
			)
		}
	}
	if o.SumMax != 0 && len(o.Sum) > 0 {
		add(asm.Ja.Label("sums_done"))
		add(asm.Mov.Imm(asm.R1, 0).WithSymbol("out_of_range"))
		for k := range o.Sum {
			add(asm.StoreMem(asm.R10, sumsOff+int16(8*k), asm.R1, asm.DWord))
		}
		add(
			asm.Mov.Imm(asm.R1, 1),
			asm.StoreMem(asm.R10, overOff, asm.R1, asm.DWord),
			asm.Mov.Imm(asm.R0, 0).WithSymbol("sums_done"),
		)
	}
	if w := o.Weight; w != nil {
		// ptr is free until a new key's string is read.
		code, err := weightCode(w, regs, p, ptr, weightSlots{weight: weightOff, unweighted: unweightedOff, tid: tidOff,
			counter: counterOff, epoch: epochOff, direct: directOff, top: topOff, size: sizeOff,
			wstart: wstartOff, wlen: wlenOff, sample: sampleOff})
		if err != nil {
			return nil, err
		}
		add(code...)
		if win := w.Window; win != nil {
			add(s.windowCode(win, wstartOff, wlenOff, sampleOff, weightOff, unweightedOff, keyOff)...)
		}
	}
	weightSlot := int16(16 + 8*len(o.Sum)) // in the value
	lookup := func(miss string) {
		add(
			asm.LoadMapPtr(asm.R1, 0).WithReference(mapCounts),
			asm.Mov.Reg(asm.R2, asm.R10),
			asm.Add.Imm(asm.R2, int32(keyOff)),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, miss),
			asm.Mov.Reg(entry, asm.R0),
			asm.Ja.Label("count"),
		)
	}
	lookup("insert")

	// A new key: build its entry, counting this firing, and insert it unless another CPU was faster.
	add(
		asm.Mov.Imm(asm.R1, 1).WithSymbol("insert"),
		asm.StoreMem(asm.R10, valOff, asm.R1, asm.DWord),
		asm.LoadMem(asm.R0, asm.R10, overOff, asm.DWord),
		asm.StoreMem(asm.R10, valOff+8, asm.R0, asm.DWord),
	)
	for k := range o.Sum {
		add(
			asm.LoadMem(asm.R0, asm.R10, sumsOff+int16(8*k), asm.DWord),
			asm.StoreMem(asm.R10, valOff+16+int16(8*k), asm.R0, asm.DWord),
		)
	}
	if o.Weight != nil {
		add(
			asm.LoadMem(asm.R0, asm.R10, weightOff, asm.DWord),
			asm.StoreMem(asm.R10, valOff+weightSlot, asm.R0, asm.DWord),
			asm.LoadMem(asm.R0, asm.R10, unweightedOff, asm.DWord),
			asm.StoreMem(asm.R10, valOff+weightSlot+8, asm.R0, asm.DWord),
		)
		weightSlot += 16
	}
	if str := o.String; str != nil {
		slot := valOff + weightSlot
		add(asm.Mov.Imm(asm.R1, 0))
		for off := int16(0); off < int16(strHeader+o.StringSize); off += 8 {
			add(asm.StoreMem(asm.R10, slot+off, asm.R1, asm.DWord))
		}
		if err := load(str.Ptr); err != nil {
			return nil, err
		}
		add(asm.Mov.Reg(ptr, asm.R0))
		if str.Len < 0 {
			add(
				asm.Mov.Reg(asm.R1, asm.R10),
				asm.Add.Imm(asm.R1, int32(slot)+strHeader),
				asm.Mov.Imm(asm.R2, int32(o.StringSize)),
				asm.Mov.Reg(asm.R3, ptr),
				asm.FnProbeReadUserStr.Call(),
				asm.StoreMem(asm.R10, slot, asm.R0, asm.Word),
			)
		} else {
			if err := load(str.Len); err != nil {
				return nil, err
			}
			add(
				asm.Mov.Reg(scratch, asm.R0),
				asm.JSLT.Imm(scratch, 0, "str_zero"),
				asm.JLE.Imm(scratch, int32(o.StringSize), "str_read"),
				asm.Mov.Imm(scratch, int32(o.StringSize)),
				asm.Ja.Label("str_read"),
				asm.Mov.Imm(scratch, 0).WithSymbol("str_zero"),
				asm.Mov.Reg(asm.R1, asm.R10).WithSymbol("str_read"),
				asm.Add.Imm(asm.R1, int32(slot)+strHeader),
				asm.Mov.Reg(asm.R2, scratch),
				asm.Mov.Reg(asm.R3, ptr),
				asm.FnProbeReadUser.Call(),
				asm.JEq.Imm(asm.R0, 0, "str_ok"),
				asm.StoreMem(asm.R10, slot, asm.R0, asm.Word),
				asm.Ja.Label("str_done"),
				asm.StoreMem(asm.R10, slot, scratch, asm.Word).WithSymbol("str_ok"),
				asm.Mov.Imm(asm.R0, 0).WithSymbol("str_done"),
			)
		}
	}
	add(
		asm.LoadMapPtr(asm.R1, 0).WithReference(mapCounts),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, int32(keyOff)),
		asm.Mov.Reg(asm.R3, asm.R10),
		asm.Add.Imm(asm.R3, int32(valOff)),
		asm.Mov.Imm(asm.R4, 1), // BPF_NOEXIST
		asm.FnMapUpdateElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "exit"),
		asm.JNE.Imm(asm.R0, eexist, "full"),
	)
	// Another CPU inserted the key meanwhile: count into its entry.
	lookup("exit")

	add(missedAdd(asm.StoreImm(asm.R10, -8, 0, asm.Word).WithSymbol("full"), asm.Mov.Imm(asm.R1, 1), "exit")...)
	add(
		asm.Ja.Label("exit"),

		asm.Mov.Imm(asm.R1, 1).WithSymbol("count"),
		asm.StoreXAdd(entry, asm.R1, asm.DWord),
	)
	if o.SumMax != 0 {
		xadd := asm.StoreXAdd(entry, asm.R1, asm.DWord)
		xadd.Offset = 8
		add(asm.LoadMem(asm.R1, asm.R10, overOff, asm.DWord), xadd)
	}
	for k := range o.Sum {
		xadd := asm.StoreXAdd(entry, asm.R1, asm.DWord)
		xadd.Offset = int16(16 + 8*k)
		add(asm.LoadMem(asm.R1, asm.R10, sumsOff+int16(8*k), asm.DWord), xadd)
	}
	if o.Weight != nil {
		for k, off := range []int16{weightOff, unweightedOff} {
			xadd := asm.StoreXAdd(entry, asm.R1, asm.DWord)
			xadd.Offset = int16(16+8*len(o.Sum)) + int16(8*k)
			add(asm.LoadMem(asm.R1, asm.R10, off, asm.DWord), xadd)
		}
	}
	add(
		asm.Mov.Imm(asm.R0, 0).WithSymbol("exit"),
		asm.Return(),
	)
	return insns, nil
}

// windowCode copies the window weightCode chose into a record of the windows' ring buffer (mapWindows):
//
//	offset  size  field
//	0       4     site index
//	4       4     bytes copied
//	8       8     weight
//	16      8     the previous buffer's start
//	24      8     its used bytes
//	32      8*k   the values of the key arguments
//	...           BufferWindow.Bytes bytes, the first "bytes copied" of them the copy
//
// A window that finds the ring buffer full, or memory it cannot read, is counted in mapMissed[1] and
// [2], its weight added to [3]; a new buffer's sample that could have no window (sample set, wlen 0) is
// counted in [4], its weight added to [5]. The sample's weight goes with its window (or into [3] or [5]),
// not into its key's bucket, which counts the firing as a sample of weight 0. Other weighed firings (an
// allocation outside a buffer, weighed by its own bytes) keep their weight in their bucket.
func (s *aggSpec) windowCode(win *BufferWindow, wstart, wlen, sample, weight, unweighted, keyOff int16) asm.Instructions {
	const rec, n = asm.R7, asm.R9 // the record, the bytes to copy
	hdr := int32(windowHeader + 8*len(s.opts.Key))
	insns := asm.Instructions{
		asm.LoadMem(asm.R1, asm.R10, unweighted, asm.DWord),
		asm.JNE.Imm(asm.R1, 0, "win_done"),
		asm.LoadMem(n, asm.R10, wlen, asm.DWord),
		asm.JNE.Imm(n, 0, "win_some"),
		asm.LoadMem(asm.R1, asm.R10, sample, asm.DWord),
		asm.JEq.Imm(asm.R1, 0, "win_done"),
	}
	// mapMissed[4] += 1, mapMissed[5] += the weight
	insns = append(insns, missedAdd(asm.StoreImm(asm.R10, -8, 4, asm.Word), asm.Mov.Imm(asm.R1, 1), "win_none_weight")...)
	insns = append(insns, missedAdd(asm.StoreImm(asm.R10, -8, 5, asm.Word).WithSymbol("win_none_weight"), asm.LoadMem(asm.R1, asm.R10, weight, asm.DWord), "win_taken")...)
	insns = append(insns,
		asm.Ja.Label("win_taken"),
		asm.JLE.Imm(n, int32(win.Bytes), "win_reserve").WithSymbol("win_some"),
		// A longer buffer: its first Bytes/2 to Bytes bytes, the end chosen at random. A buffer that
		// starts where a loop left the previous one (they all do, where a loop allocates the same
		// objects over and over) would give a window of a fixed length the same partial round of the
		// loop at its end every time: a bias towards the objects there.
		asm.FnGetPrandomU32.Call(),
		asm.And.Imm(asm.R0, int32(win.Bytes/2-1)),
		asm.Add.Imm(asm.R0, int32(win.Bytes/2)),
		asm.Mov.Reg(n, asm.R0),
		asm.LoadMapPtr(asm.R1, 0).WithReference(mapWindows).WithSymbol("win_reserve"),
		asm.Mov.Imm(asm.R2, hdr+int32(win.Bytes)),
		asm.Mov.Imm(asm.R3, 0),
		asm.FnRingbufReserve.Call(),
		asm.Mov.Imm(asm.R1, 1),
		asm.JEq.Imm(asm.R0, 0, "win_missed"),
		asm.Mov.Reg(rec, asm.R0),
		asm.StoreImm(rec, 0, int64(s.site), asm.Word),
		asm.StoreMem(rec, 4, n, asm.Word),
		asm.LoadMem(asm.R1, asm.R10, weight, asm.DWord),
		asm.StoreMem(rec, 8, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, asm.R10, wstart, asm.DWord),
		asm.StoreMem(rec, 16, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, asm.R10, wlen, asm.DWord),
		asm.StoreMem(rec, 24, asm.R1, asm.DWord),
	)
	for k := range s.opts.Key {
		insns = append(insns,
			asm.LoadMem(asm.R1, asm.R10, keyOff+8+int16(8*k), asm.DWord),
			asm.StoreMem(rec, int16(windowHeader+8*k), asm.R1, asm.DWord),
		)
	}
	insns = append(insns,
		asm.Mov.Reg(asm.R1, rec),
		asm.Add.Imm(asm.R1, hdr),
		asm.Mov.Reg(asm.R2, n),
		asm.LoadMem(asm.R3, asm.R10, wstart, asm.DWord),
		asm.FnProbeReadUser.Call(),
		asm.JNE.Imm(asm.R0, 0, "win_fault"),
		asm.Mov.Reg(asm.R1, rec),
		asm.Mov.Imm(asm.R2, bpfRBNoWakeup),
		asm.FnRingbufSubmit.Call(),
		asm.Ja.Label("win_taken"),
		asm.Mov.Reg(asm.R1, rec).WithSymbol("win_fault"),
		asm.Mov.Imm(asm.R2, bpfRBNoWakeup),
		asm.FnRingbufDiscard.Call(),
		asm.Mov.Imm(asm.R1, 2),
	)
	// mapMissed[R1] += 1, mapMissed[3] += the weight
	insns = append(insns, missedAdd(asm.StoreMem(asm.R10, -8, asm.R1, asm.Word).WithSymbol("win_missed"), asm.Mov.Imm(asm.R1, 1), "win_taken")...)
	insns = append(insns, missedAdd(asm.StoreImm(asm.R10, -8, 3, asm.Word), asm.LoadMem(asm.R1, asm.R10, weight, asm.DWord), "win_taken")...)
	insns = append(insns,
		// The window (or the count of windows missed) carries the weight: the bucket counts the firing as
		// a sample of weight 0.
		asm.Mov.Imm(asm.R1, 0).WithSymbol("win_taken"),
		asm.StoreMem(asm.R10, weight, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("win_done"),
	)
	return insns
}

// WindowCounts are the samples of an aggregation with a BufferWindow that no window carries: their
// weights are in no bucket either (Aggregator.Windows).
type WindowCounts struct {
	// Lost are the windows not copied (the ring buffer was full, or their memory could not be read),
	// LostWeight the sum of their weights.
	Lost, LostWeight uint64
	// None are the new buffers' samples that could have no window: the thread's previous buffer is not
	// known (its first sample seen, a buffer's start that fired unseen) or may have been moved or freed
	// (the Stable value changed since: a collection). NoneWeight is the sum of their weights.
	None, NoneWeight uint64
}

// missedAdd adds to the counter of mapMissed whose index index stores at R10-8 the value value puts
// in R1, and goes on at skip if the counter cannot be found.
func missedAdd(index, value asm.Instruction, skip string) asm.Instructions {
	return asm.Instructions{
		index,
		asm.LoadMapPtr(asm.R1, 0).WithReference(mapMissed),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, -8),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, skip),
		value,
		asm.StoreXAdd(asm.R0, asm.R1, asm.DWord),
	}
}

// windowHeader is the size of a window record's fixed fields (see windowCode).
const windowHeader = 32

// decodeWindow parses a window record.
func decodeWindow(o *AggregateOptions, nsites int, raw []byte) (Window, error) {
	ne := binary.NativeEndian
	hdr := windowHeader + 8*len(o.Key)
	if len(raw) < hdr {
		return Window{}, fmt.Errorf("%w: window record of %d bytes", errRecord, len(raw))
	}
	w := Window{Site: int(ne.Uint32(raw)), Weight: ne.Uint64(raw[8:]), Start: ne.Uint64(raw[16:]), Used: ne.Uint64(raw[24:])}
	n := int(ne.Uint32(raw[4:]))
	if w.Site >= nsites || n > len(raw)-hdr || uint64(n) > w.Used {
		return Window{}, fmt.Errorf("%w: window record of site %d, %d bytes of %d", errRecord, w.Site, n, len(raw)-hdr)
	}
	for k := range o.Key {
		w.Key = append(w.Key, ne.Uint64(raw[windowHeader+8*k:]))
	}
	w.Data = raw[hdr : hdr+n]
	return w, nil
}

// decodeBucket parses a map entry; sites are the aggregation's specs.
func decodeBucket(o *AggregateOptions, specs []aggSpec, key, val []byte) (Bucket, error) {
	ne := binary.NativeEndian
	if len(key) != o.keySize() || len(val) != o.valueSize() {
		return Bucket{}, fmt.Errorf("%w: aggregation entry of %d+%d bytes", errRecord, len(key), len(val))
	}
	b := Bucket{Site: int(ne.Uint32(key)), Count: ne.Uint64(val), String: String{Arg: -1}}
	if b.Site >= len(specs) {
		return Bucket{}, fmt.Errorf("%w: aggregation entry of site %d of %d", errRecord, b.Site, len(specs))
	}
	for k := range o.Key {
		b.Key = append(b.Key, ne.Uint64(key[8+8*k:]))
	}
	b.OutOfRange = ne.Uint64(val[8:])
	for k := range o.Sum {
		b.Sums = append(b.Sums, ne.Uint64(val[16+8*k:]))
	}
	off := 16 + 8*len(o.Sum)
	if o.Weight != nil {
		b.Weight, b.Unweighted = ne.Uint64(val[off:]), ne.Uint64(val[off+8:])
		off += 16
	}
	if str := o.String; str != nil {
		n := int32(ne.Uint32(val[off:]))
		data := val[off+strHeader:]
		b.String.Arg = str.Ptr
		switch {
		case n < 0:
			b.String.Fault = true
		case str.Len < 0:
			n = min(n, int32(o.StringSize))
			d := data[:n]
			if i := indexNUL(d); i >= 0 {
				d = d[:i]
			}
			b.String.Data = append([]byte(nil), d...)
			b.String.Truncated = int(n) == o.StringSize
		default:
			n = min(n, int32(o.StringSize))
			b.String.Data = append([]byte(nil), data[:n]...)
			// The length argument is not kept unless it is part of the key.
			for k, i := range o.Key {
				if i == str.Len {
					b.String.Truncated = int64(b.Key[k]) > int64(n)
				}
			}
		}
	}
	return b, nil
}
