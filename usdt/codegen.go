package usdt

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"

	"github.com/cilium/ebpf/asm"
)

// Layout of an event record in the ring buffer (native byte order). The header is fixed; the sections after
// it have sizes that follow from the site (its argument count, its strings and the string size).
const (
	recTime     = 0  // u64 bpf_ktime_get_ns: CLOCK_MONOTONIC
	recPIDTGID  = 8  // u64 bpf_get_current_pid_tgid: tgid<<32 | tid, in the initial pid namespace
	recSite     = 16 // u32 site index
	recFaults   = 20 // u16 bit i: argument i's memory could not be read (the value is 0)
	recNArgs    = 22 // u8
	recNStrings = 23 // u8
	recFlags    = 24 // u32 optional sections after the strings (flagWeight, flagRegs, flagStack)
	recReserved = 28 // u32
	recHeader   = 32 // then nargs u64 values, then nstrings string slots

	// A string slot: s32 result (bytes copied, or a negative errno), u32 index of the pointer argument,
	// then StringSize bytes.
	strHeader = 8
)

// The flags word announces sections appended after the strings, in this order: flagWeight, the firing's
// weight (u64 weight, u64 1 when it has none, else 0: see ThreadWeight); flagRegs, a copy of the
// probed thread's user registers (the machine's pt_regs words); flagStack, a bounded copy of its user stack
// (u32 bytes copied, u32 0, then the bytes from the stack pointer up; the record ends after the bytes
// copied). The decoder rejects records with flags it does not know, so old readers never misparse new
// records.
const (
	flagRegs   = 1 << 0
	flagStack  = 1 << 1
	flagWeight = 1 << 2

	stackHeader   = 8
	weightSection = 16
)

// Map names the generated programs refer to.
const (
	mapEvents = "events" // BPF_MAP_TYPE_RINGBUF
	mapDrops  = "drops"  // BPF_MAP_TYPE_PERCPU_ARRAY, u32 site → u64 records lost because the ring was full
	// mapScratch is where records with a stack are built (BPF_MAP_TYPE_ARRAY, u32 CPU → one record of the
	// largest site): they are too large for the BPF stack, and bpf_ringbuf_output then sends only the
	// bytes used, where bpf_ringbuf_reserve needs a size known when the program is verified.
	mapScratch = "scratch"
)

// StringArg says that a probe passes a string: the address in argument Ptr and the length in argument Len,
// as HotSpot passes its class and method names (not NUL-terminated), or with Len -1, a NUL-terminated
// string.
type StringArg struct {
	Ptr int `json:"ptr"`
	Len int `json:"len"`
}

// progSpec is what the program of one site needs.
type progSpec struct {
	probe      *Probe
	site       uint32
	strings    []StringArg
	stringSize int    // bytes per string slot, a multiple of 8
	pid        uint32 // only events of this tgid; 0: any
	regs       bool   // copy pt_regs (flagRegs)
	stackSize  int    // copy up to this many bytes of the user stack (flagStack), a multiple of stackChunk; 0: none
	sample     uint32 // record a firing with probability 1/sample; 0: every firing
	noWakeup   bool   // submit with BPF_RB_NO_WAKEUP (Options.Batch)
	weight     *ThreadWeight
}

// bpfRBNoWakeup is BPF_RB_NO_WAKEUP, the flag of bpf_ringbuf_submit and bpf_ringbuf_output that does
// not wake the reader.
const bpfRBNoWakeup = 1

// submitFlags are the flags of the site's ring buffer submits.
func (s *progSpec) submitFlags() int32 {
	if s.noWakeup {
		return bpfRBNoWakeup
	}
	return 0
}

// recordSize is the largest size of the site's records.
func (s *progSpec) recordSize() int {
	return s.fixedSize() + s.stackSize
}

// fixedSize is the size of the site's records without the stack bytes.
func (s *progSpec) fixedSize() int {
	n := recHeader + 8*len(s.probe.Args) + len(s.strings)*(strHeader+s.stringSize)
	if s.weight != nil {
		n += weightSection
	}
	if s.regs || s.stackSize > 0 {
		n += 8 * regWords(s.probe.Machine)
	}
	if s.stackSize > 0 {
		n += stackHeader
	}
	return n
}

