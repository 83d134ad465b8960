package fleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jvmkit/jvmkit/attach"
	"github.com/jvmkit/jvmkit/internal/procfs"
	"github.com/jvmkit/jvmkit/jcmd"
	"github.com/jvmkit/jvmkit/unwind"
	"github.com/jvmkit/jvmkit/vmstructs"
)

// Options configure an Agent. Zero fields take their defaults.
type Options struct {
	// Window is how long each profile covers; default 60 s. New JVMs are looked for at every window's
	// end, so a JVM started during window n is profiled from window n+1.
	Window time.Duration
	// Frequency is the sampling rate in Hz of on-CPU time (cpu-clock; a thread that runs all the time
	// gets that many samples a second); default 99.
	Frequency int
	// Sinks receive every window; at least one.
	Sinks []Sink
	// BufferBytes bounds each sink's buffer of unsent windows (their gzipped pprof); the oldest are
	// dropped beyond it. Default 16 MiB.
	BufferBytes int
	// ExportTimeout bounds one export; default 30 s. Backoff after a failed export starts at
	// BackoffMin (default 1 s) and doubles up to BackoffMax (default: the window).
	ExportTimeout          time.Duration
	BackoffMin, BackoffMax time.Duration
	// FlushTimeout bounds the sending of the last window when the agent stops; default 10 s.
	FlushTimeout time.Duration
	// MaxStacks bounds the distinct stacks of one JVM in one window (memory); samples beyond go to a
	// "[truncated]" stack and are counted. Default 20000.
	MaxStacks int
	// Host names the node (host.name); default os.Hostname.
	Host string
	// Discover lists the JVMs to profile; default: every JVM on the host and in containers, found as
	// jcmd.List finds them, each process inspected once (a NewLister). Non-HotSpot JVMs in its
	// answer are skipped.
	Discover func(context.Context) ([]jcmd.JVM, error)
	// Select, if set, picks the discovered JVMs to profile.
	Select func(jcmd.JVM) bool
	// PerThread samples each JVM's threads with an event and a ring of their own, found by reading the
	// JVM's thread list every 100 ms (as `jvmkit profile` does), instead of one event per CPU whose BPF
	// filter keeps the samples of the JVMs profiled. The agent falls back to it when the kernel refuses
	// the filter; it costs more per JVM (a ring per thread, the thread list polled, a goroutine
	// waking per JVM).
	PerThread bool
	// Version is the agent's version, sent as the OTLP instrumentation scope's.
	Version string
	// Logger gets what the agent does and why a JVM is skipped; nil discards.
	Logger *slog.Logger
}

// Agent profiles every JVM it discovers, window after window, and hands each window to its sinks.
type Agent struct {
	opts  Options
	log   *slog.Logger
	stats *stats
	sinks []*queue
	// kernel names kernel frames for every JVM: /proc/kallsyms is read once, not once per JVM.
	kernel *unwind.KernelSymbols
	// cpu samples every JVM profiled, with an event per CPU (nil: PerThread); byPID holds the JVMs it
	// samples, copied on write (the sampling loop reads it at every drain).
	cpu     *unwind.CPUSampler
	byPIDMu sync.Mutex
	byPID   atomic.Pointer[map[int]*profiler]
}

// New checks opts and returns an Agent; Run starts it.
func New(opts Options) (*Agent, error) {
	if len(opts.Sinks) == 0 {
		return nil, errors.New("agent: no sink: give an OTLP endpoint, a Pyroscope URL or a directory")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&opts.Window, time.Minute)
	def(&opts.ExportTimeout, 30*time.Second)
	def(&opts.BackoffMin, time.Second)
	def(&opts.BackoffMax, opts.Window) // a backend that is back gets the buffer within a window
	def(&opts.FlushTimeout, 10*time.Second)
	if opts.Frequency <= 0 {
		opts.Frequency = 99
	}
	if opts.Frequency > 10000 {
		return nil, fmt.Errorf("agent: frequency %d Hz: at most 10000", opts.Frequency)
	}
	if opts.BufferBytes <= 0 {
		opts.BufferBytes = 16 << 20
	}
	if opts.MaxStacks <= 0 {
		opts.MaxStacks = 20000
	}
	if opts.Host == "" {
		opts.Host, _ = os.Hostname()
	}
	if opts.Discover == nil {
		opts.Discover = NewLister().List
	}
	a := &Agent{opts: opts, log: opts.Logger, stats: newStats(), kernel: &unwind.KernelSymbols{}}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	for _, s := range opts.Sinks {
		st := &sinkStats{name: s.Name()}
		a.stats.sinks = append(a.stats.sinks, st)
		a.sinks = append(a.sinks, newQueue(s, opts.BufferBytes, opts.ExportTimeout, [2]time.Duration{opts.BackoffMin, opts.BackoffMax}, a.log, st))
	}
	return a, nil
}

