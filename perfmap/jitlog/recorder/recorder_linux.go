package recorder

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/internal/javaname"
	"github.com/jvmkit/jvmkit/perfmap"
	"github.com/jvmkit/jvmkit/perfmap/jitlog"
	"github.com/jvmkit/jvmkit/usdt"
	"github.com/jvmkit/jvmkit/usdt/hotspot"
	"github.com/jvmkit/jvmkit/vmstructs"
)

// Record records the JIT code of the HotSpot JVMs pids into w until ctx is done, opts.Duration has
// passed or every JVM has exited. For each JVM, in this order: it attaches to the probes
// hotspot:compiled__method__load and unload, takes a snapshot of the code cache (SNAPSHOT records at
// the snapshot's start time), then streams each load (LOAD) and unload (UNLOAD) as it comes. Attaching
// first means that no code falls between the snapshot and the stream: code loaded during the snapshot
// is in both, and the resolver keeps one.
//
// Loads are logged with the size of the whole code, stub section included, which the code cache says
// (the size of the snapshot and of Compiler.perfmap, so that samples in the stubs are named too and
// the two records of the same code agree); where the code cache cannot be read in time (the code was
// already freed), with the probe's insts_size, which lacks the stubs. Names are
// Method::external_name's (javaname.Name with parameters and return type), those of the snapshot.
//
// A JVM that cannot be recorded (not HotSpot, no probes, gone) is reported in its JVMStats and
// the others are recorded; Record fails only when none can be. It flushes w after the snapshots and at
// the end but does not close it: give the Writer a FlushInterval to bound what a killed recorder loses.
// It needs root (uprobes, and reading the JVMs' memory).
func Record(ctx context.Context, pids []int, w *jitlog.Writer, opts Options) (Stats, error) {
	var stats Stats
	if len(pids) == 0 {
		return stats, errors.New("jitlog: record: no JVM given")
	}
	switch opts.Snapshot {
	case "":
		opts.Snapshot = "vmstructs"
	case "vmstructs", "perfmap", "none":
	default:
		return stats, fmt.Errorf("jitlog: record: snapshot %q is not vmstructs, perfmap or none", opts.Snapshot)
	}
	if opts.StringSize == 0 {
		opts.StringSize = 1024
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.Duration)
		defer cancel()
	}
	r := &recorder{w: w, log: log, opts: opts}
	if opts.Jitdump != "" {
		jf, err := jitlog.CreateJitdump(opts.Jitdump, jitlog.JitdumpOptions{})
		if err != nil {
			return stats, fmt.Errorf("jitlog: record: %w", err)
		}
		r.jd = jf
		stats.Jitdump = jf.Path()
	}

	var jvms []*jvmRecorder
	var errs []error
	for _, pid := range pids {
		if ctx.Err() != nil {
			break
		}
		j, err := r.start(ctx, pid)
		if err != nil {
			if errors.Is(err, usdt.ErrProcessGone) {
				err = usdt.ErrProcessGone // the layers' own wording only repeats the pid
			}
			err = fmt.Errorf("process %d: %w", pid, err) // in the stats and the error: not logged again
			errs = append(errs, err)
			stats.JVMs = append(stats.JVMs, JVMStats{PID: pid, Err: err.Error()})
			continue
		}
		jvms = append(jvms, j)
	}
	var wg sync.WaitGroup
	for _, j := range jvms {
		wg.Go(j.stream)
	}
	ferr := w.Flush()
	if len(jvms) > 0 && ferr == nil && opts.Ready != nil {
		opts.Ready()
	}
	if len(jvms) == 0 || ferr != nil {
		ctx = canceled
	}

	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		for _, j := range jvms {
			_ = j.tr.Stop() // Read then drains the ring buffer and returns io.EOF
		}
		<-done
	}
	var runErrs []error
	for _, j := range jvms {
		if d, err := j.tr.Drops(); err == nil {
			for _, n := range d {
				j.stats.Drops += n
			}
		}
		if j.stats.Drops > 0 {
			log.Warn("probe events lost (ring buffer full): the log may miss code", "pid", j.pid, "drops", j.stats.Drops)
		}
		if j.err != nil {
			j.stats.Err = j.err.Error()
			runErrs = append(runErrs, fmt.Errorf("process %d: %w", j.pid, j.err))
		}
		runErrs = append(runErrs, j.close())
		stats.JVMs = append(stats.JVMs, j.stats)
	}
	runErrs = append(runErrs, ferr, w.Flush())
	if r.jd != nil {
		runErrs = append(runErrs, r.jd.Close())
	}
	r.mu.Lock()
	runErrs = append(runErrs, r.werr, r.jdErr)
	r.mu.Unlock()
	if len(jvms) == 0 {
		// A JVM that could not be recorded is an error only when none could: otherwise it is in the
		// stats, and the others' log is good.
		runErrs = append(errs, runErrs...)
	}
	if err := errors.Join(runErrs...); err != nil {
		return stats, fmt.Errorf("jitlog: record: %w", err)
	}
	return stats, nil
}

