package hotspot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jvmkit/jvmkit/internal/javaname"
	"github.com/jvmkit/jvmkit/unwind"
	"github.com/jvmkit/jvmkit/usdt"
	"github.com/jvmkit/jvmkit/vmstructs"
)

// AllocOptions tune TraceAlloc.
type AllocOptions struct {
	// Events sends every firing through the ring buffer and counts in Go, instead of counting in the kernel
	// by class. It is slower (see the package documentation) and is where allocation stacks will come from.
	Events bool
	// MaxClasses bounds the classes counted in the kernel; default 16384.
	MaxClasses int
	// BufferSize is the ring buffer's size with Events; default 16 MiB (64 MiB with Stacks).
	BufferSize int

	// Stacks, if set, has every recorded firing carry the thread's registers and a copy of its user
	// stack, and walks it with this walker (of the same JVM) as soon as it is read: AllocProfile.Stacks
	// counts allocations by class and stack. It implies Events. The walker is used by the trace's reader
	// only, until Profile returns after Stop.
	Stacks *unwind.Walker
	// StackSize is the most bytes of user stack copied per firing with Stacks; default 16 KiB (as perf's
	// samples in package unwind). Frames beyond it are read from the live process.
	StackSize int
	// Sample, above 1, records each firing with probability 1/Sample (usdt.Options.Sample): counts and
	// stacks are then those of a sample. With Events only.
	Sample int

	// Weights reads the JVM's VMStructs to size allocations without trusting the probe's size argument
	// (garbage on JDK 17 except on the runtime's slow path): instance classes are sized from their layout
	// helper, and, counted in the kernel (not with Events or Stacks), each firing is weighed by the bytes
	// its thread allocated (Thread::_allocated_bytes plus its TLAB's used part, the counter behind JFR's
	// ObjectAllocationSample weights; see usdt.ThreadWeight for how).
	Weights bool
	// Sampled says that the JVM fires only a sample of its allocations (DTraceAllocProbes switched on at
	// run time): a class's bytes are then estimated from its firings' weights, not sized one by one.
	Sampled bool
	// NoWindows, with Sampled weights, gives each sample's weight to the class of its allocation, as JFR's
	// ObjectAllocationSample does, instead of spreading it over a TLAB window (see AllocProfile.Windows):
	// for comparisons and measurements.
	NoWindows bool
}

// AllocStack is the allocations of one class from one stack.
type AllocStack struct {
	Class string `json:"class"`
	// Thread is the allocating thread's name (java.lang.Thread.name, see vmstructs.Thread).
	Thread string `json:"thread"`
	// Frames are the stack's frames, leaf first: the frames of libjvm where the probe fired, then the
	// Java frames of the allocating code down to the thread's root, or a Broken frame.
	Frames []unwind.Frame `json:"frames"`
	// Complete says the walk reached the thread's root; else Reason says why not.
	Complete bool          `json:"complete"`
	Reason   unwind.Reason `json:"reason,omitempty"`
	Count    uint64        `json:"count"`
	Bytes    uint64        `json:"bytes"` // known sizes only (see ClassAlloc.Unsized); in a weighed sample, the weights
	// Samples are the firings that carry a weight (in a sample, its samples: see ClassAlloc.Samples).
	Samples uint64 `json:"samples,omitempty"`

	name       uint64 // the address of the class name's bytes, to size it
	internal   string // the class name as the probe passes it
	probeBytes uint64 // the probe's sizes, in range
	outOfRange uint64
	weight     uint64 // the sum of the weighed firings' weights
}

// FirstJava is the stack's first Java frame (the allocating method), nil when it has none.
func (s *AllocStack) FirstJava() *unwind.Frame {
	for i := range s.Frames {
		if s.Frames[i].Java() {
			return &s.Frames[i]
		}
	}
	return nil
}