func (s *progSpec) flags() uint32 {
	var f uint32
	if s.weight != nil {
		f |= flagWeight
	}
	if s.regs || s.stackSize > 0 {
		f |= flagRegs
	}
	if s.stackSize > 0 {
		f |= flagStack
	}
	return f
}

// regWords is the number of 8-byte words of a machine's uprobe context as copied to records: x86-64's
// struct pt_regs (r15 ... ss, the first 21 words of user_regs_struct), arm64's user_pt_regs (x0-x30, sp,
// pc, pstate).
func regWords(m elf.Machine) int {
	switch m {
	case elf.EM_X86_64:
		return 21
	case elf.EM_AARCH64:
		return 34
	}
	return 0
}

// spWord is the index of the stack pointer in the copied registers.
func spWord(m elf.Machine) int {
	if m == elf.EM_AARCH64 {
		return 31
	}
	return 19
}

// ptRegs describes where a machine's uprobe context, struct pt_regs, keeps a register.
type ptRegs struct {
	ip  int16
	reg func(name string) (off int16, shift uint8, ok bool)
}

func regsFor(m elf.Machine) (ptRegs, error) {
	switch m {
	case elf.EM_X86_64:
		return ptRegs{ip: 128, reg: func(name string) (int16, uint8, bool) {
			r, ok := x86Regs[name]
			return r.off, r.shift, ok
		}}, nil
	case elf.EM_AARCH64:
		return ptRegs{ip: 32 * 8, reg: func(name string) (int16, uint8, bool) {
			off, ok := arm64Regs[name]
			return off, 0, ok
		}}, nil
	}
	return ptRegs{}, fmt.Errorf("%w: machine %v", ErrNotSupported, m)
}

// validate checks what the program generator relies on.
func (s *progSpec) validate() error {
	p := s.probe
	switch {
	case p.Err != nil:
		return p.Err
	case len(p.Args) > MaxArgs:
		return fmt.Errorf("probe %s has %d arguments, more than %d", p, len(p.Args), MaxArgs)
	case len(s.strings) > MaxArgs:
		return fmt.Errorf("probe %s: more than %d strings", p, MaxArgs)
	case s.stringSize%8 != 0 || s.stringSize < 8 || s.stringSize > MaxStringSize:
		return fmt.Errorf("string size %d is not a multiple of 8 in [8, %d]", s.stringSize, MaxStringSize)
	case s.stackSize%stackChunk != 0 || s.stackSize < 0 || s.stackSize > MaxStackSize:
		return fmt.Errorf("stack size %d is not a multiple of %d in [0, %d]", s.stackSize, stackChunk, MaxStackSize)
	}
	for _, str := range s.strings {
		if str.Ptr < 0 || str.Ptr >= len(p.Args) || str.Len < -1 || str.Len >= len(p.Args) || str.Len == str.Ptr {
			return fmt.Errorf("probe %s has %d arguments: no string at (%d, %d)", p, len(p.Args), str.Ptr, str.Len)
		}
	}
	return s.weight.validate(p)
}

// MaxStringSize bounds Options.StringSize.
const MaxStringSize = 4096