var canceled = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// recorder is what the JVMs' streams share: the log and the jitdump.
type recorder struct {
	w    *jitlog.Writer
	log  *slog.Logger
	opts Options

	mu    sync.Mutex // the jitdump, and the errors
	jd    *jitlog.JitdumpFile
	jdErr error
	werr  error
}

func (r *recorder) append(recs ...jitlog.Record) {
	if err := r.w.Append(recs...); err != nil {
		r.mu.Lock()
		if r.werr == nil {
			r.werr = err
		}
		r.mu.Unlock()
	}
}

func (r *recorder) codeLoad(l jitlog.CodeLoad) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.jd == nil || r.jdErr != nil {
		return
	}
	if err := r.jd.CodeLoad(l); err != nil {
		r.jdErr = err
		return
	}
	// perf inject reads the file after the recording; flushed per load, a killed recorder's dump is
	// complete but for the last record.
	if err := r.jd.Flush(); err != nil {
		r.jdErr = err
	}
}

// jvmRecorder records one JVM.
type jvmRecorder struct {
	r    *recorder
	pid  int
	tr   *usdt.Tracer
	load map[int]bool // site index -> a load site (else unload)
	vm   *vmstructs.JVM
	cc   *vmstructs.CodeCache
	ccN  int // loads looked up with cc, to renew it (and its caches) now and then
	err  error

	live    map[uint64]liveCode // by start
	seq     uint64
	pending []pendingUnload
	unsized []unsizedLoad
	stats   JVMStats
}

// attach attaches to JVM pid's load and unload probes.
func (r *recorder) attach(ctx context.Context, pid int) (*jvmRecorder, error) {
	mods, err := usdt.Modules(ctx, pid)
	if err != nil {
		return nil, err
	}
	sites, err := hotspot.Sites(mods, "compiled__method__load", "compiled__method__unload")
	if err != nil {
		return nil, err
	}
	tr, err := usdt.Attach(ctx, sites, usdt.Options{PID: pid, StringSize: r.opts.StringSize, BufferSize: 4 << 20, Batch: recordBatch})
	if err != nil {
		return nil, err
	}
	j := &jvmRecorder{r: r, pid: pid, tr: tr, load: map[int]bool{}, stats: JVMStats{PID: pid}}
	for i, s := range tr.Sites() {
		j.load[i] = s.Probe.Name == "compiled__method__load"
	}
	return j, nil
}

func (r *recorder) start(ctx context.Context, pid int) (*jvmRecorder, error) {
	// The JVM's memory, for the sizes of loaded code and the snapshot. Without it the log still has
	// every load, with insts_size; but a process that is not a JVM (or is gone) is said so first, not
	// taken for a JDK without probes.
	vm, vmErr := vmstructs.Open(ctx, pid)
	if errors.Is(vmErr, vmstructs.ErrNotJVM) || errors.Is(vmErr, vmstructs.ErrProcessGone) {
		return nil, vmErr
	}
	j, err := r.attach(ctx, pid)
	if err != nil {
		if vm != nil {
			_ = vm.Close()
		}
		return nil, err
	}
	if vmErr != nil {
		r.log.Warn("cannot read the JVM's code cache: loads get the probe's size (without stubs)", "pid", pid, "err", vmErr)
	} else {
		j.vm = vm
		if j.cc, err = vm.CodeCache(); err != nil {
			r.log.Warn("cannot read the JVM's code cache: loads get the probe's size (without stubs)", "pid", pid, "err", err)
		}
	}
	if err := j.snapshot(ctx); err != nil {
		r.log.Warn("no snapshot: code loaded before the recording is not in the log", "pid", pid, "err", err)
		j.stats.Err = "snapshot: " + err.Error()
	}
	return j, nil
}