// ClassAlloc is the allocations of one class seen by a trace.
type ClassAlloc struct {
	Class string `json:"class"` // Java name: "byte[]", "java.lang.String"
	Count uint64 `json:"count"` // firings of object__alloc
	// Bytes are the bytes of the firings whose size is known (AllocProfile.Sizes says how they were
	// sized); with AllocOptions.Sampled, the bytes the firings stand for: the sum of their weights.
	Bytes uint64 `json:"bytes"`
	// Samples, with AllocOptions.Sampled and weights, are the firings that carry a weight (a new TLAB, an
	// allocation outside one): the sample Bytes are estimated from. The other firings (code that reports
	// every allocation) are in Count but weigh nothing: the TLAB samples stand for them.
	Samples uint64 `json:"samples,omitempty"`
	// Windows, where the samples' weights were spread over TLAB windows (AllocProfile.Windows), are the
	// windows that held the class: a class in n windows is known to about 1/sqrt(n) of its bytes.
	Windows uint64 `json:"windows,omitempty"`
	// Unsized are the firings not in Bytes because their size is unknown (an array on a JDK whose probe
	// passes garbage sizes, from a thread jvmkit had not seen yet).
	Unsized uint64 `json:"unsized,omitempty"`
	// InstanceSize is the size of an instance from the class's layout helper (0: an array class, or
	// unknown).
	InstanceSize uint64 `json:"instance_size,omitempty"`
}

// Sizes outside this range are garbage: no object is smaller than 8 bytes, and the largest Java array
// is 16 GiB.
const minSize, maxSize = 8, 1 << 40

// AllocProfile is what a trace of object__alloc counted.
type AllocProfile struct {
	Classes []ClassAlloc `json:"classes"` // most firings first
	Count   uint64       `json:"count"`
	Bytes   uint64       `json:"bytes"`
	// Samples are the weighted firings of a sample (see ClassAlloc.Samples): how precise its shares are
	// (a class with n samples is known to about 1/sqrt(n) of its bytes).
	Samples uint64 `json:"samples,omitempty"`
	// PerSite counts the firings of each object__alloc site (JDK 25 has three: the runtime's slow path, the
	// interpreter and C2's leaf call; JDK 17 one), in the order of AllocTrace.Sites.
	PerSite []uint64 `json:"per_site"`
	// Lost are firings not counted: a new class after MaxClasses, or a full ring buffer with Events.
	Lost uint64 `json:"lost"`
	// Stacks, with AllocOptions.Stacks, are the firings by class and stack, most first.
	Stacks []AllocStack `json:"stacks,omitempty"`
	// Sizes says how Bytes were sized (SizesProbe, SizesClass, SizesWeights), Unsized counts the firings
	// without a size. ProbeSizes says that this JVM's probe passed right sizes, WeightSizes that each
	// firing's weight was its own size (every instance class's agreed with its layout helper).
	Sizes       string `json:"sizes"`
	Unsized     uint64 `json:"unsized,omitempty"`
	ProbeSizes  bool   `json:"probe_sizes"`
	WeightSizes bool   `json:"weight_sizes,omitempty"`
	// Windows, in a sample, are the samples whose weight was spread over the classes at the start of
	// their thread's previous TLAB (see SizesWeights); WindowsFailed those whose copy could not be walked
	// and WindowsLost those not copied (a full buffer, unreadable memory); WindowsNone the samples that
	// could have no window: a thread's first, and its first after a collection, which moves or frees
	// the previous TLAB's objects. The weight of those three is spread as the walked windows' bytes are,
	// WindowsNoneBytes of it the samples' without a window. Given to the class of the sampled
	// allocation instead, a sample without a window would be biased where the window's are not: the
	// first allocation of a thread after a collection is not a point taken at random among its bytes but
	// whatever it allocates first on waking (measured on Jetty: a class not in the truth's first 12 among
	// the estimate's first 10). Where WindowError says why there are no windows at all, every sample's
	// weight goes to its allocation's class, as JFR's ObjectAllocationSample does.
	Windows          uint64 `json:"windows,omitempty"`
	WindowsFailed    uint64 `json:"windows_failed,omitempty"`
	WindowsLost      uint64 `json:"windows_lost,omitempty"`
	WindowsNone      uint64 `json:"windows_none,omitempty"`
	WindowsNoneBytes uint64 `json:"windows_none_bytes,omitempty"`
	WindowError      string `json:"window_error,omitempty"`
	// Unattributed are the bytes of windows lost or not walked when no window could be walked to spread
	// them over: in Bytes, in no class.
	Unattributed uint64 `json:"unattributed,omitempty"`
}