// program generates the BPF program of one site: a uprobe (BPF_PROG_TYPE_KPROBE) program whose context is
// struct pt_regs. It reserves a record in the ring buffer, fills in the header, fetches every argument the
// way its spec says (a constant, a pt_regs slot, or bpf_probe_read_user from an address computed from
// pt_regs), normalizes it to its size and signedness, copies the strings, and submits the record. When the
// ring is full it counts a drop for the site instead.
func (s *progSpec) program() (asm.Instructions, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	p := s.probe
	regs, err := regsFor(p.Machine)
	if err != nil {
		return nil, err
	}
	const (
		ctx     = asm.R6 // struct pt_regs *
		rec     = asm.R7 // the reserved record
		scratch = asm.R8 // pid_tgid, then a string's length
		faults  = asm.R9 // bitmap of arguments whose memory could not be read
	)
	size := s.recordSize()
	var insns asm.Instructions
	// pending labels the next instruction added: the target of a jump past the end of an argument's code.
	pending := ""
	add := func(is ...asm.Instruction) {
		if pending != "" && len(is) > 0 {
			is[0] = is[0].WithSymbol(pending)
			pending = ""
		}
		insns = append(insns, is...)
	}
	add(
		asm.Mov.Reg(ctx, asm.R1),
		asm.FnGetCurrentPidTgid.Call(),
		asm.Mov.Reg(scratch, asm.R0),
	)
	if s.pid != 0 {
		// The uprobe's perf event already filters by process (its mm); checking the tgid as well keeps other
		// processes out of the ring should a kernel run the program for them anyway.
		add(
			asm.RSh.Imm(asm.R0, 32),
			asm.JNE.Imm(asm.R0, int32(s.pid), "exit"),
		)
	}
	// The weight's slots, below the 8 bytes at R10-8 that it and the record's code use as scratch.
	wslots := weightSlots{weight: -16, unweighted: -24, tid: -32, counter: -40, epoch: -48, direct: -56, top: -64, size: -72}
	if s.weight != nil {
		// Weighed before the record is taken: rec is free until then.
		code, err := weightCode(s.weight, regs, p, rec, wslots)
		if err != nil {
			return nil, err
		}
		add(code...)
		if s.weight.Only {
			add(
				asm.LoadMem(asm.R0, asm.R10, wslots.unweighted, asm.DWord),
				asm.JNE.Imm(asm.R0, 0, "exit"),
			)
		}
	}
	if s.sample > 1 {
		// After the weight: every firing moves its thread's counters on, so that a recorded firing weighs
		// itself alone, not the firings dropped before it.
		add(
			asm.FnGetPrandomU32.Call(),
			asm.Mod.Imm(asm.R0, int32(s.sample)),
			asm.JNE.Imm(asm.R0, 0, "exit"),
		)
	}
	if s.stackSize > 0 {
		// The record is built in this CPU's scratch slot. The program runs with migration disabled; a
		// task that preempts it on the same CPU and fires a probe would overwrite the slot, which at
		// worst garbles one record.
		add(
			asm.FnGetSmpProcessorId.Call(),
			asm.StoreMem(asm.R10, -4, asm.R0, asm.Word),
			asm.LoadMapPtr(asm.R1, 0).WithReference(mapScratch),
			asm.Mov.Reg(asm.R2, asm.R10),
			asm.Add.Imm(asm.R2, -4),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, "exit"),
		)
	} else {
		add(
			asm.LoadMapPtr(asm.R1, 0).WithReference(mapEvents),
			asm.Mov.Imm(asm.R2, int32(size)),
			asm.Mov.Imm(asm.R3, 0),
			asm.FnRingbufReserve.Call(),
			asm.JEq.Imm(asm.R0, 0, "drop"),
		)
	}
	add(
		asm.Mov.Reg(rec, asm.R0),
		asm.StoreMem(rec, recPIDTGID, scratch, asm.DWord),
		asm.FnKtimeGetNs.Call(),
		asm.StoreMem(rec, recTime, asm.R0, asm.DWord),
		asm.StoreImm(rec, recSite, int64(s.site), asm.Word),
		asm.StoreImm(rec, recNArgs, int64(len(p.Args)), asm.Byte),
		asm.StoreImm(rec, recNStrings, int64(len(s.strings)), asm.Byte),
		asm.StoreImm(rec, recFlags, int64(s.flags()), asm.Word),
		asm.StoreImm(rec, recReserved, 0, asm.Word),
		asm.Mov.Imm(faults, 0),
	)
	for i := range p.Args {
		slot := int16(recHeader + 8*i)
		// A memory argument is read straight into its slot; one that cannot be read sets its fault bit.
		load, err := loadArg(regs, p, i, rec, slot, asm.Instructions{asm.Or.Imm(faults, 1<<i)})
		if err != nil {
			return nil, err
		}
		add(load...)
		add(asm.StoreMem(rec, slot, asm.R0, asm.DWord))
	}
	strBase := recHeader + 8*len(p.Args)
	for k, str := range s.strings {
		slot := int16(strBase + k*(strHeader+s.stringSize))
		ptr := int16(recHeader + 8*str.Ptr)
		label := func(what string) string { return fmt.Sprintf("str%d_%s", k, what) }
		if str.Len < 0 {
			add(
				asm.Mov.Reg(asm.R1, rec),
				asm.Add.Imm(asm.R1, int32(slot)+strHeader),
				asm.Mov.Imm(asm.R2, int32(s.stringSize)),
				asm.LoadMem(asm.R3, rec, ptr, asm.DWord),
				asm.FnProbeReadUserStr.Call(),
				asm.StoreMem(rec, slot, asm.R0, asm.Word),
				asm.StoreImm(rec, slot+4, int64(str.Ptr), asm.Word),
			)
			continue
		}
		// Clamp the length where the verifier can see it: 0 <= len <= stringSize.
		add(
			asm.LoadMem(scratch, rec, int16(recHeader+8*str.Len), asm.DWord),
			asm.JSLT.Imm(scratch, 0, label("zero")),
			asm.JLE.Imm(scratch, int32(s.stringSize), label("read")),
			asm.Mov.Imm(scratch, int32(s.stringSize)),
			asm.Ja.Label(label("read")),
			asm.Mov.Imm(scratch, 0).WithSymbol(label("zero")),
			asm.Mov.Reg(asm.R1, rec).WithSymbol(label("read")),
			asm.Add.Imm(asm.R1, int32(slot)+strHeader),
			asm.Mov.Reg(asm.R2, scratch),
			asm.LoadMem(asm.R3, rec, ptr, asm.DWord),
			asm.FnProbeReadUser.Call(),
			asm.JEq.Imm(asm.R0, 0, label("ok")),
			asm.StoreMem(rec, slot, asm.R0, asm.Word),
			asm.Ja.Label(label("done")),
			asm.StoreMem(rec, slot, scratch, asm.Word).WithSymbol(label("ok")),
			asm.StoreImm(rec, slot+4, int64(str.Ptr), asm.Word).WithSymbol(label("done")),
		)
	}
	off := int16(strBase + len(s.strings)*(strHeader+s.stringSize))
	if s.weight != nil {
		add(
			asm.LoadMem(asm.R0, asm.R10, wslots.weight, asm.DWord),
			asm.StoreMem(rec, off, asm.R0, asm.DWord),
			asm.LoadMem(asm.R0, asm.R10, wslots.unweighted, asm.DWord),
			asm.StoreMem(rec, off+8, asm.R0, asm.DWord),
		)
		off += weightSection
	}
	if s.regs || s.stackSize > 0 {
		for w := range regWords(p.Machine) {
			add(
				asm.LoadMem(asm.R0, ctx, int16(8*w), asm.DWord),
				asm.StoreMem(rec, off+int16(8*w), asm.R0, asm.DWord),
			)
		}
		off += int16(8 * regWords(p.Machine))
	}
	add(asm.StoreMem(rec, recFaults, faults, asm.Half))
	if s.stackSize > 0 {
		add(s.stackCopy(off, int16(8*spWord(p.Machine)))...)
	} else {
		add(
			asm.Mov.Reg(asm.R1, rec),
			asm.Mov.Imm(asm.R2, s.submitFlags()),
			asm.FnRingbufSubmit.Call(),
		)
	}
	add(
		asm.Ja.Label("exit"),

		asm.StoreImm(asm.R10, -4, int64(s.site), asm.Word).WithSymbol("drop"),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, -4),
		asm.LoadMapPtr(asm.R1, 0).WithReference(mapDrops),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "exit"),
		asm.Mov.Imm(asm.R1, 1),
		asm.StoreXAdd(asm.R0, asm.R1, asm.DWord),

		asm.Mov.Imm(asm.R0, 0).WithSymbol("exit"),
		asm.Return(),
	)
	return insns, nil
}