// snapshot appends the JVM's code cache as SNAPSHOT records stamped with the time the walk began.
func (j *jvmRecorder) snapshot(ctx context.Context) error {
	t := monotonicNow()
	var entries []perfmap.Entry
	var err error
	src := jitlog.SourceVMStructs
	switch j.r.opts.Snapshot {
	case "none":
		return nil
	case "vmstructs":
		if j.cc != nil {
			entries, err = blobEntries(j.cc)
			if err == nil {
				break
			}
			j.r.log.Warn("vmstructs snapshot failed, trying Compiler.perfmap", "pid", j.pid, "err", err)
		}
		fallthrough
	case "perfmap":
		t = monotonicNow()
		src = jitlog.SourcePerfMap
		entries, err = perfmap.FromJcmd(ctx, j.pid)
	}
	if err != nil {
		return err
	}
	recs := make([]jitlog.Record, 0, len(entries))
	for _, e := range entries {
		recs = append(recs, jitlog.Record{Time: t, PID: j.pid, Kind: jitlog.Snapshot, Start: e.Start, Size: e.Size, Name: e.Name, Source: src})
	}
	j.r.append(recs...)
	for _, e := range entries {
		j.addLive(e.Start, e.Size, e.Name)
	}
	j.stats.Snapshot, j.stats.Source = len(recs), src
	if j.r.jd != nil {
		for _, e := range entries {
			j.jitdump(t, j.pid, e.Start, e.Size, e.Name)
		}
	}
	return nil
}

// blobEntries is perfmap.FromVMStructs on an open code cache: every blob under Compiler.perfmap's name.
func blobEntries(cc *vmstructs.CodeCache) ([]perfmap.Entry, error) {
	blobs, err := cc.Blobs()
	if err != nil {
		return nil, err
	}
	out := make([]perfmap.Entry, 0, len(blobs))
	for i := range blobs {
		if b := &blobs[i]; b.End > b.Start && !b.Unloaded() {
			out = append(out, perfmap.Entry{Start: b.Start, Size: b.End - b.Start, Name: b.Label()})
		}
	}
	if len(out) == 0 {
		return nil, errors.New("empty code cache")
	}
	return out, nil
}

func (j *jvmRecorder) jitdump(t uint64, tid int, start, size uint64, name string) {
	code, err := jitlog.ReadCode(j.pid, start, size)
	if err != nil {
		code = nil // zeros: perf names samples without the code
	} else {
		j.stats.CodeRead++
	}
	j.r.codeLoad(jitlog.CodeLoad{Time: t, PID: j.pid, TID: tid, Addr: start, Size: size, Name: name, Code: code})
}

// liveCode is code the recorder believes live, to find which of several nmethods of one name an
// UNLOAD (names only) is about.
type liveCode struct {
	name string
	size uint64
	seq  uint64 // load order
}

// pendingUnload is an UNLOAD whose code is not found yet: several nmethods of its name are live
// (tier 3 and tier 4, OSR, a recompilation) and none was seen freed.
type pendingUnload struct {
	rec      jitlog.Record
	cands    []uint64
	deadline time.Time
}

// unsizedLoad is a LOAD logged with the probe's insts_size because the code cache did not have its
// blob when the event was read (a read of the JVM's memory failed, say, on a loaded machine): the
// recorder looks again until sizeWait has passed, and logs the whole size at the load's time.
type unsizedLoad struct {
	rec      jitlog.Record
	tid      int
	seq      uint64
	deadline time.Time
}

// testMissSize, set by tests, tells a load's first size lookup to fail, to exercise resize.
var testMissSize func() bool

// sizeWait bounds how long a load logged with insts_size is looked up again.
const sizeWait = 5 * time.Second

// recordBatch is how often the recorder reads the probes' events: each record keeps its probe time,
// so reading them late changes nothing but the recorder's cost (one wake-up per batch, not per event:
// the Go runtime's wake-ups were most of the recorder's CPU time on a churning JVM).
const recordBatch = 100 * time.Millisecond

// unloadWait bounds how long an UNLOAD of a method with several live versions waits for one of them to
// be freed (JDK 21+ frees unlinked nmethods at the end of the same collection) before it is counted as
// ambiguous and left out.
const unloadWait = 10 * time.Second