// How AllocProfile.Bytes were sized.
const (
	// SizesProbe: the probe's size argument, where it is in range.
	SizesProbe = "probe"
	// SizesClass: instance classes from their layout helper, arrays from the bytes their thread
	// allocated at each firing (every allocation fires), or the probe's size where it is right.
	SizesClass = "class"
	// SizesWeights: a sample, each new TLAB weighing the bytes its thread allocated since its previous
	// sample, each allocation outside a TLAB its own size.
	SizesWeights = "weights"
)

// AllocTrace is a running trace of object__alloc in one JVM.
type AllocTrace struct {
	pid   int
	sites []usdt.Site
	agg   *usdt.Aggregator
	tr    *usdt.Tracer
	opts  AllocOptions

	// With Weights: the trace's own view of the JVM, the threads given a base, and the refresher.
	jvm       *vmstructs.JVM
	counter   vmstructs.AllocCounter
	known     map[int]uint64 // host tid → JavaThread
	retry     map[int]int    // host tid without a base → scans it was looked at in
	sizes     map[uint64]classSize
	tasks     map[int]bool // the process's tasks at the last thread scan
	weightErr error
	// weigher is what gives threads their base: the aggregator or the tracer; nil without weights.
	weigher interface {
		SetThread(usdt.WeightedThread) error
		DeleteThread(tid int) error
	}
	stopWatch chan struct{}
	watchDone chan struct{}

	// With Sampled weights: the TLAB windows (nil where this JVM has none: windowErr says why), and
	// whether the aggregation was stopped (its last windows handed over).
	win        *windows
	windowErr  error
	aggStopped bool

	// With Events: the reader's counts, as the kernel's would be.
	mu       sync.Mutex
	buckets  map[eventKey]*usdt.Bucket
	perSite  []uint64
	readErr  error
	readDone chan struct{}
	stopped  atomic.Bool
	until    atomic.Uint64 // Freeze's end of the window (CLOCK_MONOTONIC ns), 0 for none

	walker  *unwind.Walker
	stacks  map[string]*AllocStack
	threads map[int]string // tid → name
}

// eventKey is what the kernel's counts are keyed by: the site and the class name's address.
type eventKey struct {
	site int
	name uint64
}

