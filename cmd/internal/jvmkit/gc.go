package jvmkit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/jvmkit/jvmkit/usdt"
	"github.com/jvmkit/jvmkit/usdt/hotspot"
	"github.com/jvmkit/jvmkit/vmstructs"
)

// gcJSON is the data of jvmkit.gc/v1.
type gcJSON struct {
	PID int `json:"pid"`
	// DurationNS is the window traced: from the probes' attachment to the end (--duration, a signal,
	// the JVM's exit); WindowStart and WindowEnd bound it in CLOCK_MONOTONIC, the clock of the pauses'
	// start_ns and of -Xlog's timenanos.
	DurationNS  int64             `json:"duration_ns"`
	WindowStart uint64            `json:"window_start_ns,omitempty"`
	WindowEnd   uint64            `json:"window_end_ns,omitempty"`
	Pauses      []hotspot.Pause   `json:"pauses"`
	Summary     hotspot.GCSummary `json:"summary"`
	Dropped     uint64            `json:"dropped"`
}

func (a *jvmkit) gcCmd() *cobra.Command {
	var duration time.Duration
	cmd := &cobra.Command{
		Use:   "gc <pid>",
		Short: "Trace a JVM's garbage collection pauses with the hotspot:gc__begin/gc__end probes (eBPF)",
		Long: `gc traces the collections of a running HotSpot JVM from the gc__begin and gc__end probes of its
libjvm.so and the mem__pool__gc__begin/__end probes of its memory managers, which fire without any flag,
and prints a line per pause as it ends, then a summary (count, full collections, total, mean, p50, p99,
max). It needs root and a JDK built with DTrace probes.

A pause is one collection as -Xlog:gc reports it: young, mixed and full collections, and G1's Remark and
Cleanup. HotSpot brackets the work of a safepoint with gc__begin and gc__end, and each collection in it
with its memory manager's pool probes: when Parallel or Serial follow a young collection with a full one
in the same safepoint (the old generation filled up), that is two pauses, the second full. A pause is
full when gc__begin says so or its manager is a full collector's (PS MarkSweep, MarkSweepCompact, G1 Old
Generation). A pause lasts from its first probe to its last. The time to reach the safepoint is not
included, as in -Xlog:gc. -Xlog:gc times most collections inside the probes, but full collections
(their manager's probes run inside the log's timer) and G1's Remark and Cleanup outside them: those can
be shorter here than in the log, by up to a few tenths of a millisecond (more when the VM thread lost
the CPU in between). ZGC's pauses (its short safepoints: three per cycle, five per major cycle of
generational ZGC) are timed outside the probes too, and there the probes' own cost shows: each probe hit
costs the VM thread a few microseconds, about six per pause, so that pauses of 15-20 µs untraced measured
29-38 µs in -Xlog:gc while traced and 25 µs (median) here (Temurin 25, generational ZGC, 2 vCPUs).
Concurrent phases are not pauses. The trace's window holds the pauses that began in it. The pools are each memory pool's use
before and after, as the collection's manager reported it (G1's Remark and Cleanup on JDK 21 and later
report through the "G1 Concurrent GC" manager). Before JDK 21 no manager reports G1's Remark and Cleanup:
for them gc reads the heap's own count of used bytes (G1CollectedHeap::_summary_bytes_used, found through
VMStructs) in the probes at the pause's start and end, shown as the pool "Java heap"; it leaves out what
the current allocation regions hold, which -Xlog:gc's heap figure counts (a region or two).

Each line starts with the pause's start in seconds from the start of the trace, its kind (pause or
full) and its duration, then the manager and the pools whose use changed (all of them, marked unchanged,
when none did).

The trace ends after --duration, at Ctrl-C or SIGTERM, or when the JVM exits (then gc says how the JVM
ended and exits with status 3). --json prints schema jvmkit.gc/v1 at the end, with the traced window in
CLOCK_MONOTONIC nanoseconds (comparable with -Xlog's timenanos decoration).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			pid, err := strconv.Atoi(args[0])
			if err != nil || pid <= 0 {
				return usagef("%q is not a pid", args[0])
			}
			if duration < 0 {
				return usagef("--duration %v is negative", duration)
			}
			return a.runGC(cmd.Context(), pid, duration)
		},
	}
	cmd.Flags().DurationVar(&duration, "duration", 0, "stop after this long (0: at Ctrl-C, SIGTERM or when the JVM exits)")
	return cmd
}

func (a *jvmkit) runGC(ctx context.Context, pid int, duration time.Duration) (err error) {
	exit, err := a.watchTarget("gc", pid)
	if err != nil {
		return err
	}
	defer exit.Close()
	mods, err := usdt.Modules(ctx, pid)
	if err != nil {
		return err
	}
	// G1's Remark and Cleanup before JDK 21 have no memory manager to report the heap: the probes read the
	// heap's own count of used bytes instead (VMStructs gives its address; without it, no figures).
	var opts hotspot.GCOptions
	vm, err := vmstructs.Open(ctx, pid)
	if errors.Is(err, vmstructs.ErrNotJVM) || errors.Is(err, vmstructs.ErrProcessGone) {
		return err // as profile and alloc say it (exit status 3)
	}
	if err == nil {
		opts.HeapUsed, err = vm.HeapUsedCounter()
		_ = vm.Close()
	}
	if err != nil {
		// Only G1's Remark and Cleanup before JDK 21 need it: say why they will have no figures.
		fmt.Fprintf(a.stderr, "jvmkit: no heap counter through VMStructs (%v): pauses that no memory manager reports will have no heap figures\n", err)
	}
	g, err := hotspot.TraceGC(ctx, pid, mods, opts)
	if err != nil {
		return err
	}
	defer func() { _ = g.Close() }()
	fmt.Fprintf(a.stderr, "jvmkit: gc: tracing collections in process %d\n", pid)
	// The window ends when the trace is told to stop, not when detaching the uprobes (which can take a
	// second on a busy machine) and reading what is left are done.
	start, startMono := time.Now(), monotonicNow()
	held := watchHeld(pid)
	var once sync.Once
	var end time.Time
	var endMono atomic.Uint64
	stopTrace := func() {
		once.Do(func() {
			end = time.Now()
			endMono.Store(monotonicNow())
			_ = g.Stop()
		})
	}
	stop := context.AfterFunc(ctx, stopTrace)
	defer stop()
	if duration > 0 {
		timer := time.AfterFunc(duration, stopTrace)
		defer timer.Stop()
	}
	var gone atomic.Bool
	watched := make(chan struct{})
	defer close(watched)
	go func() {
		select {
		case <-exit.Exited():
		case <-g.Exited():
		case <-watched:
			return
		}
		gone.Store(true)
		stopTrace()
	}()
	var pauses []hotspot.Pause
	origin := startMono // offsets count from the trace's start (from the first pause where there is no clock)
	for {
		p, err := g.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return err
		}
		// The window holds the pauses that began in it: not one caught while the probes were being
		// attached (some of its pools' probes may not have been yet), nor one while they are detached.
		if e := endMono.Load(); p.Start < startMono || e != 0 && p.Start > e {
			continue
		}
		pauses = append(pauses, p)
		if a.json {
			continue
		}
		if origin == 0 {
			origin = p.Start
		}
		kind := "pause"
		if p.Full {
			kind = "full"
		}
		var pools []string
		for _, u := range p.Pools {
			if u.Before == u.After {
				continue
			}
			pools = append(pools, fmt.Sprintf("%s %s->%s", u.Pool, formatBytes(u.Before), formatBytes(u.After)))
		}
		if len(pools) == 0 {
			// None changed (G1's Remark and Cleanup often): show what was reported, so that the line says
			// the pools were looked at.
			for _, u := range p.Pools {
				pools = append(pools, fmt.Sprintf("%s %s unchanged", u.Pool, formatBytes(u.Before)))
			}
		}
		if len(p.Pools) == 0 {
			// G1's Remark and Cleanup before JDK 21, when VMStructs did not give the heap's counter (or
			// the probe could not read it): no memory manager reports them.
			pools = append(pools, "(no pool figures: the JVM reported none for this pause)")
		}
		manager := ""
		if p.Manager != "" {
			manager = "[" + p.Manager + "] "
		}
		fmt.Fprintf(a.stdout, "%+10.3fs %-5s %9.3f ms  %s%s\n", float64(int64(p.Start-origin))/1e9, kind,
			float64(p.Duration)/1e6, manager, strings.Join(pools, ", "))
	}
	stopTrace()
	select {
	case <-g.Exited(): // the trace saw the exit before the watcher goroutine did
		gone.Store(true)
	default:
	}
	elapsed := end.Sub(start)
	a.endHeld(held, "gc", elapsed)
	if gone.Load() {
		defer func() { err = errors.Join(err, targetExited("gc", pid, exit, elapsed)) }()
	}
	dropped, derr := g.Drops()
	s := hotspot.Summarize(pauses)
	if a.json {
		if pauses == nil {
			pauses = []hotspot.Pause{}
		}
		return errors.Join(derr, a.printJSON("jvmkit.gc/v1", gcJSON{PID: pid, DurationNS: elapsed.Nanoseconds(),
			WindowStart: startMono, WindowEnd: endMono.Load(), Pauses: pauses, Summary: s, Dropped: dropped}))
	}
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	fmt.Fprintf(a.stdout, "# %d pauses (%d full) in %.1fs: total %.3f ms, mean %.3f ms, p50 %.3f ms, p99 %.3f ms, max %.3f ms\n",
		s.Count, s.Full, elapsed.Seconds(), ms(s.Total), ms(s.Mean), ms(s.P50), ms(s.P99), ms(s.Max))
	if dropped > 0 {
		fmt.Fprintf(a.stderr, "jvmkit: gc: %d events lost (full ring buffer)\n", dropped)
	}
	return derr
}
