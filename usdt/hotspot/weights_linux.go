package hotspot

import (
	"context"
	"errors"
	"os"
	"strconv"
	"time"

	"github.com/jvmkit/jvmkit/usdt"
	"github.com/jvmkit/jvmkit/vmstructs"
)

// threadScan is how often a trace with weights looks for threads it has not given a base yet.
const threadScan = 200 * time.Millisecond

// openWeights opens the trace's own view of the JVM (the caller's may be in use on another goroutine),
// for class sizes and, where the JVM exports the allocated-bytes counter, weights (in a sampled
// aggregation, with TLAB windows where this JVM allows them). The largest weight
// taken is the heap's maximum size: a thread cannot allocate more between two firings (each TLAB and
// each allocation outside one fires).
func (t *AllocTrace) openWeights(ctx context.Context, aggregated bool) (*usdt.ThreadWeight, error) {
	j, err := vmstructs.Open(ctx, t.pid)
	if err != nil {
		return nil, err
	}
	t.jvm = j
	t.readClasses()
	c, err := j.AllocCounter()
	if err != nil {
		t.weightErr = err
		return nil, nil
	}
	maxWeight := uint64(maxSize)
	if f, err := j.Flag("MaxHeapSize"); err == nil && f.Uint != nil && *f.Uint > 0 {
		maxWeight = *f.Uint
	}
	t.counter = c
	t.known = make(map[int]uint64)
	t.retry = make(map[int]int)
	w := &usdt.ThreadWeight{Add: []int32{int32(c.AllocatedBytes), int32(c.TLABTop)}, Sub: []int32{int32(c.TLABStart)},
		Max: maxWeight}
	if t.opts.Sampled {
		// Only a sample fires: weigh it as JFR weighs its allocation samples, at each new TLAB and each
		// allocation outside one. The firings of code that reports every allocation (interpreted code,
		// code compiled while the flag is on) are not weighed: the TLAB samples stand for them.
		// A new TLAB is a sample when the firing's allocation is its first (argument 3 is its size):
		// a TLAB whose start fired unseen is not one.
		epoch, direct, top := int32(c.TLABStart), int32(c.AllocatedBytes), int32(c.TLABTop)
		w.Epoch, w.Direct, w.Top, w.Size = &epoch, &direct, &top, 3
		// Each new TLAB's sample spread over the start of the previous TLAB (see windows).
		err := errors.New("windows are taken by the kernel's counts only")
		if t.opts.NoWindows {
			err = errors.New("not asked for")
		}
		if aggregated && !t.opts.NoWindows {
			var wj *vmstructs.JVM
			if wj, err = vmstructs.Open(ctx, t.pid); err == nil {
				var bw *usdt.BufferWindow
				if t.win, bw, err = openWindows(wj); err == nil {
					w.Window = bw
				} else {
					_ = wj.Close()
				}
			}
		}
		t.windowErr = err
	}
	t.tasks = t.scanThreads(nil, func(th usdt.WeightedThread) error {
		w.Threads = append(w.Threads, th)
		return nil
	})
	return w, nil
}

// watchThreads looks for new Java threads until stopThreads (openWeights gave the others their base).
func (t *AllocTrace) watchThreads() {
	t.stopWatch, t.watchDone = make(chan struct{}), make(chan struct{})
	tasks := t.tasks
	go func() {
		defer close(t.watchDone)
		tick := time.NewTicker(threadScan)
		defer tick.Stop()
		for {
			select {
			case <-t.stopWatch:
				return
			case <-tick.C:
				tasks = t.scanThreads(tasks, t.weigher.SetThread)
			}
		}
	}()
}

// rebase re-reads every thread's counters (see Rebase): the watcher stops while the bases are set, so that
// it does not race with the scan, and starts again after.
func (t *AllocTrace) rebase() {
	if t.weigher == nil || t.known == nil || !t.opts.Sampled {
		return
	}
	t.stopThreads()
	clear(t.known)
	t.tasks = t.scanThreads(nil, t.weigher.SetThread)
	t.watchThreads()
}

func (t *AllocTrace) stopThreads() {
	if t.stopWatch != nil {
		close(t.stopWatch)
		<-t.watchDone
		t.stopWatch = nil
	}
}

// scanThreads reads the JVM's thread list when the process's tasks changed since the last look (tasks),
// gives new Java threads their base and counter through set, and forgets threads that are gone (their
// tid may be reused). It returns the tasks it saw. In a trace of every allocation a thread's first
// firing is not weighed (counter 0): the counter read here also holds the allocations made before the
// uprobes fired for them.
func (t *AllocTrace) scanThreads(tasks map[int]bool, set func(usdt.WeightedThread) error) map[int]bool {
	d, err := os.Open("/proc/" + strconv.Itoa(t.pid) + "/task")
	if err != nil {
		return tasks
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	now := make(map[int]bool, len(names))
	changed := len(names) != len(tasks)
	for _, n := range names {
		tid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		now[tid] = true
		changed = changed || !tasks[tid]
	}
	if !changed {
		return now
	}
	threads, err := t.jvm.Threads()
	if err != nil && len(threads) == 0 {
		return tasks // look again next time
	}
	seen := make(map[int]bool, len(threads))
	for _, th := range threads {
		tid := th.HostTID
		if tid == 0 {
			tid = th.TID
		}
		if tid == 0 || th.JavaThread == 0 {
			continue
		}
		seen[tid] = true
		if t.known[tid] == th.JavaThread {
			continue
		}
		wt := usdt.WeightedThread{TID: tid, Base: th.JavaThread}
		if t.opts.Sampled {
			v, err := t.jvm.ThreadAllocation(t.counter, th.JavaThread)
			if err != nil {
				continue
			}
			wt.Counter, wt.Epoch, wt.Direct = v.Cooked(), v.TLABStart, v.AllocatedBytes
		}
		if set(wt) == nil {
			t.known[tid] = th.JavaThread
		}
	}
	for tid := range t.known {
		if !seen[tid] {
			if t.weigher != nil {
				_ = t.weigher.DeleteThread(tid)
			}
			delete(t.known, tid)
		}
	}
	// A task without a base is looked at again at the next scans (its tasks left out of the set returned
	// make it differ): a Java thread that had started but was not in the JVM's list yet, or whose
	// counters could not be read, would otherwise go unweighted for the rest of the trace. A task still
	// not in the list after retryScans scans is not a Java thread (a GC worker).
	for tid := range t.retry {
		if _, ok := t.known[tid]; ok || !now[tid] {
			delete(t.retry, tid)
		}
	}
	for tid := range now {
		if _, ok := t.known[tid]; !ok && t.retry[tid] < retryScans {
			t.retry[tid]++
			delete(now, tid)
		}
	}
	return now
}

// retryScans is how many thread scans a task without a base is looked at again.
const retryScans = 5