// stream turns probe events into records until the tracer ends (Stop, or the JVM's exit).
func (j *jvmRecorder) stream() {
	events := make(chan usdt.Event, 256)
	go func() {
		defer close(events)
		for {
			ev, err := j.tr.Read()
			if err != nil {
				if !errors.Is(err, io.EOF) {
					j.err = err
				}
				return
			}
			events <- ev
		}
	}()
	// Pending unloads wait for a collection to free their code: looking twice a second is enough (each
	// look reads the code cache for every candidate), and records keep their probe times anyway.
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				j.resolvePending(true)
				j.resize()
				return
			}
			j.event(&ev)
		case <-tick.C:
			if len(j.pending) > 0 {
				j.resolvePending(false)
			}
			if len(j.unsized) > 0 {
				j.resize()
			}
		}
	}
}

func (j *jvmRecorder) event(ev *usdt.Event) {
	e, err := hotspot.Decode(ev)
	if err != nil {
		return
	}
	m, ok := e.(*hotspot.CompiledMethod)
	if !ok {
		return
	}
	name := javaname.Name(m.Class, m.Method, m.Signature, javaname.Options{Params: true, Return: true})
	if !j.load[ev.Site] {
		j.stats.Unloads++
		j.unload(jitlog.Record{Time: m.Time, PID: j.pid, Kind: jitlog.Unload, Name: name, Source: jitlog.SourceUSDT})
		return
	}
	j.stats.Loads++
	size, full := m.Size, false
	if n, ok := j.codeSize(m.Code, name); ok && (testMissSize == nil || !testMissSize()) {
		size, full = n, true
		j.stats.FullSize++
	}
	j.addLive(m.Code, size, name)
	rec := jitlog.Record{Time: m.Time, PID: j.pid, Kind: jitlog.Load, Start: m.Code, Size: size, Name: name, Source: jitlog.SourceUSDT}
	j.r.append(rec)
	if j.r.jd != nil {
		j.jitdump(m.Time, m.TID, m.Code, size, name)
	}
	if !full && j.vm != nil {
		j.unsized = append(j.unsized, unsizedLoad{rec: rec, tid: m.TID, seq: j.seq, deadline: time.Now().Add(sizeWait)})
	}
}

// resize looks up again the loads logged with insts_size. One whose code the code cache now has, still
// live in the recorder's view, is logged again with the whole size at the same time: the resolver
// keeps the later record of two at one time and address. The others are retried until sizeWait.
func (j *jvmRecorder) resize() {
	kept := j.unsized[:0]
	now := time.Now()
	for _, u := range j.unsized {
		c, live := j.live[u.rec.Start]
		if !live || c.seq != u.seq {
			continue // unloaded, or replaced by later code at that address
		}
		n, ok := j.codeSize(u.rec.Start, u.rec.Name)
		if !ok {
			if now.Before(u.deadline) {
				kept = append(kept, u)
			}
			continue
		}
		j.stats.FullSize++
		if n == u.rec.Size {
			continue
		}
		j.stats.Resized++
		j.dropOverlapping(u.rec.Start, n)
		c.size = n
		j.live[u.rec.Start] = c
		rec := u.rec
		rec.Size = n
		j.r.append(rec)
		if j.r.jd != nil {
			j.jitdump(rec.Time, u.tid, rec.Start, n, rec.Name)
		}
	}
	j.unsized = kept
}

func (j *jvmRecorder) addLive(start, size uint64, name string) {
	if j.live == nil {
		j.live = map[uint64]liveCode{}
	}
	j.dropOverlapping(start, size)
	j.seq++
	j.live[start] = liveCode{name: name, size: size, seq: j.seq}
}

// dropOverlapping forgets the live code that [start, start+size) overlaps, but for the code at start
// (which the caller replaces): the JIT reused the memory, so that code is gone.
func (j *jvmRecorder) dropOverlapping(start, size uint64) {
	for a, c := range j.live {
		if a != start && a < codeEnd(start, size) && start < codeEnd(a, c.size) {
			delete(j.live, a)
		}
	}
}