// stackCopy copies the user stack into the stack section at off and sends the record with
// bpf_ringbuf_output, up to the bytes copied. One read of stackSize bytes is the common case; where it
// fails, the stack's mapping ends before (a shallow stack: the main thread's is followed by nothing,
// a thread's by a guard page), and the copy goes on in chunks up to the first that fails. The length is
// kept in R9 (the faults, stored by then), a constant on each path, so that the verifier can bound the
// size bpf_ringbuf_output reads.
func (s *progSpec) stackCopy(off, spOff int16) asm.Instructions {
	const (
		ctx = asm.R6
		rec = asm.R7
		n   = asm.R9
	)
	data := int32(off) + stackHeader
	insns := asm.Instructions{
		asm.Mov.Reg(asm.R1, rec),
		asm.Add.Imm(asm.R1, data),
		asm.Mov.Imm(asm.R2, int32(s.stackSize)),
		asm.LoadMem(asm.R3, ctx, spOff, asm.DWord),
		asm.FnProbeReadUser.Call(),
		asm.Mov.Imm(n, int32(s.stackSize)),
		asm.JEq.Imm(asm.R0, 0, "stack_done"),
		asm.Mov.Imm(n, 0),
	}
	for i := 0; i < s.stackSize/stackChunk; i++ {
		insns = append(insns,
			asm.Mov.Reg(asm.R1, rec),
			asm.Add.Imm(asm.R1, data+int32(i*stackChunk)),
			asm.Mov.Imm(asm.R2, stackChunk),
			asm.LoadMem(asm.R3, ctx, spOff, asm.DWord),
			asm.Add.Imm(asm.R3, int32(i*stackChunk)),
			asm.FnProbeReadUser.Call(),
			asm.JNE.Imm(asm.R0, 0, "stack_done"),
			asm.Add.Imm(n, stackChunk),
		)
	}
	return append(insns,
		asm.StoreMem(rec, off, n, asm.Word).WithSymbol("stack_done"),
		asm.StoreImm(rec, off+4, 0, asm.Word),
		asm.LoadMapPtr(asm.R1, 0).WithReference(mapEvents),
		asm.Mov.Reg(asm.R2, rec),
		asm.Mov.Reg(asm.R3, n),
		asm.Add.Imm(asm.R3, data),
		asm.Mov.Imm(asm.R4, s.submitFlags()),
		asm.FnRingbufOutput.Call(),
		asm.JNE.Imm(asm.R0, 0, "drop"),
	)
}