// jvmKey names one process across pid reuse.
type jvmKey struct {
	pid   int
	start uint64
}

// profiler samples one JVM in the background.
type profiler struct {
	target Target
	cur    *stacks // swapped at each window's end
	mu     sync.Mutex
	done   chan struct{}
	err    error // why sampling ended; read after done

	// With the CPU sampler, the sampling loop owns these.
	vm   *vmstructs.JVM
	w    *unwind.Walker
	proc *procfs.Handle // tells when the JVM exits
}

func (p *profiler) swap(next *stacks) *stacks {
	p.mu.Lock()
	defer p.mu.Unlock()
	old := p.cur
	p.cur = next
	return old
}

func (p *profiler) add(st *unwind.Stack) {
	p.mu.Lock()
	s := p.cur
	p.mu.Unlock()
	s.add(st)
}

// Run profiles until ctx ends, then cuts and sends the last (partial) window and returns, within
// Options.FlushTimeout. It returns an error only if it cannot start.
//
// Windows are cut by a ticker that nothing else delays: discovering and opening JVMs (which can take
// seconds on a busy node) run in a goroutine of their own, after each cut, and a JVM's first window
// starts when its sampling does.
func (a *Agent) Run(ctx context.Context) error {
	stopSend := make(chan struct{})
	var senders sync.WaitGroup
	for _, q := range a.sinks {
		senders.Go(func() { q.run(stopSend) })
	}
	// The kernel's symbols are read once for all JVMs (seconds on a busy node): start now.
	go a.kernel.Symbolize(0)
	js := &jvmSet{m: map[jvmKey]*profiler{}}
	jctx, stopJVMs := context.WithCancel(ctx)
	var sampling sync.WaitGroup
	stopSampling := make(chan struct{}) // closed once the discoverer, which adds JVMs, has returned
	if !a.opts.PerThread {
		cpu, err := a.newCPUSampler()
		if err != nil {
			a.log.Warn("agent: no per-CPU sampling; sampling each JVM's threads instead (more CPU per JVM)", "err", err)
		} else {
			a.cpu = cpu
			a.stats.perCPU.Store(true)
			a.byPID.Store(&map[int]*profiler{})
			sampling.Go(func() { a.sampleCPUs(stopSampling) })
		}
	}
	kick := make(chan struct{}, 1)
	var discoverer sync.WaitGroup
	discoverer.Go(func() {
		for {
			a.discover(jctx, js)
			select {
			case <-jctx.Done():
				return
			case <-kick:
			}
		}
	})
	tick := time.NewTicker(a.opts.Window)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			stopJVMs()
			discoverer.Wait()
			close(stopSampling)
			sampling.Wait()
			a.cut(js, time.Now())
			for _, p := range js.all() {
				<-p.done
			}
			close(stopSend)
			senders.Wait()
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.opts.FlushTimeout)
			var wg sync.WaitGroup
			for _, q := range a.sinks {
				wg.Go(func() { q.drain(fctx) })
			}
			wg.Wait()
			cancel()
			a.stats.jvms.Store(0)
			return nil
		case now := <-tick.C:
			a.cut(js, now)
			select {
			case kick <- struct{}{}:
			default: // still discovering: it will look again when done
			}
		}
	}
}