// unload logs an UNLOAD with the address of its code when the recorder can tell which code it is:
// the one live nmethod of the name, or the one that the code cache no longer has.
func (j *jvmRecorder) unload(rec jitlog.Record) {
	var cands []uint64
	for a, c := range j.live {
		if c.name == rec.Name {
			cands = append(cands, a)
		}
	}
	if len(cands) == 0 {
		// Code the recorder no longer holds live (a later load took its place) or never saw. An
		// UNLOAD by name alone would have the resolver close the oldest live code of that name, which
		// may be the version that runs now: left out.
		j.stats.Ambiguous++
		return
	}
	// Even a single candidate is checked against the code cache: the version freed may be one the
	// recorder no longer holds.
	p := pendingUnload{rec: rec, cands: cands, deadline: time.Now().Add(unloadWait)}
	if !j.tryUnload(&p, false) {
		j.pending = append(j.pending, p)
	}
}

func (j *jvmRecorder) resolvePending(final bool) {
	kept := j.pending[:0]
	for i := range j.pending {
		p := j.pending[i]
		if !j.tryUnload(&p, final || time.Now().After(p.deadline)) {
			kept = append(kept, p)
		}
	}
	j.pending = kept
}

// tryUnload logs p if one of its candidates is gone from the code cache. With force, when none is, p
// is counted as ambiguous and left out (see JVMStats.Ambiguous).
func (j *jvmRecorder) tryUnload(p *pendingUnload, force bool) bool {
	best, found := uint64(0), false
	for _, a := range p.cands {
		c, ok := j.live[a]
		if ok && c.name == p.rec.Name && !j.dead(a, c.name) {
			continue
		}
		if !found || ok && c.seq < j.live[best].seq {
			best, found = a, true
		}
	}
	if found {
		j.emitUnload(p.rec, best)
		return true
	}
	if !force {
		return false
	}
	// Guessing (the oldest version, say) closes code that may still run: its samples would go unnamed
	// or to the wrong method. Leaving the unload out keeps a freed version live in the log instead,
	// which names nothing wrongly.
	j.stats.Ambiguous++
	return true
}

func (j *jvmRecorder) emitUnload(rec jitlog.Record, start uint64) {
	c, ok := j.live[start]
	if !ok || c.name != rec.Name {
		j.stats.Ambiguous++ // already replaced in the log by a load at that address
		return
	}
	rec.Start, rec.Size = start, c.size
	delete(j.live, start)
	j.r.append(rec)
}

// dead tells whether the nmethod named name at start is no longer live: freed (the code cache has no
// such blob there) or, on JDKs with a sweeper (up to 19), a zombie or unloaded (vmstructs'
// CodeCache.Dead). What cannot be read is taken as live: the unload then waits.
func (j *jvmRecorder) dead(start uint64, name string) bool {
	if j.cc == nil {
		return false
	}
	b, err := j.cc.FindBlob(start)
	if err != nil {
		return false
	}
	if b == nil || b.Start != start || b.Label() != name {
		return true
	}
	dead, err := j.cc.Dead(b)
	return err == nil && dead
}

// codeSize returns the size of the code of the nmethod named name that starts at addr, stubs
// included, if it is still there: the code cache's view is renewed when it does not find it (a code
// heap grew, or a cached method name is stale).
func (j *jvmRecorder) codeSize(addr uint64, name string) (uint64, bool) {
	if j.vm == nil {
		return 0, false
	}
	for try := 0; try < 2; try++ {
		if j.cc == nil || j.ccN >= 10000 || try > 0 {
			cc, err := j.vm.CodeCache()
			if err != nil {
				return 0, false
			}
			j.cc, j.ccN = cc, 0
		}
		j.ccN++
		b, err := j.cc.FindBlob(addr)
		if err == nil && b != nil && b.Start == addr && b.End > addr && b.Label() == name {
			return b.End - b.Start, true
		}
	}
	return 0, false
}

func (j *jvmRecorder) close() error {
	err := j.tr.Close()
	if j.vm != nil {
		err = errors.Join(err, j.vm.Close())
	}
	return err
}

// codeEnd is the first address after size bytes of code at start, saturated at the top of the address
// space (as the resolver has it).
func codeEnd(start, size uint64) uint64 {
	if e := start + size; e >= start {
		return e
	}
	return math.MaxUint64
}

// monotonicNow reads CLOCK_MONOTONIC, the log's clock (that of the probes' times and of perf record
// -k mono).
func monotonicNow() uint64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0
	}
	return uint64(ts.Nano())
}
