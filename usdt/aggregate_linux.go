package usdt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
)

// Aggregator is a running aggregation: one uprobe per site, all counting into one BPF hash map.
type Aggregator struct {
	sites   []Site
	specs   []aggSpec
	opts    AggregateOptions
	counts  *ebpf.Map
	missed  *ebpf.Map
	threads *ebpf.Map // with a Weight
	gate    *ebpf.Map
	windows *ebpf.Map // with a Window
	progs   []*ebpf.Program

	// With a Window: its reader, and its end (closed when the ring buffer is drained after Stop).
	rd       *ringbuf.Reader
	readDone chan struct{}
	readErr  error
	stopCh   chan struct{} // closed by Stop
	stopOnce sync.Once

	mu       sync.Mutex
	links    []link.Link
	exited   chan struct{} // closed when the traced process exits
	done     chan struct{} // closed by Close
	closeMu  sync.Once
	closeErr error
}

// Aggregate loads one counting program per site (see AggregateOptions) and attaches it as Attach does.
// Site.Strings are ignored; AggregateOptions.String says which string to keep.
func Aggregate(ctx context.Context, sites []Site, opts AggregateOptions) (_ *Aggregator, err error) {
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		return nil, fmt.Errorf("usdt: %w: uprobes on %s", ErrNotSupported, runtime.GOARCH)
	}
	opts, err = opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if len(sites) == 0 {
		return nil, fmt.Errorf("usdt: no probe sites to trace")
	}
	sites = slices.Clone(sites)
	a := &Aggregator{sites: sites, opts: opts, exited: make(chan struct{}), done: make(chan struct{}), stopCh: make(chan struct{})}
	for i := range sites {
		s := &sites[i]
		if s.Probe.FileOffset == 0 {
			return nil, fmt.Errorf("usdt: probe %s at %#x in %s: no loadable segment contains it", &s.Probe, s.Probe.PC, s.File)
		}
		if !machineIsHost(s.Probe.Machine) {
			return nil, fmt.Errorf("usdt: probe %s in %s: %w: a %v file on %s", &s.Probe, s.File, ErrNotSupported, s.Probe.Machine, runtime.GOARCH)
		}
		a.specs = append(a.specs, aggSpec{probe: &s.Probe, site: uint32(i), opts: opts})
		if err := a.specs[i].validate(); err != nil {
			return nil, fmt.Errorf("usdt: %w", err)
		}
	}
	defer func() {
		if err != nil {
			_ = a.Close()
		}
	}()
	a.counts, err = ebpf.NewMap(&ebpf.MapSpec{
		Name: "usdt_counts", Type: ebpf.Hash,
		KeySize: uint32(opts.keySize()), ValueSize: uint32(opts.valueSize()), MaxEntries: uint32(opts.MaxKeys),
	})
	if err != nil {
		return nil, bpfError("create aggregation map", err)
	}
	a.missed, err = ebpf.NewMap(&ebpf.MapSpec{Name: "usdt_missed", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: 6})
	if err != nil {
		return nil, bpfError("create miss counter", err)
	}
	a.gate, err = ebpf.NewMap(&ebpf.MapSpec{Name: "usdt_gate", Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1})
	if err != nil {
		return nil, bpfError("create gate", err)
	}
	if opts.Weight != nil {
		if a.threads, err = newThreadMap(opts.Weight); err != nil {
			return nil, err
		}
		if win := opts.Weight.Window; win != nil {
			a.windows, err = ebpf.NewMap(&ebpf.MapSpec{Name: "usdt_windows", Type: ebpf.RingBuf, MaxEntries: uint32(win.BufferSize)})
			if err != nil {
				return nil, bpfError("create the windows' ring buffer", err)
			}
			if a.rd, err = ringbuf.NewReader(a.windows); err != nil {
				return nil, bpfError("read the windows' ring buffer", err)
			}
		}
	}
	up := &uprober{pid: opts.PID}
	for i := range a.specs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		s := &a.specs[i]
		insns, err := s.program()
		if err != nil {
			return nil, fmt.Errorf("usdt: %w", err)
		}
		if err := insns.AssociateMap(mapCounts, a.counts); err != nil {
			return nil, fmt.Errorf("usdt: %w", err)
		}
		if err := insns.AssociateMap(mapMissed, a.missed); err != nil {
			return nil, fmt.Errorf("usdt: %w", err)
		}
		if err := insns.AssociateMap(mapGate, a.gate); err != nil {
			return nil, fmt.Errorf("usdt: %w", err)
		}
		if a.threads != nil {
			if err := insns.AssociateMap(mapThreads, a.threads); err != nil {
				return nil, fmt.Errorf("usdt: %w", err)
			}
		}
		if a.windows != nil {
			if err := insns.AssociateMap(mapWindows, a.windows); err != nil {
				return nil, fmt.Errorf("usdt: %w", err)
			}
		}
		prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
			Name: "usdt_count", Type: ebpf.Kprobe, License: "GPL", Instructions: insns,
		})
		if err != nil {
			return nil, bpfError(fmt.Sprintf("load counting program for probe %s at %#x", s.probe, s.probe.PC), err)
		}
		a.progs = append(a.progs, prog)
		l, err := up.attach(sites[i].File, s.probe, prog)
		if err != nil {
			return nil, err
		}
		a.mu.Lock()
		a.links = append(a.links, l)
		a.mu.Unlock()
	}
	if opts.PID != 0 {
		if err := watchExit(opts.PID, a.done, func() { close(a.exited) }); err != nil {
			return nil, err
		}
	}
	if a.rd != nil {
		a.readDone = make(chan struct{})
		go a.readWindows(opts.Weight.Window.Handle)
	}
	return a, nil
}