// jvmSet are the JVMs being profiled, shared by the window loop and the discoverer.
type jvmSet struct {
	mu sync.Mutex
	m  map[jvmKey]*profiler
}

func (s *jvmSet) all() []*profiler {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*profiler, 0, len(s.m))
	for _, p := range s.m {
		out = append(out, p)
	}
	return out
}

func (s *jvmSet) has(k jvmKey) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.m[k]
	return ok
}

// cut ends the current window of every JVM, hands the windows to the sinks, and forgets JVMs whose
// sampling ended.
func (a *Agent) cut(js *jvmSet, now time.Time) {
	a.stats.windows.Add(1)
	var ws []*Window
	js.mu.Lock()
	defer js.mu.Unlock()
	for k, p := range js.m {
		ended := false
		select {
		case <-p.done:
			ended = true
		default:
		}
		s := p.swap(newStacks(a.opts.MaxStacks, now))
		if w := a.window(p.target, s, now); w != nil {
			ws = append(ws, w)
		} else {
			a.log.Debug("agent: no sample in this window", "pid", p.target.PID, "service", p.target.Service)
		}
		if ended {
			delete(js.m, k)
			a.stats.jvms.Add(-1)
			if errors.Is(p.err, unwind.ErrProcessExited) || isGone(p.err) {
				a.stats.exited.Add(1)
				a.log.Info("agent: JVM exited", "pid", p.target.PID, "service", p.target.Service)
			} else if p.err != nil {
				reason := reasonOf(p.err)
				a.stats.skip(reason)
				a.log.Warn("agent: stopped profiling a JVM", "pid", p.target.PID, "service", p.target.Service, "reason", reason, "err", p.err)
			}
		}
	}
	if len(ws) == 0 {
		return
	}
	for _, q := range a.sinks {
		q.push(ws)
	}
}

// window makes a JVM's window from its stacks; nil when it has no sample (an idle JVM: nothing to
// send).
func (a *Agent) window(t Target, s *stacks, end time.Time) *Window {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.samples == 0 {
		return nil
	}
	a.stats.samples.Add(s.samples)
	a.stats.broken.Add(s.broken)
	a.stats.truncated.Add(s.truncated)
	b, err := buildPprof(t, s.folded(), s.start, end, a.opts.Frequency)
	if err != nil {
		a.stats.err("pprof")
		a.log.Error("agent: build pprof", "pid", t.PID, "err", err)
		return nil
	}
	a.stats.profiles.Add(1)
	return &Window{Target: t, Start: s.start, End: end, Samples: s.samples, Broken: s.broken, Truncated: s.truncated, Pprof: b}
}

// discover starts profiling JVMs not yet profiled.
func (a *Agent) discover(ctx context.Context, js *jvmSet) {
	t0 := time.Now()
	found, err := a.opts.Discover(ctx)
	a.log.Debug("agent: discovered", "jvms", len(found), "took", time.Since(t0))
	if err != nil && ctx.Err() == nil {
		a.stats.err("discover")
		a.log.Warn("agent: list JVMs", "err", err)
	}
	for _, j := range found {
		if ctx.Err() != nil {
			return
		}
		if !j.HotSpot || (a.opts.Select != nil && !a.opts.Select(j)) {
			continue
		}
		st, err := procfs.Default.StartTime(j.PID)
		if err != nil {
			continue // gone already
		}
		k := jvmKey{j.PID, st}
		if js.has(k) {
			continue
		}
		t0 := time.Now()
		p, err := a.start(ctx, j, st)
		if err != nil {
			if !isGone(err) && !errors.Is(err, errPIDBusy) && ctx.Err() == nil {
				reason := reasonOf(err)
				a.stats.skip(reason)
				a.log.Warn("agent: cannot profile a JVM; will try again next window", "pid", j.PID, "main", j.MainClass, "reason", reason, "err", err)
			}
			continue
		}
		js.mu.Lock()
		js.m[k] = p
		js.mu.Unlock()
		a.stats.jvms.Add(1)
		a.stats.started.Add(1)
		a.log.Info("agent: profiling", "pid", j.PID, "service", p.target.Service, "container", p.target.ContainerID, "jdk", p.target.JDK, "open_took", time.Since(t0).Round(time.Millisecond))
	}
}

