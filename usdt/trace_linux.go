package usdt

import (
	"context"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"github.com/jvmkit/jvmkit/internal/procfs"
)

// Tracer is a running trace: one uprobe per site, all feeding one ring buffer. Read returns its events; one
// goroutine may Read while another calls Stop or Drops.
type Tracer struct {
	sites  []Site
	specs  []progSpec
	events *ebpf.Map
	drops  *ebpf.Map
	// scratch is where the programs build records with a stack copy; nil without.
	scratch *ebpf.Map
	// threads are the weighed threads (Options.Weight); nil without.
	threads *ebpf.Map
	progs   []*ebpf.Program
	links   []link.Link
	rd      *ringbuf.Reader
	rec     ringbuf.Record

	batch time.Duration // Options.Batch

	linksMu  sync.Mutex
	stopping atomic.Bool
	eof      bool
	done     chan struct{} // closed by Close: ends the process watcher
	exited   chan struct{} // closed when the traced process exits
	closeMu  sync.Once
	closeErr error
}

// Attach loads one BPF program per site and attaches it as a uprobe at the site's file offset, with the
// site's semaphore counted up by the kernel while the uprobe exists (the uprobe's reference counter
// offset, Linux 4.20). It needs root, or CAP_BPF and CAP_PERFMON (and CAP_SYS_ADMIN for the files of other
// users' processes). The programs are built with cilium/ebpf's asm package; no compiler is involved.
func Attach(ctx context.Context, sites []Site, opts Options) (_ *Tracer, err error) {
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		return nil, fmt.Errorf("usdt: %w: uprobes on %s", ErrNotSupported, runtime.GOARCH)
	}
	opts, err = opts.withDefaults()
	if err != nil {
		return nil, err
	}
	sites = slices.Clone(sites)
	ps, err := specs(ctx, sites, opts)
	if err != nil {
		return nil, err
	}
	for i := range ps {
		if m := ps[i].probe.Machine; !machineIsHost(m) {
			return nil, fmt.Errorf("usdt: probe %s in %s: %w: a %v file on %s", ps[i].probe, sites[i].File, ErrNotSupported, m, runtime.GOARCH)
		}
	}
	t := &Tracer{sites: sites, specs: ps, done: make(chan struct{}), exited: make(chan struct{}), batch: opts.Batch}
	defer func() {
		if err != nil {
			_ = t.Close()
		}
	}()

	t.events, err = ebpf.NewMap(&ebpf.MapSpec{Name: "usdt_events", Type: ebpf.RingBuf, MaxEntries: uint32(opts.BufferSize)})
	if err != nil {
		return nil, bpfError("create ring buffer", err)
	}
	t.drops, err = ebpf.NewMap(&ebpf.MapSpec{
		Name: "usdt_drops", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: uint32(len(sites)),
	})
	if err != nil {
		return nil, bpfError("create drop counters", err)
	}
	if scratch := maxScratch(ps); scratch > 0 {
		cpus, err := ebpf.PossibleCPU()
		if err != nil {
			return nil, fmt.Errorf("usdt: %w", err)
		}
		t.scratch, err = ebpf.NewMap(&ebpf.MapSpec{
			Name: "usdt_scratch", Type: ebpf.Array, KeySize: 4, ValueSize: uint32(scratch), MaxEntries: uint32(cpus),
		})
		if err != nil {
			return nil, bpfError("create record scratch space", err)
		}
	}
	if opts.Weight != nil {
		if t.threads, err = newThreadMap(opts.Weight); err != nil {
			return nil, err
		}
	}
	if t.rd, err = ringbuf.NewReader(t.events); err != nil {
		return nil, bpfError("read ring buffer", err)
	}

	up := &uprober{pid: opts.PID}
	for i := range ps {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		s := &ps[i]
		insns, err := s.program()
		if err != nil {
			return nil, fmt.Errorf("usdt: %w", err)
		}
		if err := insns.AssociateMap(mapEvents, t.events); err != nil {
			return nil, fmt.Errorf("usdt: %w", err)
		}
		if err := insns.AssociateMap(mapDrops, t.drops); err != nil {
			return nil, fmt.Errorf("usdt: %w", err)
		}
		if s.stackSize > 0 {
			if err := insns.AssociateMap(mapScratch, t.scratch); err != nil {
				return nil, fmt.Errorf("usdt: %w", err)
			}
		}
		if t.threads != nil {
			if err := insns.AssociateMap(mapThreads, t.threads); err != nil {
				return nil, fmt.Errorf("usdt: %w", err)
			}
		}
		prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
			Name:         "usdt_site",
			Type:         ebpf.Kprobe,
			License:      "GPL", // bpf_probe_read_user is GPL-only
			Instructions: insns,
		})
		if err != nil {
			return nil, bpfError(fmt.Sprintf("load program for probe %s at %#x", s.probe, s.probe.PC), err)
		}
		t.progs = append(t.progs, prog)

		l, err := up.attach(sites[i].File, s.probe, prog)
		if err != nil {
			return nil, err
		}
		t.linksMu.Lock()
		t.links = append(t.links, l)
		t.linksMu.Unlock()
	}
	if opts.PID != 0 {
		if err := watchExit(opts.PID, t.done, func() { close(t.exited); _ = t.Stop() }); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// maxScratch is the size of the scratch slot records with a stack copy need: the largest of them, 0 when
// no site copies the stack.
func maxScratch(ps []progSpec) int {
	n := 0
	for i := range ps {
		if ps[i].stackSize > 0 {
			n = max(n, ps[i].recordSize())
		}
	}
	return (n + 7) &^ 7
}

func machineIsHost(m elf.Machine) bool {
	switch runtime.GOARCH {
	case "amd64":
		return m == elf.EM_X86_64
	case "arm64":
		return m == elf.EM_AARCH64
	}
	return false
}

// bpfError adds what to do to the kernel's refusals.
func bpfError(op string, err error) error {
	switch {
	case errors.Is(err, os.ErrPermission):
		// Measured: uprobes through BPF needed CAP_SYS_ADMIN on Linux 6.18; CAP_BPF and CAP_PERFMON
		// were refused (docs/deploy.md).
		remedy := "run as root (uprobes through BPF need CAP_SYS_ADMIN)"
		if os.Geteuid() == 0 {
			remedy = procfs.Remedy("", procfs.CapSysAdmin)
		}
		return fmt.Errorf("usdt: %s: %w: %s: %w", op, ErrPermission, remedy, err)
	case errors.Is(err, ebpf.ErrNotSupported):
		return fmt.Errorf("usdt: %s: %w: the kernel lacks a feature (ring buffers need Linux 5.8): %w", op, ErrNotSupported, err)
	}
	return fmt.Errorf("usdt: %s: %w", op, err)
}

// Sites returns the sites being traced; Event.Site indexes it.
func (t *Tracer) Sites() []Site { return t.sites }

// Read returns the next event, waiting for one. After Stop, it returns the events still in the ring
// buffer, then io.EOF; after Close, an error.
func (t *Tracer) Read() (Event, error) {
	for {
		if t.eof {
			return Event{}, io.EOF
		}
		if t.batch > 0 {
			t.rd.SetDeadline(time.Now().Add(t.batch))
		}
		if err := t.rd.ReadInto(&t.rec); err != nil {
			if t.batch > 0 && errors.Is(err, os.ErrDeadlineExceeded) {
				continue // nothing in this batch
			}
			if errors.Is(err, ringbuf.ErrFlushed) {
				if t.stopping.Load() {
					t.eof = true
				}
				continue
			}
			if errors.Is(err, os.ErrClosed) || errors.Is(err, ringbuf.ErrClosed) {
				return Event{}, fmt.Errorf("usdt: read: %w", os.ErrClosed)
			}
			return Event{}, fmt.Errorf("usdt: read: %w", err)
		}
		raw := t.rec.RawSample
		if len(raw) < recHeader {
			return Event{}, fmt.Errorf("%w: %d bytes", errRecord, len(raw))
		}
		site := int(binary.NativeEndian.Uint32(raw[recSite:]))
		if site >= len(t.specs) {
			return Event{}, fmt.Errorf("%w: site %d of %d", errRecord, site, len(t.specs))
		}
		return t.specs[site].decode(raw)
	}
}

// Exited is closed when the process of Options.PID exits (the trace then stops by itself); never
// without a PID.
func (t *Tracer) Exited() <-chan struct{} { return t.exited }

// SetThread gives thread th.TID (a host tid of the traced process) its base address for Options.Weight's
// values, as Aggregator.SetThread does.
func (t *Tracer) SetThread(th WeightedThread) error {
	if t.threads == nil {
		return fmt.Errorf("usdt: SetThread: the trace has no Weight")
	}
	return setThread(t.threads, th)
}

// DeleteThread forgets thread tid's base (it exited: its tid may be reused).
func (t *Tracer) DeleteThread(tid int) error { return deleteThread(t.threads, tid) }

// Stop detaches the uprobes, so that no new events come, and makes Read return the events still buffered,
// then io.EOF. It can be called more than once, and from another goroutine than Read's.
func (t *Tracer) Stop() error {
	if t.stopping.Swap(true) {
		return nil
	}
	err := t.closeLinks()
	if t.rd != nil {
		if ferr := t.rd.Flush(); ferr != nil && err == nil {
			err = ferr
		}
	}
	return err
}

func (t *Tracer) closeLinks() error {
	t.linksMu.Lock()
	defer t.linksMu.Unlock()
	var errs []error
	for _, l := range t.links {
		errs = append(errs, l.Close())
	}
	t.links = nil
	return errors.Join(errs...)
}

// Drops returns, per site, the events lost because the ring buffer was full.
func (t *Tracer) Drops() ([]uint64, error) {
	out := make([]uint64, len(t.specs))
	for i := range out {
		var perCPU []uint64
		if err := t.drops.Lookup(uint32(i), &perCPU); err != nil {
			return nil, fmt.Errorf("usdt: read drop counters: %w", err)
		}
		for _, n := range perCPU {
			out[i] += n
		}
	}
	return out, nil
}

// Close detaches the uprobes and frees the programs, maps and ring buffer. Read returns an error after it.
func (t *Tracer) Close() error {
	t.closeMu.Do(func() {
		close(t.done)
		t.stopping.Store(true)
		errs := []error{t.closeLinks()}
		if t.rd != nil {
			errs = append(errs, t.rd.Close())
		}
		for _, p := range t.progs {
			errs = append(errs, p.Close())
		}
		for _, m := range []*ebpf.Map{t.events, t.drops, t.scratch, t.threads} {
			if m != nil {
				errs = append(errs, m.Close())
			}
		}
		t.closeErr = errors.Join(errs...)
	})
	return t.closeErr
}