// loadArg returns the instructions that leave argument i of p in R0, normalized to its size and signedness
// (R6 holds the pt_regs). A memory argument is read with bpf_probe_read_user into the 8 bytes at buf+off,
// which the helper zeroes when the read fails (an unreadable argument is 0); onFault, which may be empty,
// runs after a failed read. It uses R1-R3 as scratch.
func loadArg(regs ptRegs, p *Probe, i int, buf asm.Register, off int16, onFault asm.Instructions) (asm.Instructions, error) {
	const ctx = asm.R6
	a := p.Args[i]
	var insns asm.Instructions
	switch a.Kind {
	case ArgConst:
		// Normalized here: the constant is what the argument's size and signedness make of it.
		return asm.Instructions{asm.LoadImm(asm.R0, int64(a.normalize(uint64(a.Value))), asm.DWord)}, nil
	case ArgReg:
		roff, shift, ok := regs.reg(a.Reg)
		if !ok {
			return nil, fmt.Errorf("probe %s: argument %d: register %q is not in pt_regs", p, i, a.Reg)
		}
		insns = append(insns, asm.LoadMem(asm.R0, ctx, roff, asm.DWord))
		if shift != 0 {
			insns = append(insns, asm.RSh.Imm(asm.R0, int32(shift)))
		}
	case ArgMem:
		addr, err := address(regs, p, a)
		if err != nil {
			return nil, fmt.Errorf("probe %s: argument %d: %w", p, i, err)
		}
		insns = append(insns, addr...)
		insns = append(insns,
			asm.Mov.Reg(asm.R1, buf),
			asm.Add.Imm(asm.R1, int32(off)),
			asm.Mov.Imm(asm.R2, int32(a.Size)),
			asm.FnProbeReadUser.Call(),
		)
		load := asm.LoadMem(asm.R0, buf, off, asm.DWord)
		if len(onFault) > 0 {
			read := fmt.Sprintf("arg%d_ok", i)
			insns = append(insns, asm.JEq.Imm(asm.R0, 0, read))
			insns = append(insns, onFault...)
			load = load.WithSymbol(read)
		}
		insns = append(insns, load)
	default:
		return nil, fmt.Errorf("probe %s: argument %d: kind %v", p, i, a.Kind)
	}
	return append(insns, normalize(asm.R0, a)...), nil
}