// drainEvery is how long a JVM's samples may wait to be walked: at the default 99 Hz a busy thread's
// ring holds 30 ms of them, and reading the rings of every JVM every 10 ms (the sampler's default) was
// a third of the agent's CPU on one JVM (wake-ups of the Go scheduler).
const drainEvery = 50 * time.Millisecond

// cpuDrainEvery is drainEvery for the CPU sampler, whose rings hold 300 ms of a CPU at 99 Hz: one
// wake-up for every JVM on the node, ten times a second.
const cpuDrainEvery = 100 * time.Millisecond

// start opens a JVM's VMStructs and starts sampling it in the background.
func (a *Agent) start(ctx context.Context, j jcmd.JVM, startTime uint64) (*profiler, error) {
	vm, err := vmstructs.Open(ctx, j.PID)
	if err != nil {
		return nil, err
	}
	native := unwind.NewProcessSymbols(j.PID)
	w, err := unwind.New(vm, unwind.Options{Native: native, Kernel: a.kernel})
	if err != nil {
		vm.Close()
		return nil, err
	}
	// Read the symbol tables now, not at the first sample: on a busy node reading /proc/kallsyms and
	// libjvm.so's symbols takes seconds, during which a sampler's rings would overflow and the JVM's
	// first windows come out empty.
	a.kernel.Symbolize(0)
	native.Symbolize(vm.Bias)
	t := a.describe(j, startTime)
	t.JDK, _ = vm.Version()
	p := &profiler{target: t, cur: newStacks(a.opts.MaxStacks, time.Now()), done: make(chan struct{})}
	if a.cpu != nil {
		if err := a.sampleJVM(p, vm, w); err != nil {
			vm.Close()
			return nil, err
		}
		return p, nil
	}
	pctx, cancel := context.WithCancel(ctx)
	go func() {
		defer close(p.done)
		defer vm.Close()
		defer cancel()
		p.err = w.Profile(pctx, unwind.SamplerOptions{Frequency: a.opts.Frequency, DrainEvery: drainEvery}, func(_ *unwind.Sample, st *unwind.Stack) {
			p.add(st)
		})
	}()
	return p, nil
}

// newCPUSampler opens the per-CPU sampler, if the agent can use it: it sees pids as the kernel's BPF
// helpers do (it runs in the initial pid namespace: hostPID in Kubernetes) and can hold processes by
// pidfd (Linux 5.3+) to see them exit.
func (a *Agent) newCPUSampler() (*unwind.CPUSampler, error) {
	st, err := procfs.Default.Status(os.Getpid())
	if err != nil {
		return nil, err
	}
	if len(st.NSpid) > 1 {
		return nil, fmt.Errorf("the agent runs in a pid namespace of its own (its pid there is %d; run it in the host's: hostPID)", st.NSpid[len(st.NSpid)-1])
	}
	h, err := procfs.OpenHandle(os.Getpid())
	if err != nil {
		return nil, err
	}
	_ = h.Close()
	return unwind.NewCPUSampler(unwind.SamplerOptions{Frequency: a.opts.Frequency, DrainEvery: cpuDrainEvery})
}

// errPIDBusy: a JVM's pid is still held by the sampling of its previous process, which exited less
// than exitCheck ago; the JVM is tried again at the next window.
var errPIDBusy = errors.New("the sampling of the previous process of this pid has not ended yet")

// sampleJVM adds a JVM to the CPU sampler's: sampleCPUs walks its samples from now on, and ends it
// when it exits or the agent stops.
func (a *Agent) sampleJVM(p *profiler, vm *vmstructs.JVM, w *unwind.Walker) error {
	h, err := procfs.OpenHandle(vm.PID)
	if err != nil {
		return err
	}
	p.vm, p.w, p.proc = vm, w, h
	a.byPIDMu.Lock()
	defer a.byPIDMu.Unlock()
	m := *a.byPID.Load()
	if _, ok := m[vm.PID]; ok {
		// The pid's last process exited less than exitCheck ago and is not ended yet.
		_ = h.Close()
		return fmt.Errorf("pid %d: %w", vm.PID, errPIDBusy)
	}
	if err := a.cpu.Add(vm.PID); err != nil {
		_ = h.Close()
		return err
	}
	m = maps.Clone(m)
	m[vm.PID] = p
	a.byPID.Store(&m)
	return nil
}