// TraceAlloc attaches to every object__alloc site of process pid, whose modules mods are
// (usdt.Modules). It does not look at DTraceAllocProbes: without it, only code compiled while it was on
// fires (see the package documentation).
func TraceAlloc(ctx context.Context, pid int, mods []usdt.Module, opts AllocOptions) (*AllocTrace, error) {
	sites, err := Sites(mods, "object__alloc")
	if err != nil {
		return nil, err
	}
	t := &AllocTrace{pid: pid, sites: sites, perSite: make([]uint64, len(sites)), opts: opts}
	if !opts.Events && opts.Stacks == nil && opts.Sample <= 1 {
		// Keyed by the class name's address and length: the Klass's name Symbol* lives as long as the class,
		// and two classes of the same name (two loaders) share the Symbol. The name is copied once per key.
		ao := usdt.AggregateOptions{
			PID: pid, Key: []int{1, 2}, Sum: []int{3}, SumMin: minSize, SumMax: maxSize,
			String: &usdt.StringArg{Ptr: 1, Len: 2}, MaxKeys: opts.MaxClasses,
		}
		if opts.Weights {
			if ao.Weight, err = t.openWeights(ctx, true); err != nil {
				return nil, err
			}
		}
		if t.agg, err = usdt.Aggregate(ctx, sites, ao); err != nil {
			t.closeWeights()
			return nil, err
		}
		if ao.Weight != nil {
			t.weigher = t.agg
			t.watchThreads()
		}
		return t, nil
	}
	uo := usdt.Options{PID: pid, BufferSize: opts.BufferSize, StringSize: 128, Sample: opts.Sample}
	if uo.BufferSize == 0 {
		uo.BufferSize = 16 << 20
	}
	if opts.Stacks != nil {
		t.walker = opts.Stacks
		t.stacks = make(map[string]*AllocStack)
		t.threads = make(map[int]string)
		uo.StackSize = opts.StackSize
		if uo.StackSize == 0 {
			uo.StackSize = 16 << 10
		}
		if opts.BufferSize == 0 {
			uo.BufferSize = 64 << 20
		}
	}
	if opts.Weights {
		w, err := t.openWeights(ctx, false)
		if err != nil {
			return nil, err
		}
		if w != nil {
			// Each firing weighed in the probe, as the aggregation's are, before the random choice of
			// Sample. In a sample, the stacks then weigh what they stand for, and only the samples are
			// recorded (a firing inside a TLAB, from code compiled while the flag is on, stands for
			// nothing: its TLAB's sample stands for it). With every allocation firing, a firing's
			// weight is its own size where this JVM counts an object before it fires (WeightSizes),
			// which sizes arrays where the probe's sizes are garbage (JDK 17).
			w.Only = opts.Sampled && opts.Stacks != nil
			uo.Weight = w
		}
	}
	t.tr, err = usdt.Attach(ctx, sites, uo)
	if err != nil {
		t.closeWeights()
		return nil, err
	}
	if uo.Weight != nil {
		t.weigher = t.tr
		t.watchThreads()
	}
	t.buckets = make(map[eventKey]*usdt.Bucket)
	t.readDone = make(chan struct{})
	go t.read()
	return t, nil
}

func (t *AllocTrace) read() {
	defer close(t.readDone)
	// Names are looked up by the bytes the ring buffer copied; a class's first event allocates its entry.
	refreshed := time.Now()
	var key []byte
	for {
		ev, err := t.tr.Read()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.mu.Lock()
				t.readErr = err
				t.mu.Unlock()
			}
			return
		}
		if until := t.until.Load(); until != 0 && ev.Time >= until {
			continue // after the window (Freeze)
		}
		var name []byte
		if len(ev.Strings) > 0 {
			name = ev.Strings[0].Data
		}
		var nameAddr, size uint64
		if len(ev.Args) > 3 {
			nameAddr = ev.Args[1]
			if ev.Args[3] >= minSize && ev.Args[3] <= maxSize {
				size = ev.Args[3]
			}
		}
		t.mu.Lock()
		k := eventKey{ev.Site, nameAddr}
		b := t.buckets[k]
		if b == nil {
			b = &usdt.Bucket{Site: ev.Site, Key: []uint64{nameAddr, uint64(len(name))}, Sums: []uint64{0},
				String: usdt.String{Arg: 1, Data: append([]byte(nil), name...)}}
			t.buckets[k] = b
		}
		b.Count++
		b.Sums[0] += size
		if size == 0 {
			b.OutOfRange++
		}
		if t.weigher != nil {
			b.Weight += ev.Weight
			if !ev.Weighted {
				b.Unweighted++
			}
		}
		t.mu.Unlock()
		if t.walker != nil {
			// Walked at once: frames beyond the stack copy are read from the live thread, and compiled
			// code can be unloaded.
			if time.Since(refreshed) > time.Second {
				refreshed = time.Now()
				_ = t.walker.Refresh() // on failure the old view stays
			}
			regs, _ := unwind.RegsFromGPR(ev.Regs)
			st := t.walker.Walk(&unwind.Sample{TID: ev.TID, Regs: regs, Stack: ev.Stack, Time: ev.Time})
			thread := t.threadName(ev.TID)
			key = stackKey(append(key[:0], thread...), name, &st)
			t.mu.Lock()
			s := t.stacks[string(key)]
			if s == nil {
				s = &AllocStack{Class: javaname.TypeName(string(name)), Thread: thread, Frames: st.Frames, Complete: st.Complete,
					Reason: st.Reason, name: nameAddr, internal: string(name)}
				t.stacks[string(key)] = s
			}
			s.Count++
			s.probeBytes += size
			if size == 0 {
				s.outOfRange++
			}
			if ev.Weighted {
				s.weight += ev.Weight
				s.Samples++
			}
			t.mu.Unlock()
		}
	}
}

