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

	"github.com/jvmkit/jvmkit/unwind"
	"github.com/jvmkit/jvmkit/usdt"
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
	Bytes    uint64        `json:"bytes"` // known sizes only (see ClassAlloc.Unsized)
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
	Bytes uint64 `json:"bytes"` // sum of their sizes, with Unsized ones estimated
	// Unsized are the allocations whose size the probe did not pass (JDK 17's interpreter passes garbage):
	// Bytes counts each at the class's mean size over the others.
	Unsized uint64 `json:"unsized,omitempty"`
}

// Sizes outside this range are garbage (see ClassAlloc.Unsized): no object is smaller than 8 bytes, and
// the largest Java array is 16 GiB.
const minSize, maxSize = 8, 1 << 40

func (c *ClassAlloc) estimate() {
	if c.Unsized > 0 && c.Count > c.Unsized {
		c.Bytes += c.Unsized * (c.Bytes / (c.Count - c.Unsized))
	}
}

// AllocProfile is what a trace of object__alloc counted.
type AllocProfile struct {
	Classes []ClassAlloc `json:"classes"` // most firings first
	Count   uint64       `json:"count"`
	Bytes   uint64       `json:"bytes"`
	// PerSite counts the firings of each object__alloc site (JDK 25 has three: the runtime's slow path, the
	// interpreter and C2's leaf call; JDK 17 one), in the order of AllocTrace.Sites.
	PerSite []uint64 `json:"per_site"`
	// Lost are firings not counted: a new class after MaxClasses, or a full ring buffer with Events.
	Lost uint64 `json:"lost"`
	// Stacks, with AllocOptions.Stacks, are the firings by class and stack, most first.
	Stacks []AllocStack `json:"stacks,omitempty"`
}

// AllocTrace is a running trace of object__alloc in one JVM.
type AllocTrace struct {
	sites []usdt.Site
	agg   *usdt.Aggregator
	tr    *usdt.Tracer

	// With Events: the reader's counts.
	mu       sync.Mutex
	byName   map[string]*ClassAlloc
	perSite  []uint64
	readErr  error
	readDone chan struct{}
	stopped  atomic.Bool

	walker  *unwind.Walker
	stacks  map[string]*AllocStack
	threads map[int]string // tid → name
}

// TraceAlloc attaches to every object__alloc site of process pid, whose modules mods are
// (usdt.Modules). It does not look at DTraceAllocProbes: without it, only code compiled while it was on
// fires (see the package documentation).
func TraceAlloc(ctx context.Context, pid int, mods []usdt.Module, opts AllocOptions) (*AllocTrace, error) {
	sites, err := Sites(mods, "object__alloc")
	if err != nil {
		return nil, err
	}
	t := &AllocTrace{sites: sites, perSite: make([]uint64, len(sites))}
	if !opts.Events && opts.Stacks == nil && opts.Sample <= 1 {
		// Keyed by the class name's address and length: the Klass's name Symbol* lives as long as the class,
		// and two classes of the same name (two loaders) share the Symbol. The name is copied once per key.
		t.agg, err = usdt.Aggregate(ctx, sites, usdt.AggregateOptions{
			PID: pid, Key: []int{1, 2}, Sum: []int{3}, SumMin: minSize, SumMax: maxSize,
			String: &usdt.StringArg{Ptr: 1, Len: 2}, MaxKeys: opts.MaxClasses,
		})
		if err != nil {
			return nil, err
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
	t.tr, err = usdt.Attach(ctx, sites, uo)
	if err != nil {
		return nil, err
	}
	t.byName = make(map[string]*ClassAlloc)
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
		var name []byte
		if len(ev.Strings) > 0 {
			name = ev.Strings[0].Data
		}
		t.mu.Lock()
		c := t.byName[string(name)]
		if c == nil {
			c = &ClassAlloc{Class: JavaName(string(name))}
			t.byName[string(name)] = c
		}
		c.Count++
		var size uint64
		if len(ev.Args) > 3 && ev.Args[3] >= minSize && ev.Args[3] <= maxSize {
			size = ev.Args[3]
			c.Bytes += size
		} else {
			c.Unsized++
		}
		if ev.Site < len(t.perSite) {
			t.perSite[ev.Site]++
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
				s = &AllocStack{Class: c.Class, Thread: thread, Frames: st.Frames, Complete: st.Complete, Reason: st.Reason}
				t.stacks[string(key)] = s
			}
			s.Count++
			s.Bytes += size
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

// Sites returns the object__alloc sites traced.
func (t *AllocTrace) Sites() []usdt.Site { return t.sites }

// Exited is closed when the JVM exits.
func (t *AllocTrace) Exited() <-chan struct{} {
	if t.agg != nil {
		return t.agg.Exited()
	}
	return t.tr.Exited()
}

// Stop detaches the uprobes: the counts stop changing.
func (t *AllocTrace) Stop() error {
	if t.agg != nil {
		return t.agg.Stop()
	}
	t.stopped.Store(true)
	return t.tr.Stop()
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
		for _, b := range buckets {
			name := string(b.String.Data)
			if b.String.Fault {
				name = fmt.Sprintf("<unreadable name at %#x>", b.Key[0])
			}
			c := byName[name]
			if c == nil {
				c = &ClassAlloc{Class: JavaName(name)}
				byName[name] = c
			}
			c.Count += b.Count
			c.Bytes += b.Sums[0]
			c.Unsized += b.OutOfRange
			p.PerSite[b.Site] += b.Count
		}
		if p.Lost, err = t.agg.Missed(); err != nil {
			return nil, err
		}
	} else {
		if t.stopped.Load() {
			<-t.readDone // Read returns io.EOF once the ring buffer is drained
		}
		t.mu.Lock()
		for k, c := range t.byName {
			cc := *c
			byName[k] = &cc
		}
		copy(p.PerSite, t.perSite)
		for _, s := range t.stacks {
			p.Stacks = append(p.Stacks, *s)
		}
		err := t.readErr
		t.mu.Unlock()
		if err != nil {
			return nil, err
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
		c.estimate()
		p.Classes = append(p.Classes, *c)
		p.Count += c.Count
		p.Bytes += c.Bytes
	}
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
		return t.agg.Close()
	}
	err := t.tr.Close()
	<-t.readDone
	return err
}