// sampleCPUs reads the CPU sampler's rings every drainEvery until stop is closed, walks each sample with
// its JVM's walker (before the code it ran can be unloaded; the walker's view of the code cache is
// taken again every second), and ends the sampling of JVMs that exited; at stop, of all.
func (a *Agent) sampleCPUs(stop <-chan struct{}) {
	defer func() { _ = a.cpu.Close() }()
	tick := time.NewTicker(a.cpu.DrainEvery())
	defer tick.Stop()
	lastCheck := time.Now()
	var lost uint64
	for {
		stopping := false
		select {
		case <-stop:
			stopping = true
		case <-tick.C:
		}
		ps := *a.byPID.Load()
		a.cpu.Drain(func(smp *unwind.Sample) {
			if p := ps[smp.PID]; p != nil {
				st := p.w.WalkLive(smp)
				p.add(&st)
			}
		})
		if n := a.cpu.Lost(); n > lost {
			a.stats.lost.Add(int64(n - lost))
			lost = n
		}
		if stopping {
			for _, p := range ps {
				a.endSampling(p, nil)
			}
			return
		}
		if time.Since(lastCheck) >= exitCheck {
			lastCheck = time.Now()
			for _, p := range ps {
				if p.proc.Exited() {
					a.endSampling(p, fmt.Errorf("sample %d: the process exited: %w", p.target.PID, unwind.ErrProcessExited))
				}
			}
		}
	}
}

// exitCheck is how often sampleCPUs looks for JVMs that exited.
const exitCheck = 100 * time.Millisecond

// endSampling stops sampling a JVM: the next cut sends its last window and forgets it.
func (a *Agent) endSampling(p *profiler, err error) {
	a.byPIDMu.Lock()
	if m := *a.byPID.Load(); m[p.vm.PID] == p { // not a new process of the same pid
		m = maps.Clone(m)
		delete(m, p.vm.PID)
		a.byPID.Store(&m)
		a.cpu.Remove(p.vm.PID)
	}
	a.byPIDMu.Unlock()
	p.vm.Close()
	_ = p.proc.Close()
	p.err = err
	close(p.done)
}

// describe labels a JVM: service name, host, container and pod.
func (a *Agent) describe(j jcmd.JVM, startTime uint64) Target {
	t := Target{PID: j.PID, NSPID: j.NSPID, StartTime: startTime, MainClass: j.MainClass, Host: a.opts.Host}
	args, _ := procfs.Default.Cmdline(j.PID)
	env, _ := procfs.Default.Environ(j.PID)
	t.Service, t.ServiceFrom = ServiceName(jcmd.JVMOptions(args), env, j.MainClass)
	if cg, err := procfs.Default.Cgroup(j.PID); err == nil {
		c := procfs.ContainerOf(cg)
		t.ContainerID, t.ContainerRuntime, t.PodUID = c.ID, c.Runtime, c.PodUID
	}
	return t
}

func isGone(err error) bool {
	return errors.Is(err, attach.ErrProcessGone) || errors.Is(err, os.ErrNotExist)
}

// reasonOf names why a JVM could not be profiled, for the skipped metric.
func reasonOf(err error) string {
	switch {
	case errors.Is(err, attach.ErrPermission), errors.Is(err, os.ErrPermission):
		return "permission"
	case errors.Is(err, attach.ErrNotJVM):
		return "not-hotspot"
	case errors.Is(err, attach.ErrNotSupported):
		return "not-supported"
	case isGone(err), errors.Is(err, unwind.ErrProcessExited):
		return "exited"
	}
	var me *vmstructs.MissingError
	if errors.As(err, &me) {
		return "vmstructs"
	}
	return "error"
}
