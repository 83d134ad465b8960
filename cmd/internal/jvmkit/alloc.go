package jvmkit

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/jvmkit/jvmkit/attach"
	"github.com/jvmkit/jvmkit/cmd/internal/guard"
	"github.com/jvmkit/jvmkit/internal/procfs"
	"github.com/jvmkit/jvmkit/usdt"
	"github.com/jvmkit/jvmkit/usdt/hotspot"
	"github.com/jvmkit/jvmkit/vmstructs"
)

// allocJSON is the data of jvmkit.alloc/v1.
type allocJSON struct {
	PID        int    `json:"pid"`
	Version    string `json:"version,omitempty"`
	DurationNS int64  `json:"duration_ns"`
	// WindowStart and WindowEnd bound the window counted in CLOCK_MONOTONIC: with --switch-flags, from the
	// flag switched on to switched off (to compare with another tool's record of the same window).
	WindowStart uint64                `json:"window_start_ns,omitempty"`
	WindowEnd   uint64                `json:"window_end_ns,omitempty"`
	Mode        string                `json:"mode"` // "all" or "sample"
	Switched    []string              `json:"switched,omitempty"`
	Flags       []hotspot.FlagState   `json:"flags"`
	Note        string                `json:"note,omitempty"`
	Profile     *hotspot.AllocProfile `json:"profile"`
}

const sampleNote = "sample: DTraceAllocProbes was switched on at run time, so compiled code fires only on its slow " +
	"paths (a new TLAB, an allocation outside a TLAB) and interpreted code on every allocation"

// windowsNote says how a weighted sample's weights were given to classes.
func windowsNote(p *hotspot.AllocProfile) string {
	if p.Unattributed > 0 {
		why := ""
		if p.WindowError != "" {
			why = ": " + p.WindowError
		}
		return fmt.Sprintf("; each new TLAB's weight goes with the objects at the start of its thread's previous TLAB "+
			"(its window), but no window could be walked (%d not copied, %d not walked%s), so %s of the total are "+
			"in no class", p.WindowsLost, p.WindowsFailed, why, formatBytes(p.Unattributed))
	}
	if p.Windows == 0 {
		why := ""
		if p.WindowError != "" {
			why = " (no TLAB windows: " + p.WindowError + ")"
		}
		return "; each sample's weight goes to the class of its allocation" + why
	}
	return fmt.Sprintf("; each new TLAB's weight is spread over the classes of the objects at the start of its thread's "+
		"previous TLAB (2-4 KiB copied in the probe: its window), by their bytes, not given to the object that opened "+
		"the new TLAB as JFR gives it: %d of %d samples had their window walked; %d windows not copied (a full buffer, unreadable memory), "+
		"%d not walked and %d samples without one (a thread's first, the first after a collection: %s) are spread alike",
		p.Windows, p.Samples, p.WindowsLost, p.WindowsFailed, p.WindowsNone, formatBytes(p.WindowsNoneBytes))
}

// sizesNote says how a profile's bytes were sized.
func sizesNote(p *hotspot.AllocProfile) string {
	switch p.Sizes {
	case hotspot.SizesWeights:
		return "bytes are estimates: a new TLAB's sample weighs the bytes its thread allocated since its previous sample, " +
			"an allocation outside a TLAB its own size (the JavaThread's allocated-bytes counter, read in the probe: the " +
			"weights of JFR's ObjectAllocationSample), so they sum to what the threads allocated; firings inside a TLAB " +
			"(interpreted code, code compiled during the trace) weigh nothing, the TLAB's sample stands for them" + windowsNote(p)
	case hotspot.SizesClass:
		switch {
		case p.ProbeSizes:
			return "instance sizes from each class's layout helper, other sizes as the probe passed them"
		case p.WeightSizes:
			return "instance sizes from each class's layout helper, other sizes from the bytes the thread allocated at each firing"
		}
		return "instance sizes from each class's layout helper; this JVM's probe passes wrong sizes, so other sizes are unknown"
	}
	if p.ProbeSizes {
		return "sizes as the probe passed them"
	}
	return "sizes as the probe passed them, out-of-range ones left out"
}