// threadName names thread tid, reading the JVM's thread list for threads it does not know.
func (t *AllocTrace) threadName(tid int) string {
	if name, ok := t.threads[tid]; ok {
		return name
	}
	threads, _ := t.walker.JVM().Threads()
	for _, th := range threads {
		id := th.HostTID
		if id == 0 {
			id = th.TID
		}
		t.threads[id] = th.Name
	}
	if _, ok := t.threads[tid]; !ok {
		t.threads[tid] = fmt.Sprintf("tid-%d", tid)
	}
	return t.threads[tid]
}

// stackKey identifies a class and a stack: the frames' kinds, names, modules and lines.
func stackKey(b, class []byte, st *unwind.Stack) []byte {
	b = append(b, 0)
	b = append(b, class...)
	for i := range st.Frames {
		f := &st.Frames[i]
		b = append(b, 0, byte(f.Type))
		b = append(b, f.Name...)
		b = append(b, 0)
		b = append(b, f.Module...)
		b = fmt.Appendf(b, ":%d", f.Line)
	}
	return b
}

func (t *AllocTrace) closeWeights() {
	if t.jvm != nil {
		_ = t.jvm.Close()
		t.jvm = nil
	}
	if t.win != nil {
		_ = t.win.jvm.Close()
	}
}

// readClasses reads the loaded classes' sizes, keeping what an earlier read found (a JVM that exited
// cannot be read; a class unloaded under the walk cuts it short).
func (t *AllocTrace) readClasses() {
	if t.jvm == nil {
		return
	}
	classes, _ := t.jvm.LoadedClasses()
	if t.sizes == nil {
		t.sizes = make(map[uint64]classSize, len(classes))
	}
	for k, v := range classSizes(classes) {
		t.sizes[k] = v
	}
}

// WeightErr says why a trace with AllocOptions.Weights has no weights (this JVM's allocated-bytes
// counter could not be found), nil when it has them or was not asked for them.
func (t *AllocTrace) WeightErr() error { return t.weightErr }

// Sites returns the object__alloc sites traced.
func (t *AllocTrace) Sites() []usdt.Site { return t.sites }

// Rebase, in a sampled trace with weights, gives every Java thread its base again from its counters as
// they are now. Call it just before DTraceAllocProbes is switched on: a thread's first sample weighs what it
// allocated since its base, and TraceAlloc took the bases before it attached the uprobes, which takes from
// milliseconds to seconds on a loaded machine (measured on Tomcat at load 17: samples standing for 17.6%
// more bytes than JFR's ObjectAllocationSample weights over the same window). A firing racing with it (the
// flag is still off: only code compiled while it was on fires) may be weighed again by at most one TLAB.
func (t *AllocTrace) Rebase() { t.rebase() }

// Exited is closed when the JVM exits.
func (t *AllocTrace) Exited() <-chan struct{} {
	if t.agg != nil {
		return t.agg.Exited()
	}
	return t.tr.Exited()
}

// Freeze ends the trace's window: the firings after the call (with Events or Stacks: those at end, a
// CLOCK_MONOTONIC time taken just before, or later) are not counted, although the uprobes stay attached
// until Stop, which takes from milliseconds to seconds. A trace with --switch-flags must be frozen
// before the flag is switched off: the code compiled while it was on goes on firing for every
// allocation, in TLABs whose start was not seen.
func (t *AllocTrace) Freeze(end uint64) error {
	if t.agg != nil {
		return t.agg.Freeze()
	}
	t.until.Store(end)
	return nil
}