// address computes an ArgMem argument's address into R3, using R2 as scratch.
func address(regs ptRegs, p *Probe, a Arg) (asm.Instructions, error) {
	const ctx = asm.R6
	var insns asm.Instructions
	if a.Reg != "" && a.Reg != "rip" {
		off, shift, ok := regs.reg(a.Reg)
		if !ok || shift != 0 {
			return nil, fmt.Errorf("base register %q is not a 64-bit register in pt_regs", a.Reg)
		}
		insns = append(insns, asm.LoadMem(asm.R3, ctx, off, asm.DWord))
	} else {
		insns = append(insns, asm.Mov.Imm(asm.R3, 0))
	}
	if a.Index != "" {
		off, shift, ok := regs.reg(a.Index)
		if !ok || shift != 0 || bits.OnesCount(uint(a.Scale)) != 1 || a.Scale > 8 {
			return nil, fmt.Errorf("index %q scale %d", a.Index, a.Scale)
		}
		insns = append(insns, asm.LoadMem(asm.R2, ctx, off, asm.DWord))
		if a.Scale > 1 {
			insns = append(insns, asm.LSh.Imm(asm.R2, int32(bits.TrailingZeros(uint(a.Scale)))))
		}
		insns = append(insns, asm.Add.Reg(asm.R3, asm.R2))
	}
	if a.Symbol != "" {
		if a.SymbolAddr == 0 {
			return nil, fmt.Errorf("symbol %q is not resolved", a.Symbol)
		}
		// The symbol's run-time address is its link-time address plus the load bias, which is the
		// instruction pointer at the probe (uprobes report the breakpoint's address) minus the site's PC.
		insns = append(insns,
			asm.LoadMem(asm.R2, ctx, regs.ip, asm.DWord),
			asm.Add.Reg(asm.R3, asm.R2),
			asm.LoadImm(asm.R2, int64(a.SymbolAddr-p.PC), asm.DWord),
			asm.Add.Reg(asm.R3, asm.R2),
		)
	}
	switch {
	case a.Value == 0:
	case a.Value == int64(int32(a.Value)):
		insns = append(insns, asm.Add.Imm(asm.R3, int32(a.Value)))
	default:
		insns = append(insns,
			asm.LoadImm(asm.R2, a.Value, asm.DWord),
			asm.Add.Reg(asm.R3, asm.R2),
		)
	}
	return insns, nil
}

// normalize truncates r to the argument's size, sign-extending a signed integer (libbpf's arg_bitshift).
func normalize(r asm.Register, a Arg) asm.Instructions {
	if a.Size >= 8 {
		return nil
	}
	shift := int32(64 - 8*a.Size)
	right := asm.RSh
	if a.Signed && !a.Float {
		right = asm.ArSh
	}
	return asm.Instructions{asm.LSh.Imm(r, shift), right.Imm(r, shift)}
}

// Event is one firing of a probe site.
type Event struct {
	Site  int    // index of the site in the list given to Attach
	Probe *Probe // that site's probe
	Time  uint64 // bpf_ktime_get_ns: nanoseconds of CLOCK_MONOTONIC, the clock of perf record -k mono
	PID   int    // thread group id, in the initial pid namespace (the host's)
	TID   int    // thread id, in the initial pid namespace

	// Args are the raw argument values: Size bytes, sign-extended when the argument is signed. Arg.Decode
	// turns them into numbers of the right type.
	Args []uint64
	// Faults has bit i set when argument i's memory could not be read (its value is then 0).
	Faults uint16
	// Strings are the strings the site was asked to copy, in the order asked.
	Strings []String

	// Regs are the probed thread's user registers at the probe, with Options.Regs or StackSize: the
	// words of x86-64's struct pt_regs (r15, r14, r13, r12, bp, bx, r11, r10, r9, r8, ax, cx, dx, si, di,
	// orig_ax, ip, cs, flags, sp, ss: the first 21 words of user_regs_struct, as ptrace and core files
	// give them) or arm64's user_pt_regs (x0-x30, sp, pc, pstate). ip is the probe's address.
	Regs []uint64
	// Stack is the copy of the user stack from StackAddr up, with Options.StackSize: at most StackSize
	// bytes, fewer where the stack's mapping ended, empty when it could not be read at all.
	Stack     []byte
	StackAddr uint64 // the stack pointer in Regs

	// Weight is the firing's weight and Weighted says it has one, with Options.Weight (see ThreadWeight).
	Weight   uint64
	Weighted bool
}

