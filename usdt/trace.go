package usdt

import (
	"context"
	"fmt"
	"os"
	"time"
)

// Site is a probe site to trace: the file to attach to and the probe, with the strings to copy when it
// fires.
type Site struct {
	// File is the ELF file as this process can open it, such as Module.File: for a library of another
	// process, the path under /proc/<pid>/root, so that the uprobe lands on the inode the process mapped.
	File    string
	Probe   Probe
	Strings []StringArg
}

// Options tune Attach.
type Options struct {
	// PID restricts the trace to one process, by its pid in the initial namespace (the host pid). With 0,
	// every process that maps the files fires the probes, other users' included. When the process exits,
	// the trace stops.
	PID int
	// StringSize is the most bytes copied of each string, rounded up to a multiple of 8; default 256, at most
	// MaxStringSize.
	StringSize int
	// BufferSize is the size of the ring buffer in bytes, a power of two and a multiple of the page size;
	// default 4 MiB. Records that find it full are counted as drops.
	BufferSize int

	// Regs copies, with every event, the probed thread's user registers at the probe into Event.Regs: at a
	// uprobe the program's context is the thread's user pt_regs.
	Regs bool
	// StackSize, when positive, copies with every event up to this many bytes of the probed thread's user
	// stack, from its stack pointer up, into Event.Stack, for unwinding (package unwind). It implies Regs,
	// is rounded up to a multiple of 1 KiB and is at most MaxStackSize. The copy is shorter where the
	// stack's mapping ends first (see the package documentation).
	StackSize int
	// Sample, when above 1, records each firing with probability 1/Sample (weighed first, with Weight) (bpf_get_prandom_u32 in the
	// program), so that costly records (stacks) can be taken from probes that fire millions of times a
	// second. A random choice, unlike every Nth firing, cannot lock onto a periodic pattern of the traced
	// code. The uprobe's trap is paid by every firing all the same.
	Sample int
	// Batch, when positive, has the programs submit records without waking the reader
	// (BPF_RB_NO_WAKEUP), and Read look at the ring buffer every Batch instead: one wake-up per batch
	// instead of one per event, for tracers that do not need each event at once (the wake-ups, not
	// the events, are what a reader of a few hundred events a second spends its time on). Events are
	// delivered up to Batch late; BufferSize must hold a batch's worth.
	Batch time.Duration
	// Weight, when set, weighs each firing as AggregateOptions.Weight does, into Event.Weight; threads are
	// given their base by Tracer.SetThread.
	Weight *ThreadWeight
}

// MaxStackSize bounds Options.StackSize.
const MaxStackSize = 64 << 10

// stackChunk is the granularity of stack copies: where a copy of StackSize bytes fails (the stack's
// mapping ends before), the program copies chunk by chunk up to the first that fails.
const stackChunk = 1 << 10

const (
	defaultStringSize = 256
	defaultBufferSize = 4 << 20
)

func (o *Options) withDefaults() (Options, error) {
	r := *o
	if r.StringSize == 0 {
		r.StringSize = defaultStringSize
	}
	r.StringSize = (r.StringSize + 7) &^ 7
	if r.StringSize < 8 || r.StringSize > MaxStringSize {
		return r, fmt.Errorf("usdt: string size %d not in [1, %d]", o.StringSize, MaxStringSize)
	}
	if r.BufferSize == 0 {
		r.BufferSize = defaultBufferSize
	}
	page := os.Getpagesize()
	if r.BufferSize < page || r.BufferSize&(r.BufferSize-1) != 0 || r.BufferSize%page != 0 {
		return r, fmt.Errorf("usdt: buffer size %d is not a power of two multiple of the page size (%d)", r.BufferSize, page)
	}
	if r.StackSize < 0 || r.StackSize > MaxStackSize {
		return r, fmt.Errorf("usdt: stack size %d not in [0, %d]", o.StackSize, MaxStackSize)
	}
	r.StackSize = (r.StackSize + stackChunk - 1) &^ (stackChunk - 1)
	if r.StackSize > 0 {
		r.Regs = true
	}
	if r.Sample < 0 || r.Sample > 1<<31-1 {
		return r, fmt.Errorf("usdt: sample %d: want 0 or 1 (every firing) or N > 1 (one firing in N)", o.Sample)
	}
	if r.PID < 0 || r.PID > 1<<31-1 {
		return r, fmt.Errorf("usdt: pid %d", r.PID)
	}
	if r.Weight != nil {
		w, err := r.Weight.withDefaults("trace")
		if err != nil {
			return r, err
		}
		if w.Window != nil {
			return r, fmt.Errorf("usdt: trace: a weight with a Window (only an aggregation copies windows)")
		}
		r.Weight = w
	}
	return r, nil
}

// specs builds and checks the programs' descriptions before anything touches the kernel.
func specs(ctx context.Context, sites []Site, opts Options) ([]progSpec, error) {
	if len(sites) == 0 {
		return nil, fmt.Errorf("usdt: no probe sites to trace")
	}
	out := make([]progSpec, len(sites))
	for i := range sites {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		s := &sites[i]
		if s.Probe.FileOffset == 0 {
			return nil, fmt.Errorf("usdt: probe %s at %#x in %s: no loadable segment contains it", &s.Probe, s.Probe.PC, s.File)
		}
		out[i] = progSpec{
			probe:      &s.Probe,
			site:       uint32(i),
			strings:    s.Strings,
			stringSize: opts.StringSize,
			pid:        uint32(opts.PID),
			regs:       opts.Regs,
			stackSize:  opts.StackSize,
			noWakeup:   opts.Batch > 0,
			weight:     opts.Weight,
		}
		if opts.Sample > 1 {
			out[i].sample = uint32(opts.Sample)
		}
		if err := out[i].validate(); err != nil {
			return nil, fmt.Errorf("usdt: %w", err)
		}
		if 2*out[i].recordSize() > opts.BufferSize {
			return nil, fmt.Errorf("usdt: probe %s: records of %d bytes do not fit a %d-byte ring buffer", &s.Probe, out[i].recordSize(), opts.BufferSize)
		}
	}
	return out, nil
}