// Stop detaches the uprobes: the counts stop changing.
func (t *AllocTrace) Stop() error {
	if t.agg != nil {
		t.stopThreads()
		err := t.agg.Stop()
		t.aggStopped = true
		t.readClasses() // those loaded during the trace too
		return err
	}
	t.stopThreads()
	t.stopped.Store(true)
	err := t.tr.Stop()
	t.readClasses()
	return err
}

// Profile returns the counts so far; after Stop, the final ones (with Events, it then waits for the ring
// buffer to be read).
func (t *AllocTrace) Profile() (*AllocProfile, error) {
	p := &AllocProfile{PerSite: make([]uint64, len(t.sites))}
	byName := make(map[string]*ClassAlloc)
	if t.agg != nil {
		buckets, err := t.agg.Snapshot()
		if err != nil {
			return nil, err
		}
		sizeBuckets(p, buckets, t.sizes, t.known != nil, t.opts.Sampled, byName)
		if p.Lost, err = t.agg.Missed(); err != nil {
			return nil, err
		}
		if t.win != nil && p.Sizes == SizesWeights {
			var c usdt.WindowCounts
			if t.aggStopped {
				// Every window handed over first.
				if c, err = t.agg.Windows(); err != nil {
					return nil, err
				}
			}
			t.win.spread(p, c, byName)
		} else if t.windowErr != nil && p.Sizes == SizesWeights {
			p.WindowError = t.windowErr.Error()
		}
	} else {
		if t.stopped.Load() {
			<-t.readDone // Read returns io.EOF once the ring buffer is drained
		}
		t.mu.Lock()
		buckets := make([]usdt.Bucket, 0, len(t.buckets))
		for _, b := range t.buckets {
			buckets = append(buckets, *b)
		}
		for _, s := range t.stacks {
			p.Stacks = append(p.Stacks, *s)
		}
		err := t.readErr
		t.mu.Unlock()
		if err != nil {
			return nil, err
		}
		sizeBuckets(p, buckets, t.sizes, t.weigher != nil, t.opts.Sampled, byName)
		for i := range p.Stacks {
			s := &p.Stacks[i]
			switch size := fixedSize(t.sizes, s.name, s.internal); {
			case p.Sizes == SizesWeights:
				s.Bytes = s.weight
			case size > 0:
				s.Bytes = s.Count * size
			case p.ProbeSizes && s.outOfRange == 0:
				s.Bytes = s.probeBytes
			case p.WeightSizes && s.Samples == s.Count:
				s.Bytes = s.weight
			}
		}
		drops, err := t.tr.Drops()
		if err != nil {
			return nil, err
		}
		for _, d := range drops {
			p.Lost += d
		}
	}
	for _, c := range byName {
		p.Classes = append(p.Classes, *c)
		p.Count += c.Count
		p.Bytes += c.Bytes
		p.Samples += c.Samples
		p.Unsized += c.Unsized
	}
	p.Bytes += p.Unattributed
	SortClasses(p.Classes, false)
	slices.SortStableFunc(p.Stacks, func(a, b AllocStack) int {
		switch {
		case a.Count > b.Count:
			return -1
		case a.Count < b.Count:
			return 1
		}
		return 0
	})
	return p, nil
}

// SortClasses sorts by count (or by bytes), most first, then by name.
func SortClasses(cs []ClassAlloc, byBytes bool) {
	slices.SortFunc(cs, func(a, b ClassAlloc) int {
		x, y := a.Count, b.Count
		if byBytes {
			x, y = a.Bytes, b.Bytes
		}
		switch {
		case x > y:
			return -1
		case x < y:
			return 1
		}
		if a.Class < b.Class {
			return -1
		}
		if a.Class > b.Class {
			return 1
		}
		return 0
	})
}

// Close detaches and frees everything.
func (t *AllocTrace) Close() error {
	if t.agg != nil {
		t.stopThreads()
		err := t.agg.Close() // its window reader first: it reads classes through the windows' view
		t.closeWeights()
		return err
	}
	t.stopThreads()
	defer t.closeWeights()
	err := t.tr.Close()
	<-t.readDone
	return err
}