// String is a copy of a string argument, at most Options.StringSize bytes.
type String struct {
	Arg   int    // index of the pointer argument
	Data  []byte // the bytes copied, without a terminating NUL
	Fault bool   // the memory could not be read: Data is empty
	// Truncated is set when the string was longer than the bytes copied: its length argument is larger,
	// or no NUL was found in the bytes copied.
	Truncated bool
}

var errRecord = errors.New("usdt: malformed record")

// decode parses a record of the given site's program. It copies what it keeps, so raw may be reused.
func (s *progSpec) decode(raw []byte) (Event, error) {
	p := s.probe
	ne := binary.NativeEndian
	if len(raw) < s.fixedSize() {
		return Event{}, fmt.Errorf("%w: %d bytes, want %d for %s", errRecord, len(raw), s.fixedSize(), p)
	}
	if int(raw[recNArgs]) != len(p.Args) || int(raw[recNStrings]) != len(s.strings) || ne.Uint32(raw[recFlags:]) != s.flags() {
		return Event{}, fmt.Errorf("%w: %s: %d arguments, %d strings, flags %#x", errRecord, p,
			raw[recNArgs], raw[recNStrings], ne.Uint32(raw[recFlags:]))
	}
	pidTgid := ne.Uint64(raw[recPIDTGID:])
	e := Event{
		Site:   int(s.site),
		Probe:  p,
		Time:   ne.Uint64(raw[recTime:]),
		PID:    int(pidTgid >> 32),
		TID:    int(uint32(pidTgid)),
		Faults: ne.Uint16(raw[recFaults:]),
		Args:   make([]uint64, len(p.Args)),
	}
	for i := range e.Args {
		e.Args[i] = ne.Uint64(raw[recHeader+8*i:])
	}
	off := recHeader + 8*len(p.Args)
	for _, str := range s.strings {
		n := int32(ne.Uint32(raw[off:]))
		data := raw[off+strHeader : off+strHeader+s.stringSize]
		v := String{Arg: str.Ptr}
		switch {
		case n < 0:
			v.Fault = true
		case str.Len < 0: // bpf_probe_read_user_str: n counts the NUL, and is StringSize when it cut the string
			n = min(n, int32(s.stringSize))
			d := data[:n]
			if i := indexNUL(d); i >= 0 {
				d = d[:i]
			}
			v.Data = append([]byte(nil), d...)
			v.Truncated = int(n) == s.stringSize
		default:
			n = min(n, int32(s.stringSize))
			v.Data = append([]byte(nil), data[:n]...)
			v.Truncated = int64(e.Args[str.Len]) > int64(n)
		}
		e.Strings = append(e.Strings, v)
		off += strHeader + s.stringSize
	}
	if s.flags()&flagWeight != 0 {
		e.Weight, e.Weighted = ne.Uint64(raw[off:]), ne.Uint64(raw[off+8:]) == 0
		off += weightSection
	}
	if s.flags()&flagRegs != 0 {
		e.Regs = make([]uint64, regWords(p.Machine))
		for i := range e.Regs {
			e.Regs[i] = ne.Uint64(raw[off+8*i:])
		}
		off += 8 * len(e.Regs)
		e.StackAddr = e.Regs[spWord(p.Machine)]
	}
	if s.flags()&flagStack != 0 {
		n := int(ne.Uint32(raw[off:]))
		off += stackHeader
		if n > s.stackSize || off+n > len(raw) {
			return Event{}, fmt.Errorf("%w: %s: a stack of %d bytes in a record of %d", errRecord, p, n, len(raw))
		}
		e.Stack = append([]byte(nil), raw[off:off+n]...)
	}
	return e, nil
}

func indexNUL(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return -1
}
