package jvmkit

import (
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/jvmkit/jvmkit/cmd/internal/cliutil"
	"github.com/jvmkit/jvmkit/flame"
	"github.com/jvmkit/jvmkit/unwind"
	"github.com/jvmkit/jvmkit/vmstructs"
)

type profileFlags struct {
	freq    int
	stack   int
	dur     time.Duration
	out     string
	format  string
	threads bool
	core    string
}

func (a *jvmkit) profileCmd() *cobra.Command {
	var pf profileFlags
	cmd := &cobra.Command{
		Use:   "profile <pid> | profile --core FILE",
		Short: "Profile a JVM's CPU use without an agent: perf samples walked through VMStructs",
		Long: `profile samples every thread of a HotSpot JVM with perf_event_open (cpu-clock, so it works
without a hardware PMU) and walks each sample's stack from the outside: Java frames (interpreted,
compiled and inlined, with line numbers) through the JVM's own VMStructs, native frames by their
symbols, kernel frames from the sample's callchain. Nothing is loaded into the JVM. Threads that start
while it runs are followed. It samples for --duration (0: until Ctrl-C or SIGTERM, then writes the profile
and exits 0); -o is checked before sampling starts. It needs root (or kernel.perf_event_paranoid <= 1 and ptrace access).

Native frames are unwound by their call frame information (.eh_frame) over the stack as the sample
copied it, so a thread in native code gets the Java frames it had then. A stack that cannot be walked
to its thread's root ends in a frame that names the reason, e.g. "[bad-return-address]", and shows no
frame it could not prove; the counts per reason are printed at the end.

Without -XX:+DebugNonSafepoints (a diagnostic flag) the JIT records which methods it inlined where only
at calls and safepoints: between them a compiled frame's inlined methods are those of the next such
point, as AsyncGetCallTrace and async-profiler name them, and a sample in a small inlined method may show
its caller as the leaf (on Jetty, JDK 17: Utf8HttpWriter.write led the Java leaves with a quarter of them
without the flag and was not among the top 15 with it). profile says so when the JVM runs without it and
no JVMTI agent that asks for compiled-method events (which makes HotSpot record them too) is loaded.

Formats: folded (one "frame;...;frame count" line per stack, root first, as flamegraph.pl reads it),
pprof (gzipped profile.proto for go tool pprof), svg (a flame graph), json. Compiled Java frames are
suffixed "_[j]", inlined ones "_[i]", kernel ones "_[k]". With --threads each stack starts with its
thread's name.

With --core, profile prints the stacks of every thread of a core file made with gcore instead
(one sample per thread).

If the JVM exits while it is being profiled, the profile taken so far is written.

As measured (make test, 2026-11-28, no -XX:+PreserveFramePointer; Jetty 9.4, Tomcat 10.1 and H2 2.1 under
load, 10 s at 499 Hz): JDK 11, 17, 21 and 25 (Debian's and Temurin) walk 99.9-100% of samples to the
thread's root, at most 0.1% of samples carry a frame that names nothing, and at most 0.04% sit in a
system call under a Java native method that does not make it. Except on JDK 11 with blocking sockets
(H2's server, not Jetty's or Tomcat's): its socketRead0 and socketWrite0 keep a 64 KiB buffer on the
stack, beyond the stack copy a sample can carry (--stack-bytes at most 65528), so the Java callers of
a sample in them are read from the live stack, and only while it is provably the sample's; the others
end in "truncated" (97.6% of H2's samples to the root on Debian's JDK 11.0.24, 2026-11-30). The 15 methods most
often on top of the Java stack agree with JFR's own samples of the same window: 13-15 of 15 against
JDK 25's jdk.CPUTimeSample over 20 s, 12-15 of 15 against jdk.ExecutionSample on JDK 11-21 with
DebugNonSafepoints on (without it, jdk.ExecutionSample names a compiled frame by its compiled method
alone; it drops the samples it cannot walk, so small methods count less there). Debian's JDK 11 has no USDT probes, which profile does
not need. x86-64 only.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if pf.core != "" {
				return cobra.NoArgs(cmd, args)
			}
			return cobra.ExactArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			switch pf.format {
			case "folded", "pprof", "svg", "json":
			default:
				return usagef("unknown format %q (folded, pprof, svg or json)", pf.format)
			}
			if pf.freq <= 0 || pf.freq > 10000 {
				return usagef("-F %d: the rate must be between 1 and 10000 Hz", pf.freq)
			}
			if pf.stack < 1024 || pf.stack > 65528 {
				return usagef("--stack-bytes %d: must be between 1024 and 65528", pf.stack)
			}
			if pf.dur < 0 {
				return usagef("--duration %v is negative", pf.dur)
			}
			// Before the sampling, not after it: a profile of minutes is not lost to a wrong -o.
			if err := checkOutput(pf.out); err != nil {
				return err
			}
			if pf.core != "" {
				return a.profileCore(cmd.Context(), &pf)
			}
			pid, err := strconv.Atoi(args[0])
			if err != nil || pid <= 0 {
				return usagef("%q is not a pid", args[0])
			}
			return a.profileLive(cmd.Context(), pid, &pf)
		},
	}
	f := cmd.Flags()
	f.IntVarP(&pf.freq, "freq", "F", 99, "samples per second per thread")
	f.IntVar(&pf.stack, "stack-bytes", 32<<10, "bytes of each thread's stack copied with a sample (at most 65528); stacks deeper than that end in [truncated] when they changed before they were walked")
	f.DurationVarP(&pf.dur, "duration", "d", 10*time.Second, "how long to sample (0: until Ctrl-C, SIGTERM or the JVM exits)")
	f.StringVarP(&pf.out, "output", "o", "", "write the profile to this file (default: stdout)")
	f.StringVar(&pf.format, "format", "folded", "folded, pprof, svg or json")
	f.BoolVar(&pf.threads, "threads", false, "start each stack with its thread's name")
	f.StringVar(&pf.core, "core", "", "walk the threads of this core file (gcore) instead of sampling a pid")
	return cmd
}

// profileAgg sums stacks by their folded frames.
type profileAgg struct {
	counts  map[string]int64
	reasons map[string]int
	samples int
	broken  int
	// freq, start and end describe a live profile's sampling (none for a core file's stacks).
	freq       int
	start, end time.Time
}

func newProfileAgg() *profileAgg {
	return &profileAgg{counts: map[string]int64{}, reasons: map[string]int{}}
}

func (p *profileAgg) add(st *unwind.Stack, thread string) {
	p.samples++
	if !st.Complete {
		p.broken++
		p.reasons[st.Reason.String()]++
	}
	names := make([]string, 0, len(st.Frames)+1)
	if thread != "" {
		names = append(names, strings.ReplaceAll(thread, ";", ":"))
	}
	for i := len(st.Frames) - 1; i >= 0; i-- {
		names = append(names, st.Frames[i].Label())
	}
	p.counts[strings.Join(names, ";")]++
}

func (p *profileAgg) folded() *flame.Folded {
	keys := make([]string, 0, len(p.counts))
	for k := range p.counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	f := &flame.Folded{Event: "cpu-clock"}
	for _, k := range keys {
		f.Stacks = append(f.Stacks, flame.Stack{Frames: strings.Split(k, ";"), Count: p.counts[k]})
	}
	return f
}

type profileJSON struct {
	Samples int              `json:"samples"`
	Broken  int              `json:"broken"`
	Reasons map[string]int   `json:"reasons"`
	Stacks  []profileJSONRow `json:"stacks"`
}

type profileJSONRow struct {
	Frames []string `json:"frames"` // root first
	Count  int64    `json:"count"`
}

func (a *jvmkit) writeProfile(p *profileAgg, pf *profileFlags, title string) error {
	return writeOutput(a.stdout, pf.out, func(w io.Writer) error {
		folded := p.folded()
		switch pf.format {
		case "folded":
			return flame.WriteFolded(w, folded)
		case "pprof":
			opts := flame.PprofOptions{SampleType: "samples", Unit: "count"}
			if p.freq > 0 {
				opts.CPUPeriod, opts.Start, opts.End = time.Second/time.Duration(p.freq), p.start, p.end
			}
			return flame.WritePprof(w, folded, opts)
		case "svg":
			return flame.WriteSVG(w, folded, flame.SVGOptions{Title: title})
		case "json":
			out := profileJSON{Samples: p.samples, Broken: p.broken, Reasons: p.reasons, Stacks: []profileJSONRow{}}
			for _, s := range folded.Stacks {
				out.Stacks = append(out.Stacks, profileJSONRow{Frames: s.Frames, Count: s.Count})
			}
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(map[string]any{"schema": "jvmkit.profile/v1", "data": out})
		}
		return fmt.Errorf("unknown format %q", pf.format)
	})
}

// summary prints the sample counts and the reasons of broken stacks on stderr.
func (a *jvmkit) summary(p *profileAgg) {
	fmt.Fprintf(a.stderr, "jvmkit: %d samples, %d stacks", p.samples, len(p.counts))
	if p.samples > 0 {
		fmt.Fprintf(a.stderr, ", %.2f%% walked to the thread root", 100*float64(p.samples-p.broken)/float64(p.samples))
	}
	if len(p.reasons) > 0 {
		var rs []string
		for r, n := range p.reasons {
			rs = append(rs, fmt.Sprintf("%s %d", r, n))
		}
		sort.Strings(rs)
		fmt.Fprintf(a.stderr, "; ended early: %s", strings.Join(rs, ", "))
	}
	fmt.Fprintln(a.stderr)
}

func (a *jvmkit) profileLive(ctx context.Context, pid int, pf *profileFlags) error {
	j, err := vmstructs.Open(ctx, pid)
	if err != nil {
		return err
	}
	defer j.Close()
	a.noteHeld("profile", pid)
	w, err := unwind.New(j, unwind.Options{Native: unwind.NewProcessSymbols(pid), Kernel: &unwind.KernelSymbols{}})
	if err != nil {
		return err
	}
	names := map[int]string{}
	refreshNames := func() {
		threads, _ := j.Threads()
		for _, t := range threads {
			tid := t.HostTID
			if tid == 0 {
				tid = t.TID
			}
			names[tid] = t.Name
		}
	}
	if pf.threads {
		refreshNames()
	}
	p := newProfileAgg()
	tty := isTerminal(a.stderr)
	start := time.Now()
	p.freq, p.start = pf.freq, start
	held := watchHeld(pid)
	lastProgress := start
	sctx, cancel := ctx, context.CancelFunc(func() {}) // -d 0: until ctx ends (Ctrl-C, SIGTERM)
	if pf.dur > 0 {
		sctx, cancel = context.WithTimeout(ctx, pf.dur)
	}
	defer cancel()
	of := fmt.Sprintf("of %v", pf.dur)
	if pf.dur == 0 {
		of = "(Ctrl-C ends)"
	}
	err = w.Profile(sctx, unwind.SamplerOptions{Frequency: pf.freq, StackBytes: pf.stack}, func(s *unwind.Sample, st *unwind.Stack) {
		thread := ""
		if pf.threads {
			name, ok := names[s.TID]
			if !ok {
				refreshNames()
				if name, ok = names[s.TID]; !ok {
					name = threadComm(pid, s.TID)
					names[s.TID] = name
				}
			}
			thread = name
		}
		p.add(st, thread)
		if tty && time.Since(lastProgress) > 250*time.Millisecond {
			lastProgress = time.Now()
			fmt.Fprintf(a.stderr, "\rjvmkit: sampling %d: %.1fs %s, %d samples ", pid, time.Since(start).Seconds(), of, p.samples)
		}
	})
	p.end = time.Now()
	heldNote := held.end("profile", p.end.Sub(start))
	if tty {
		fmt.Fprint(a.stderr, "\r\033[K")
	}
	exited := errors.Is(err, unwind.ErrProcessExited)
	if err != nil && !exited {
		if ctx.Err() == nil {
			return err
		}
		// Interrupted: write what was sampled, then report the interruption.
	}
	// The profile first: a reader of standard error that went away (| head) must not cost it.
	v, _ := j.Version()
	werr := a.writeProfile(p, pf, fmt.Sprintf("jvmkit profile of %d (%s)", pid, v))
	if exited {
		fmt.Fprintf(a.stderr, "jvmkit: the JVM (pid %d) exited after %.1fs; the profile is of what was sampled\n", pid, p.end.Sub(start).Seconds())
	}
	fmt.Fprint(a.stderr, heldNote)
	a.summary(p)
	if exact, known := j.InliningAtEveryPC(); known && !exact {
		fmt.Fprintln(a.stderr, "jvmkit: the JVM runs without -XX:+DebugNonSafepoints: a compiled frame's inlined methods are "+
			"those of its next call or safepoint (as AsyncGetCallTrace names them), so a sample in a small inlined method "+
			"may show its caller as the leaf; -XX:+UnlockDiagnosticVMOptions -XX:+DebugNonSafepoints makes them exact")
	}
	if werr != nil {
		return werr
	}
	if pf.dur == 0 {
		return nil // without --duration, Ctrl-C or SIGTERM is how sampling ends
	}
	return ctx.Err()
}

func (a *jvmkit) profileCore(ctx context.Context, pf *profileFlags) error {
	if err := checkCoreMachine(pf.core); err != nil {
		return err
	}
	j, err := vmstructs.OpenCore(ctx, pf.core, vmstructs.CoreOptions{Root: a.coreRoot})
	if err != nil {
		return err
	}
	defer j.Close()
	// A core is a stopped state, as jhsdb sees one: the top compiled frames named by jhsdb's rule.
	w, err := unwind.New(j, unwind.Options{Native: unwind.NewFileSymbols(unwind.CoreMappings(j.Core().Files()), a.coreRoot), NearTop: true})
	if err != nil {
		return err
	}
	threads, _ := j.Threads()
	byTID := map[int]vmstructs.Thread{}
	jts := map[int]uint64{}
	for _, t := range threads {
		byTID[t.TID] = t
		jts[t.TID] = t.JavaThread
	}
	w.SetThreads(jts)
	p := newProfileAgg()
	for _, ct := range j.CoreThreads() {
		regs, ok := unwind.RegsFromGPR(ct.Regs.GPR)
		if !ok {
			continue
		}
		st := w.Walk(&unwind.Sample{TID: ct.TID, JavaThread: jts[ct.TID], Regs: regs, Stopped: true})
		name := ""
		if pf.threads {
			name = byTID[ct.TID].Name
			if name == "" {
				name = "tid-" + strconv.Itoa(ct.TID)
			}
		}
		p.add(&st, name)
	}
	a.summary(p)
	return a.writeProfile(p, pf, "jvmkit stacks of "+pf.core)
}

func threadComm(pid, tid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/comm", pid, tid))
	if err != nil {
		return "tid-" + strconv.Itoa(tid)
	}
	return strings.TrimSpace(string(b))
}

// isTerminal reports whether w is a terminal (progress is shown only there).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0 && fi.Mode()&os.ModeDevice != 0
}

// checkCoreMachine refuses a core file of another architecture than the stack walker's (x86-64): its
// registers would be read as x86-64's, and every stack would be wrong.
func checkCoreMachine(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		var fe *elf.FormatError
		if errors.As(err, &fe) {
			return fmt.Errorf("%s: not an ELF core file: %w", path, err)
		}
		if _, serr := os.Stat(path); serr != nil {
			return serr
		}
		return err
	}
	defer f.Close()
	if f.Machine != elf.EM_X86_64 {
		return cliutil.ArchErrorf("%s is a core of a %s process: the Java stack walker knows x86-64 frames only. Instead: jvmkit threads %s lists its Java threads; jhsdb jstack --core on a machine of its architecture walks its stacks",
			path, f.Machine, path)
	}
	return nil
}