// windowBatch is how often the windows' ring buffer is read: the programs submit without waking the
// reader (a wake-up per sample would cost more than the copy).
const windowBatch = 50 * time.Millisecond

// readWindows hands each window record to handle until Stop drained the ring buffer or Close closed it.
func (a *Aggregator) readWindows(handle func(Window)) {
	defer close(a.readDone)
	var rec ringbuf.Record
	stopping := false
	for {
		if !stopping {
			select {
			case <-a.stopCh:
				stopping = true
			default:
			}
		}
		a.rd.SetDeadline(time.Now().Add(windowBatch))
		err := a.rd.ReadInto(&rec)
		switch {
		case err == nil:
			w, err := decodeWindow(&a.opts, len(a.specs), rec.RawSample)
			if err != nil {
				a.readErr = err
				continue
			}
			handle(w)
		case errors.Is(err, os.ErrDeadlineExceeded):
			if stopping {
				return // drained: nothing came in a batch after the uprobes were detached
			}
		case errors.Is(err, ringbuf.ErrFlushed):
		default:
			if !errors.Is(err, os.ErrClosed) && !errors.Is(err, ringbuf.ErrClosed) {
				a.readErr = fmt.Errorf("usdt: read windows: %w", err)
			}
			return
		}
	}
}

// Windows waits, after Stop, until every window has been handed to BufferWindow.Handle, and returns the
// samples that no window carries, with the sums of their weights, which no bucket carries either (see
// WindowCounts), and any error of the reader. Without a Window it returns zeros at once.
func (a *Aggregator) Windows() (WindowCounts, error) {
	var c WindowCounts
	if a.rd == nil || a.readDone == nil {
		return c, nil
	}
	<-a.readDone
	for i, dst := range []*uint64{&c.Lost, &c.Lost, &c.LostWeight, &c.None, &c.NoneWeight} {
		var perCPU []uint64
		if err := a.missed.Lookup(uint32(i+1), &perCPU); err != nil {
			return WindowCounts{}, fmt.Errorf("usdt: read window counters: %w", err)
		}
		for _, v := range perCPU {
			*dst += v
		}
	}
	return c, a.readErr
}

// Sites returns the sites being counted; Bucket.Site indexes it.
func (a *Aggregator) Sites() []Site { return a.sites }

// Exited is closed when the process of AggregateOptions.PID exits; never without a PID.
func (a *Aggregator) Exited() <-chan struct{} { return a.exited }

// Snapshot reads the counts so far, in no particular order. Counting goes on while it reads, so an entry
// may be a firing or two behind another.
func (a *Aggregator) Snapshot() ([]Bucket, error) {
	var out []Bucket
	key := make([]byte, a.opts.keySize())
	val := make([]byte, a.opts.valueSize())
	it := a.counts.Iterate()
	for it.Next(&key, &val) {
		b, err := decodeBucket(&a.opts, a.specs, key, val)
		if err != nil {
			return out, err
		}
		out = append(out, b)
	}
	if err := it.Err(); err != nil {
		return out, fmt.Errorf("usdt: read aggregation map: %w", err)
	}
	return out, nil
}

// Missed returns the firings not counted because their key was new and the map was full.
func (a *Aggregator) Missed() (uint64, error) {
	var perCPU []uint64
	if err := a.missed.Lookup(uint32(0), &perCPU); err != nil {
		return 0, fmt.Errorf("usdt: read miss counter: %w", err)
	}
	var n uint64
	for _, v := range perCPU {
		n += v
	}
	return n, nil
}

// SetThread gives thread th.TID (a host tid of the traced process) its base address for the Weight's
// values, and their values now: the thread's next firing is weighed from them (not weighed, if the
// counter is 0: it only sets them).
func (a *Aggregator) SetThread(th WeightedThread) error {
	if a.threads == nil {
		return fmt.Errorf("usdt: SetThread: the aggregation has no Weight")
	}
	return setThread(a.threads, th)
}

// DeleteThread forgets thread tid's base (it exited: its tid may be reused).
func (a *Aggregator) DeleteThread(tid int) error { return deleteThread(a.threads, tid) }

// Freeze stops the counting at once, the uprobes still attached: a firing that starts after it counts
// nothing (one already running may still finish). Detaching them (Stop) takes from milliseconds to
// seconds, one site after the other; Freeze makes the counts those of a window that ends now.
func (a *Aggregator) Freeze() error {
	if err := a.gate.Update(uint32(0), uint32(1), ebpf.UpdateAny); err != nil {
		return fmt.Errorf("usdt: freeze the aggregation: %w", err)
	}
	return nil
}

// Stop detaches the uprobes, so that the counts stop changing; Snapshot still reads them. With a Window,
// the windows still buffered are then handed to its Handle (Windows waits for them).
func (a *Aggregator) Stop() error {
	a.mu.Lock()
	var errs []error
	for _, l := range a.links {
		errs = append(errs, l.Close())
	}
	a.links = nil
	a.stopOnce.Do(func() { close(a.stopCh) })
	a.mu.Unlock()
	return errors.Join(errs...)
}

// Close detaches the uprobes and frees the programs and maps.
func (a *Aggregator) Close() error {
	a.closeMu.Do(func() {
		close(a.done)
		errs := []error{a.Stop()}
		if a.rd != nil {
			errs = append(errs, a.rd.Close())
			if a.readDone != nil {
				<-a.readDone
			}
		}
		for _, p := range a.progs {
			errs = append(errs, p.Close())
		}
		for _, m := range []*ebpf.Map{a.counts, a.missed, a.threads, a.gate, a.windows} {
			if m != nil {
				errs = append(errs, m.Close())
			}
		}
		a.closeErr = errors.Join(errs...)
	})
	return a.closeErr
}