func (a *jvmkit) allocCmd() *cobra.Command {
	var duration time.Duration
	var switchFlags, folded, events, restore, heapSampling bool
	var top, interval int
	var sf allocStackFlags
	cmd := &cobra.Command{
		Use:   "alloc <pid>",
		Short: "Count a JVM's allocations by class with the hotspot:object__alloc probe (eBPF)",
		Long: `alloc counts the allocations of a running HotSpot JVM by class, from the object__alloc probe of its
libjvm.so, with a uprobe and an eBPF program that counts in the kernel: no agent, no restart. It needs root
(CAP_BPF, CAP_PERFMON and ptrace access) and a JDK built with DTrace probes (Debian's, Temurin).

HotSpot fires object__alloc only with -XX:+DTraceAllocProbes. Started with it, the JVM reports every
allocation, and alloc prints exact counts and bytes per class. The probe's size argument is right on
JDK 25 but garbage on JDK 17 (its interpreter, C1 and C2 do not pass it), so alloc reads the JVM's
VMStructs and sizes instance classes from their layout (every JDK), arrays from the probe where it
checks out (JDK 25) or from the bytes the thread allocated at each firing (JDK 17); an array whose
size cannot be known is marked "size unknown", never guessed. Each allocation costs the JVM a trap into
the kernel while alloc runs (about half a microsecond), so keep --duration short on busy JVMs. That holds
for --switch-flags too, whose interpreted code and code compiled during the trace fire on every
allocation: measured on Jetty under wrk (JDK 17, two cores), 3,100-3,480 requests a second before,
208-330 while alloc --switch-flags ran (4.75 million firings in 8 s), as before once it ended.

--switch-flags turns DTraceAllocProbes on at run time in a JVM started without it (a one-byte write into
its memory, like 'jvmkit flags --set --write-memory') and off again when alloc ends: after --duration, at
Ctrl-C or SIGTERM (or SIGHUP), or on an error. Code the JIT compiled before the switch does not fire on its
fast path, only when it takes a new TLAB or allocates outside one, while interpreted code and code compiled
during the trace fire on every allocation: the result is a sample. The samples are the firings at a new
TLAB or outside one, weighed as JFR weighs its ObjectAllocationSample events: a new TLAB's by the bytes its
thread allocated since its previous sample, an allocation outside a TLAB by its size (the JavaThread's
allocated-bytes counter, read in the probe from the switch on); firings inside the current TLAB weigh
nothing, the TLAB's sample stands for them. Every allocation outside a TLAB is a sample, of its exact
size; JFR takes one only when its thread allocated a TLAB's worth since its previous sample, so classes
often allocated outside TLABs (mid-sized and large arrays) have more samples here than in JFR, for the
same bytes: compare bytes, not sample counts. The count ends just before the flag is switched off (code
compiled while it was on fires until the uprobes are gone, up to a second later on a loaded machine). So
a class's bytes estimate what it allocated, classes are sorted by them, and a class with n samples is
known to about 1/sqrt(n) of its bytes. Where new TLABs start is not where the bytes went: a loop that
allocates the same sequence over and over locks them onto a few of its classes (a TLAB's size stays the
same between collections), and JFR's ObjectAllocationSample, which gives a sample's weight to the object
that opened the new TLAB, under-samples the others (a loop allocating 8 objects of 32 bytes, 2 of 56 and
1 of 16: the 16-byte class, 4% of the bytes, got 0 of 57,050 of JFR's samples). So at each new TLAB the
probe also copies the start of the thread's previous TLAB (the allocations the sample stands for, in
their order: all of it up to 4 KiB, else its first 2 to 4 KiB, the end chosen at random so that the
windows do not all end at the same point of a loop) and jvmkit spreads the sample's weight over the
classes of the objects in it, by their bytes (in a partial window, bytes weigh min(1, offset/2 KiB), so
that the start of a loop's round, where such windows start, does not count more): the same loop gives
the 16-byte class 4.1% of the bytes on JDK 17, 21 and 25. A window is
copied only when no collection ran since the previous TLAB started (CollectedHeap's count of
collections, read in the probe); windows the ring buffer has no room for are spread as the others are.
Not with ZGC or Shenandoah (objects move between their collections) nor with compact object headers:
there, each sample's weight goes to the class of the object that opened the new TLAB, as JFR's do, and
the output says why.
Measured under load (Jetty and H2, JDK 17 and 25, 8 s, with windows): against JFR's ObjectAllocationSample
in the same JVM and window, the same samples per class (99-99.9%) and total bytes (within 0.5%); against
a second instance started with the full probe, 9-10 of the top 10 classes and 95-99% of the bytes (JFR's
own samples 8-10 and 93-95%); in the full-probe JVM itself, 9-10 of 10 and 98-99.6% (without windows,
Jetty's item loop gave 8/10: new TLABs opened at an Item 86 times where its bytes predict 275).
After the flag is restored, code compiled while it was on keeps calling the probe until it is compiled
again (no uprobe is left, so the call is cheap): C2's code on JDK 21 and later, C1's on JDK 17 (measured
on Jetty under load: from under a hundred to hundreds of thousands of firings in 3 s, on JDK 17 and 25
alike, depending on what was compiled during the trace).

--heap-sampling samples with HotSpot's own heap sampler instead (JVMTI SampledObjectAlloc, JEP 331; JDK 11
and later; no probe, no flag): jvmkit's JVMTI agent is loaded into the JVM (staged in its /tmp as gjmaps
--strategy agent stages its own) and turns the sampler on for --duration (10 s when not given), each
thread's next sample a random number of bytes away (--interval on average, 512 KiB by default). Samples
fall on random bytes, not where new TLABs start, so a loop cannot lock them onto a few of its classes:
on the Alloc workload with fixed 8 KiB TLABs, whose 16-byte class is 4.17% of the bytes, it gave that
class 4.17% where --switch-flags and JFR's ObjectAllocationSample give it nothing. Each sample of s bytes
weighs s/(1-exp(-s/interval)) bytes (its chance to be sampled), so bytes and counts estimate what each
class allocated. The agent ends the session by itself a minute after --duration (or when its file
reaches 256 MiB), so a killed jvmkit leaves no sampling behind, and the next session stops it at once;
the library stays loaded, idle. One session at a time per JVM. HotSpot's sampler is shared by every
JVMTI agent: another agent's heap sampling (async-profiler's alloc mode) ends with ours. On JDK 21 and later the JVM prints a warning that an agent was loaded
(JEP 451); a JVM started with -XX:-EnableDynamicAgentLoading or a noexec /tmp refuses it.

The JVM is not left changed even if alloc is killed: before it switches the flag, alloc records the
change in /run/jvmkit and starts a guardian (the same binary, in a session of its own, ignoring SIGINT,
SIGTERM and SIGHUP) that watches alloc and the JVM and restores the flag within milliseconds if alloc
dies without doing so (SIGKILL, the OOM killer). Two alloc --switch-flags on one JVM share the change:
the flag goes off when the last ends. If alloc and its guardian are both killed, the next alloc on that
JVM restores the flag first, 'jvmkit alloc --restore <pid>' restores it at once, and 'jvmkit flags' says
that it was left behind.

When the JVM exits during the trace, alloc prints what it counted until then, says how the JVM ended
(its exit status or the signal that killed it, where the kernel reports it) and exits with status 3.

Output: one line per class, most allocations first (most bytes in a sample), with counts, bytes and
shares; --top limits the lines. Class names are Java names (byte[], java.lang.String). --json prints
schema jvmkit.alloc/v1; --folded prints "class value" lines for flame graph tools, the value being bytes
(estimated bytes in a sample). --restore <pid> only restores what an alloc --switch-flags killed together
with its guardian left changed.

--stacks records, with each recorded firing, the allocating thread's registers and up to 16 KiB of its
stack (eBPF), and walks the stack as 'jvmkit profile' does: the output is then a flame graph of
allocations, each stack rooted at its thread's name and ending in the allocated class (after the Java
frame that allocated it; --vm-frames keeps libjvm's allocation path in between), weighted by allocations
(by bytes with --bytes, sized as above). With --switch-flags only the samples are recorded (a new TLAB,
an allocation outside one: the firings inside a TLAB stand for nothing), weighted by samples, or with
--bytes by the samples' weights: a stack's bytes then estimate what it allocated, with the sample points'
bias where a loop locks them (TLAB windows spread the table's bytes over classes, but a window's objects
carry no stack, so stacks keep each sample's weight at the allocation that opened the TLAB). -o writes it to a file; --format is folded, svg or pprof. A firing with a stack costs far
more than a counted one, so with every allocation firing (-XX:+DTraceAllocProbes) only one in --sample
N firings is recorded, chosen at random in the kernel (default 64); with --switch-flags, whose firings
are a sample already, every one (default 1). Records the reader could not keep up with are counted as
lost: the stacks miss their share. With --sample N, each recorded firing's count and bytes are
multiplied by N, so that the output estimates every firing's.
The share of stacks walked to their thread's root
is printed at the end.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			pid, err := strconv.Atoi(args[0])
			if err != nil || pid <= 0 {
				return usagef("%q is not a pid", args[0])
			}
			if restore {
				for _, name := range []string{"duration", "switch-flags", "top", "folded", "events", "stacks", "heap-sampling", "interval"} {
					if cmd.Flags().Changed(name) {
						return usagef("--restore takes only the pid")
					}
				}
				return a.runAllocRestore(cmd.Context(), pid)
			}
			if duration < 0 || top < 0 {
				return usagef("--duration and --top must not be negative")
			}
			if folded && a.json {
				return usagef("--json and --folded exclude each other")
			}
			if err := sf.check(cmd, folded || a.json); err != nil {
				return err
			}
			if cmd.Flags().Changed("interval") && !heapSampling {
				return usagef("--interval goes with --heap-sampling")
			}
			if heapSampling {
				if switchFlags || sf.stacks || events {
					return usagef("--heap-sampling excludes --switch-flags, --stacks and --events")
				}
				if interval <= 0 || interval > math.MaxInt32 {
					return usagef("--interval must be between 1 and %d bytes", math.MaxInt32)
				}
				return a.runAllocHeap(cmd.Context(), pid, duration, interval, top, folded)
			}
			if sf.stacks {
				return a.runAllocStacks(cmd.Context(), pid, duration, switchFlags, &sf)
			}
			return a.runAlloc(cmd.Context(), pid, duration, switchFlags, events, top, folded)
		},
	}
	f := cmd.Flags()
	f.DurationVar(&duration, "duration", 0, "stop after this long (0: at Ctrl-C, SIGTERM or when the JVM exits)")
	f.BoolVar(&switchFlags, "switch-flags", false, "turn DTraceAllocProbes on for the trace if it is off, and restore it after")
	f.BoolVar(&heapSampling, "heap-sampling", false, "sample with HotSpot's heap sampler (JVMTI, JDK 11+): random bytes, not new TLABs; no flag changed")
	f.IntVar(&interval, "interval", 512<<10, "with --heap-sampling: mean bytes between samples per thread")
	f.BoolVar(&restore, "restore", false, "restore what an alloc --switch-flags killed with its guardian left changed, and exit")
	f.IntVar(&top, "top", 0, "print only the first N classes (0: all)")
	f.BoolVar(&folded, "folded", false, "print folded lines (class value) for flame graph tools")
	f.BoolVar(&events, "events", false, "read every event through a ring buffer and count in jvmkit (slower; for comparison)")
	_ = f.MarkHidden("events")
	sf.register(f)
	return cmd
}

// restoreJSON is the data of jvmkit.alloc.restore/v1.
type restoreJSON struct {
	PID      int            `json:"pid"`
	Restored []guard.Change `json:"restored"`
	Held     []guard.Change `json:"held"` // by running commands: restored when the last of them ends
}

// runAllocRestore undoes the changes to JVM pid that jvmkit recorded and no running jvmkit holds.
func (a *jvmkit) runAllocRestore(ctx context.Context, pid int) error {
	store, err := guard.OpenStoreIfExists(guard.DefaultDir)
	if err != nil {
		return err
	}
	var restored, held []guard.Change
	if store != nil {
		defer func() { _ = store.Close() }()
		if restored, held, err = guard.RestoreLeft(ctx, store, pid, "jvmkit alloc --restore"); err != nil {
			return err
		}
	} else if _, err := guard.Identify(pid); err != nil {
		return err
	}
	if a.json {
		return a.printJSON("jvmkit.alloc.restore/v1", restoreJSON{PID: pid, Restored: append([]guard.Change{}, restored...),
			Held: append([]guard.Change{}, held...)})
	}
	for _, c := range restored {
		fmt.Fprintf(a.stdout, "restored %s to %s in process %d (%s set it %s at %s)\n", c.Name, c.Old, pid, c.By, c.New, c.At.Format(time.RFC3339))
	}
	for _, c := range held {
		fmt.Fprintf(a.stdout, "%s stays %s in process %d: held by %s, which restores it when it ends\n", c.Name, c.New, pid, guard.Holders(&c))
	}
	if len(restored)+len(held) == 0 {
		fmt.Fprintf(a.stdout, "nothing to restore in process %d: jvmkit has no change to it on record\n", pid)
	}
	return nil
}

// allocTarget is a JVM opened for an allocation trace, and the state of its DTrace flags.
type allocTarget struct {
	pid     int
	j       *vmstructs.JVM
	version string
	flags   []hotspot.FlagState
	on      bool // DTraceAllocProbes is on: object__alloc fires for every allocation
	exit    *procfs.ExitWatcher
	mods    []usdt.Module // the process's modules, whose libjvm.so has the probe
}

// close releases the target.
func (t *allocTarget) close() {
	_ = t.j.Close()
	t.exit.Close()
}

// switchedByJvmkit looks at jvmkit's record of t's JVM when DTraceAllocProbes is on: if jvmkit switched it
// on, t.on becomes false (the JVM did not start with it, only a sample fires). A change left behind (its
// command and guardian were killed) is restored first, and t.flags read again; a change a live command
// holds is returned.
func (a *jvmkit) switchedByJvmkit(ctx context.Context, t *allocTarget) (*guard.Change, error) {
	store, err := guard.OpenStoreIfExists(guard.DefaultDir)
	if err != nil || store == nil {
		return nil, err
	}
	defer func() { _ = store.Close() }()
	rec, err := guard.Read(store, t.pid)
	if err != nil {
		return nil, err
	}
	c := rec.Find(guard.KindBoolFlag, hotspot.AllocProbes)
	if c == nil {
		return nil, nil
	}
	t.on = false
	if c.Held() {
		return c, nil
	}
	restored, _, err := guard.RestoreLeft(ctx, store, t.pid, "jvmkit alloc (next run)")
	if err != nil {
		return nil, err
	}
	for _, r := range restored {
		fmt.Fprintf(a.stderr, "jvmkit: alloc: restored %s to %s in process %d: %s left it %s at %s (it and its guardian were killed)\n",
			r.Name, r.Old, t.pid, r.By, r.New, r.At.Format(time.RFC3339))
	}
	if t.flags, err = hotspot.ReadFlags(t.j); err != nil {
		return nil, err
	}
	return nil, nil
}

// waitAlloc waits for the end of a trace: ctx (SIGINT, SIGTERM, SIGHUP), --duration or the JVM's exit
// (gone).
func waitAlloc(ctx context.Context, duration time.Duration, exited <-chan struct{}) (gone bool) {
	var timeout <-chan time.Time
	if duration > 0 {
		timer := time.NewTimer(duration)
		defer timer.Stop()
		timeout = timer.C
	}
	select {
	case <-ctx.Done():
	case <-timeout:
	case <-exited:
		return true
	}
	return false
}

// exitedError is a trace whose JVM exited before the trace ended: what was counted until then is
// printed, and the exit status says the target is gone.
type exitedError struct {
	cmd    string // "alloc"
	pid    int
	status procfs.ExitStatus
	after  time.Duration
}

func (e *exitedError) Error() string {
	return fmt.Sprintf("%s: process %d %s %.1fs into the trace (what was recorded until then is printed)", e.cmd, e.pid, e.status, e.after.Seconds())
}

// Is makes the error an attach.ErrProcessGone (exit status 3).
func (e *exitedError) Is(target error) bool { return target == attach.ErrProcessGone }

func (t *allocTarget) exitedError(after time.Duration) error {
	return targetExited("alloc", t.pid, t.exit, after)
}

// targetExited is the error of a trace whose JVM (watched by w) exited before the trace ended.
func targetExited(cmd string, pid int, w *procfs.ExitWatcher, after time.Duration) error {
	select {
	case <-w.Exited():
	case <-time.After(time.Second): // the trace saw the exit first; the watcher follows at once
	}
	return &exitedError{cmd: cmd, pid: pid, status: w.Status(), after: after}
}

// watchTarget watches JVM pid's exit for a trace, and says so when the JVM cannot run (noteHeld).
func (a *jvmkit) watchTarget(cmd string, pid int) (*procfs.ExitWatcher, error) {
	w, err := procfs.Default.WatchExit(pid)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: %d", attach.ErrProcessGone, pid)
		}
		return nil, fmt.Errorf("%s: watch process %d: %w", cmd, pid, err)
	}
	a.noteHeld(cmd, pid)
	return w, nil
}

// noteHeld warns that JVM pid cannot run now (stopped, or frozen by its cgroup: podman pause), so that a
// trace of it finds nothing: an empty result is then not taken for an idle JVM. Reading its memory
// (threads, flags, code cache) works all the same.
func (a *jvmkit) noteHeld(cmd string, pid int) {
	if why := procfs.Default.Held(pid); why != "" {
		fmt.Fprintf(a.stderr, "jvmkit: %s: process %d is %s; it runs nothing until then, so the trace will find nothing\n", cmd, pid, why)
	}
}

// openAllocTarget opens JVM pid for an allocation trace. With DTraceAllocProbes off and no
// --switch-flags it fails, saying what to do; the JVM's flag and --switch-flags complete the message
// (" to count every allocation", " and sample allocations"). The caller closes t.j.
func (a *jvmkit) openAllocTarget(ctx context.Context, pid int, switchFlags bool, startHint, switchHint string) (*allocTarget, error) {
	exit, err := a.watchTarget("alloc", pid)
	if err != nil {
		return nil, err
	}
	j, err := vmstructs.Open(ctx, pid)
	if err != nil {
		exit.Close()
		return nil, err
	}
	t := &allocTarget{pid: pid, j: j, exit: exit}
	// A JDK without the probe first (JDK 11 from Debian): no flag would make it fire.
	if t.mods, err = usdt.Modules(ctx, pid); err == nil {
		_, err = hotspot.Sites(t.mods, "object__alloc")
	}
	if err != nil {
		t.close()
		return nil, fmt.Errorf("alloc: process %d: %w", pid, err)
	}
	t.version, _ = j.Version()
	if t.flags, err = hotspot.ReadFlags(j); err != nil {
		t.close()
		return nil, err
	}
	t.on = hotspot.FlagOn(t.flags, hotspot.AllocProbes)
	var held *guard.Change // the flag is on because another jvmkit switched it on
	if t.on {
		if held, err = a.switchedByJvmkit(ctx, t); err != nil {
			t.close()
			return nil, err
		}
	}
	if held != nil && !switchFlags {
		t.close()
		return nil, fmt.Errorf("alloc: %s is on in process %d only because %s switched it on, so only a sample of "+
			"allocations fires: pass --switch-flags to share it (it is switched off when the last of you ends)",
			hotspot.AllocProbes, pid, guard.Holders(held))
	}
	if !t.on && !switchFlags {
		t.close()
		return nil, fmt.Errorf("alloc: %s is off in process %d, so object__alloc does not fire: start the JVM with "+
			"-XX:+%s%s, or pass --switch-flags to turn it on for the trace%s (see jvmkit alloc --help)",
			hotspot.AllocProbes, pid, hotspot.AllocProbes, startHint, switchHint)
	}
	return t, nil
}

func (a *jvmkit) runAlloc(ctx context.Context, pid int, duration time.Duration, switchFlags, events bool, top int, folded bool) (err error) {
	t, err := a.openAllocTarget(ctx, pid, switchFlags, " to count every allocation", " and sample allocations")
	if err != nil {
		return err
	}
	j, version, flags, on := t.j, t.version, t.flags, t.on
	defer t.close()
	ctx, sw, err := a.prepareAllocSwitch(ctx, pid, on)
	if err != nil {
		return err
	}
	defer sw.closeInto(&err)
	tr, err := hotspot.TraceAlloc(ctx, pid, t.mods, hotspot.AllocOptions{Events: events, Weights: true, Sampled: !on})
	if err != nil {
		return err
	}
	defer func() { _ = tr.Close() }()
	if sw != nil {
		tr.Rebase() // the samples weigh what was allocated from the switch on
		if err := sw.on(j); err != nil {
			return err
		}
	}

	startMono := monotonicNow()
	fmt.Fprintf(a.stderr, "jvmkit: alloc: counting allocations in process %d (%d object__alloc sites)\n", pid, len(tr.Sites()))
	start := time.Now()
	held := watchHeld(pid)
	gone := waitAlloc(ctx, duration, t.exit.Exited())
	elapsed := time.Since(start)
	a.endHeld(held, "alloc", elapsed)
	endMono := monotonicNow()
	if err := tr.Freeze(endMono); err != nil {
		// The count then goes on until the uprobes are detached: say so, and go on to restore the flag.
		fmt.Fprintf(a.stderr, "jvmkit: alloc: %v: the count includes what fired while the flag was switched off\n", err)
	}
	var switched []string
	if sw != nil {
		switched = sw.sw.Changed()
		if rerr := sw.off(gone); rerr != nil {
			return rerr
		}
	}
	if err := tr.Stop(); err != nil {
		return err
	}
	prof, err := tr.Profile()
	if err != nil {
		return err
	}
	defer func() {
		if gone {
			err = errors.Join(err, t.exitedError(elapsed))
		}
	}()
	sample := !on
	if prof.Lost > 0 {
		fmt.Fprintf(a.stderr, "jvmkit: alloc: %d allocations were not counted (too many classes or a full buffer)\n", prof.Lost)
	}
	if sample {
		a.noteUnweighed(tr, prof)
	}
	if sample && prof.Sizes == hotspot.SizesWeights {
		hotspot.SortClasses(prof.Classes, true) // the estimate of bytes is the point of a weighted sample
	}
	shown := prof.Classes
	if sample && prof.Sizes == hotspot.SizesWeights && !a.json {
		// Classes that fired only inside a TLAB have no sample and stand for nothing (sorted last).
		for len(shown) > 0 && shown[len(shown)-1].Samples == 0 && shown[len(shown)-1].Bytes == 0 {
			shown = shown[:len(shown)-1]
		}
	}
	if top > 0 && len(shown) > top {
		shown = shown[:top]
	}
	switch {
	case a.json:
		out := allocJSON{PID: pid, Version: version, DurationNS: elapsed.Nanoseconds(), WindowStart: startMono,
			WindowEnd: endMono, Mode: "all", Switched: switched, Flags: flags, Profile: prof, Note: sizesNote(prof)}
		if sample {
			out.Mode, out.Note = "sample", sampleNote+"; "+out.Note
		}
		out.Profile = shownProfile(prof, shown)
		return a.printJSON("jvmkit.alloc/v1", out)
	case folded:
		w := bufio.NewWriter(a.stdout)
		for _, c := range shown {
			v := c.Bytes
			if sample && prof.Sizes != hotspot.SizesWeights {
				v = c.Count
			}
			fmt.Fprintf(w, "%s %d\n", strings.ReplaceAll(c.Class, " ", "_"), v)
		}
		return w.Flush()
	}
	return writeAllocTable(a.stdout, pid, version, elapsed, sample, prof, shown)
}

// shownProfile is prof with the classes shown (--top) only, never null in JSON.
func shownProfile(prof *hotspot.AllocProfile, shown []hotspot.ClassAlloc) *hotspot.AllocProfile {
	p := *prof
	p.Classes = shown
	if p.Classes == nil {
		p.Classes = []hotspot.ClassAlloc{}
	}
	return &p
}

func writeAllocTable(out io.Writer, pid int, version string, elapsed time.Duration, sample bool, prof *hotspot.AllocProfile, shown []hotspot.ClassAlloc) error {
	w := bufio.NewWriter(out)
	weighted := sample && prof.Sizes == hotspot.SizesWeights
	what, bytes := "allocations", formatBytes(prof.Bytes)
	switch {
	case weighted:
		what = fmt.Sprintf("samples (new TLABs and allocations outside one) among %d firings", prof.Count)
		bytes = "standing for " + bytes
	case sample:
		what = "sampled allocations"
	}
	if prof.Unsized > 0 {
		bytes += fmt.Sprintf(" (+ %d allocations of unknown size)", prof.Unsized)
	}
	total := prof.Count
	if weighted {
		total = prof.Samples
	}
	fmt.Fprintf(w, "# process %d (%s), %.1fs: %d %s, %s\n", pid, version, elapsed.Seconds(), total, what, bytes)
	if sample {
		fmt.Fprintf(w, "# %s.\n", sampleNote)
	}
	fmt.Fprintf(w, "# %s.\n", sizesNote(prof))
	windows := weighted && prof.Windows > 0
	switch {
	case windows:
		fmt.Fprintf(w, "# samples are where new TLABs opened (JFR's sample points), windows those that held the class: a class in n windows is known to about 1/sqrt(n) of its bytes.\n")
	case weighted:
		fmt.Fprintf(w, "# a class with n samples is known to about 1/sqrt(n) of its bytes (10%% at 100 samples).\n")
	}
	countCol := "count"
	if sample {
		countCol = "samples"
	}
	windowCol := func(c *hotspot.ClassAlloc) string { return "" }
	if windows {
		fmt.Fprintf(w, "%12s %7s %10s %12s %7s  %s\n", countCol, countCol[:5]+"%", "windows", "bytes", "bytes%", "class")
		windowCol = func(c *hotspot.ClassAlloc) string { return fmt.Sprintf(" %10d", c.Windows) }
	} else {
		fmt.Fprintf(w, "%12s %7s %12s %7s  %s\n", countCol, countCol[:5]+"%", "bytes", "bytes%", "class")
	}
	pct := func(x, total uint64) float64 {
		if total == 0 {
			return 0
		}
		return 100 * float64(x) / float64(total)
	}
	for _, c := range shown {
		unsized := ""
		switch {
		case c.Unsized == c.Count && c.Count > 0:
			unsized = "  (size unknown)"
		case c.Unsized > 0:
			unsized = fmt.Sprintf("  (+ %d of unknown size)", c.Unsized)
		}
		n := c.Count
		if weighted {
			n = c.Samples
		}
		fmt.Fprintf(w, "%12d %6.2f%%%s %12d %6.2f%%  %s%s\n", n, pct(n, total), windowCol(&c), c.Bytes, pct(c.Bytes, prof.Bytes), c.Class, unsized)
	}
	if len(shown) < len(prof.Classes) {
		fmt.Fprintf(w, "# %d more classes\n", len(prof.Classes)-len(shown))
	}
	return w.Flush()
}

func formatBytes(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// allocSwitch is DTraceAllocProbes turned on for one trace (--switch-flags), kept by a guardian process
// (cmd/internal/guard) that restores it if alloc is killed.
type allocSwitch struct {
	sw     *hotspot.Switch
	w      *vmstructs.ProcessMemoryWriter
	store  *guard.Store
	sess   *guard.Session
	endHup context.CancelFunc // cancels the trace's context and stops listening for SIGHUP
	stderr io.Writer
	said   bool
	pid    int
}

// prepareAllocSwitch gets ready to turn DTraceAllocProbes on in JVM pid: it starts the guardian, before
// the trace's eBPF objects exist (see cmd/internal/guard: a killed command's pipe to its guardian must close
// before them). The context it returns is also cancelled by SIGHUP (SIGINT and SIGTERM already cancel
// ctx, see run): a closed terminal must not end the tool with the flag on. The caller defers close at
// once (closeInto), and calls on when the trace is attached. When the flag is already on (on) there is
// nothing to switch: the switch is nil, and ctx is returned as it is.
func (a *jvmkit) prepareAllocSwitch(ctx context.Context, pid int, on bool) (context.Context, *allocSwitch, error) {
	if on {
		return ctx, nil, nil
	}
	s := &allocSwitch{stderr: a.stderr, pid: pid}
	ctx, s.endHup = cancelOnHup(ctx)
	var err error
	if s.store, err = guard.OpenStore(guard.DefaultDir); err == nil {
		if s.sess, err = guard.Begin(ctx, s.store, pid, "jvmkit alloc --switch-flags"); err == nil {
			s.w, err = vmstructs.OpenProcessMemoryWriter(pid)
		}
	}
	if err != nil {
		_ = s.close()
		return nil, nil, fmt.Errorf("alloc: switch %s on: %w", hotspot.AllocProbes, err)
	}
	return ctx, s, nil
}

// on turns the flag on.
func (s *allocSwitch) on(j *vmstructs.JVM) error {
	var err error
	if s.sw, err = hotspot.SwitchOnKept(j, s.w, s.sess, hotspot.AllocProbes); err != nil {
		return fmt.Errorf("alloc: %w", err)
	}
	fmt.Fprintf(s.stderr, "jvmkit: alloc: switched %s on in process %d; it is switched off when alloc ends "+
		"(guardian pid %d restores it if alloc is killed)\n", hotspot.AllocProbes, j.PID, s.sess.Guardian())
	return nil
}

// off puts the flag back and says so; later calls do nothing. When the JVM is gone there is nothing
// to put back, and nothing is said.
func (s *allocSwitch) off(gone bool) error {
	if s.sw == nil || s.said {
		return nil
	}
	if err := s.sw.Restore(); err != nil {
		return err
	}
	s.said = true
	off, kept := s.sw.Restored()
	if !gone && len(off) > 0 {
		fmt.Fprintf(s.stderr, "jvmkit: alloc: switched %s off again\n", strings.Join(off, ", "))
	}
	if !gone && len(kept) > 0 {
		// Another command holds it, or a later change replaced ours (jvmkit flags --set, alloc --restore):
		// that change decides its value now.
		fmt.Fprintf(s.stderr, "jvmkit: alloc: left %s as it is: another command holds it, or a later change replaced ours "+
			"(jvmkit flags %d %s shows its record)\n", strings.Join(kept, ", "), s.pid, kept[0])
	}
	return nil
}

// closeInto closes s (nil: nothing to close) and joins what that fails with into *err: deferred by the
// caller of prepareAllocSwitch, whose named result err is.
func (s *allocSwitch) closeInto(err *error) {
	if s == nil {
		return
	}
	if rerr := s.close(); rerr != nil {
		*err = errors.Join(*err, rerr)
	}
}

// close puts the flag back if off has not, and releases what the switch holds (the guardian exits).
func (s *allocSwitch) close() error {
	err := s.off(false)
	if s.sess == nil { // prepareAllocSwitch failed before the session
		s.endHup()
		_ = s.store.Close()
		return err
	}
	if s.w != nil {
		_ = s.w.Close()
	}
	_ = s.sess.Close()
	_ = s.store.Close()
	s.endHup()
	return err
}

// cancelOnHup returns a context that SIGHUP also cancels (SIGINT and SIGTERM already cancel ctx, see
// run): a closed terminal must end a trace as Ctrl-C does, so that what it changed in the JVM is undone
// now. The function cancels it and stops listening.
func cancelOnHup(ctx context.Context) (context.Context, context.CancelFunc) {
	hup := make(chan os.Signal, 1)
	stop := func() {}
	if sigs := hupSignals(); len(sigs) > 0 { // Notify without signals would relay them all
		signal.Notify(hup, sigs...)
		stop = func() { signal.Stop(hup) }
	}
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-hup:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		cancel()
		stop()
	}
}
