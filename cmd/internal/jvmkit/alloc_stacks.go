package jvmkit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/jvmkit/jvmkit/flame"
	"github.com/jvmkit/jvmkit/unwind"
	"github.com/jvmkit/jvmkit/usdt/hotspot"
)

// allocStackFlags are alloc's flags for allocation stacks.
type allocStackFlags struct {
	stacks   bool
	out      string
	format   string
	bytes    bool
	sample   int
	vmFrames bool
}

// defaultFullSample is --sample's default when every allocation fires: at about a million firings a second
// per allocating thread, one stack in 64 keeps the reader (a walk per record) ahead of the ring buffer.
const defaultFullSample = 64

func (sf *allocStackFlags) register(f *pflag.FlagSet) {
	f.BoolVar(&sf.stacks, "stacks", false, "record a stack with each firing and write a flame graph of allocations")
	f.StringVarP(&sf.out, "output", "o", "", "with --stacks: write to this file (default: stdout)")
	f.StringVar(&sf.format, "format", "folded", "with --stacks: folded, svg or pprof")
	f.BoolVar(&sf.bytes, "bytes", false, "with --stacks: weigh stacks by bytes allocated instead of allocations")
	f.IntVar(&sf.sample, "sample", 0, "record one firing in N, at random (default: 64 with every allocation firing, 1 with --switch-flags)")
	f.BoolVar(&sf.vmFrames, "vm-frames", false, "with --stacks: keep libjvm's frames between the allocating Java frame and the class")
}

func (sf *allocStackFlags) check(cmd *cobra.Command, other bool) error {
	if !sf.stacks {
		for _, name := range []string{"output", "format", "bytes", "sample", "vm-frames"} {
			if cmd.Flags().Changed(name) {
				return usagef("--%s needs --stacks", name)
			}
		}
		return nil
	}
	if other {
		return usagef("--stacks excludes --json and --folded (use --format)")
	}
	switch sf.format {
	case "folded", "svg", "pprof":
	default:
		return usagef("unknown format %q (folded, svg or pprof)", sf.format)
	}
	if sf.sample < 0 {
		return usagef("--sample %d is negative", sf.sample)
	}
	return checkOutput(sf.out) // before the trace, not after it
}

func (a *jvmkit) runAllocStacks(ctx context.Context, pid int, duration time.Duration, switchFlags bool, sf *allocStackFlags) (err error) {
	t, err := a.openAllocTarget(ctx, pid, switchFlags, "", "")
	if err != nil {
		return err
	}
	j, version, on := t.j, t.version, t.on
	defer t.close()
	sample := sf.sample
	if sample == 0 {
		sample = 1
		if on {
			sample = defaultFullSample
		}
	}
	ctx, sw, err := a.prepareAllocSwitch(ctx, pid, on)
	if err != nil {
		return err
	}
	defer sw.closeInto(&err)
	w, err := unwind.New(j, unwind.Options{Native: unwind.NewProcessSymbols(pid)})
	if err != nil {
		return err
	}
	tr, err := hotspot.TraceAlloc(ctx, pid, t.mods, hotspot.AllocOptions{Stacks: w, Sample: sample, Weights: true, Sampled: !on})
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

	fmt.Fprintf(a.stderr, "jvmkit: alloc: recording allocation stacks in process %d (%d object__alloc sites, one firing in %d)\n", pid, len(tr.Sites()), sample)
	start := time.Now()
	held := watchHeld(pid)
	gone := waitAlloc(ctx, duration, t.exit.Exited())
	elapsed := time.Since(start) // the window: detaching and reading the stacks come after it
	a.endHeld(held, "alloc", elapsed)
	if err := tr.Freeze(monotonicNow()); err != nil {
		fmt.Fprintf(a.stderr, "jvmkit: alloc: %v: the stacks include what fired while the flag was switched off\n", err)
	}
	if sw != nil {
		if rerr := sw.off(gone); rerr != nil {
			return rerr
		}
	}
	defer func() {
		if gone {
			err = errors.Join(err, t.exitedError(elapsed))
		}
	}()
	if err := tr.Stop(); err != nil {
		return err
	}
	prof, err := tr.Profile()
	if err != nil {
		return err
	}
	a.allocStackSummary(prof, elapsed)
	if !on {
		a.noteUnweighed(tr, prof)
	}
	if n := prof.Count; n == 0 && sample > 1 {
		fmt.Fprintf(a.stderr, "jvmkit: alloc: no firing was recorded (--sample %d records one in %d, at random; perhaps none fired)\n", sample, sample)
	}
	// A recorded firing stands for sample firings (one in sample, chosen at random after every firing
	// was weighed), its size or weight for as many.
	scale := int64(sample)
	what := "allocations"
	if !on && prof.Sizes == hotspot.SizesWeights {
		what = "samples" // new TLABs and allocations outside one
	}
	folded := allocFolded(prof, sf.bytes, sf.vmFrames, scale)
	title := fmt.Sprintf("jvmkit alloc of %d (%s)", pid, version)
	return a.writeFlame(folded, sf, title, what)
}

// noteUnweighed says, for a sample, that its firings could not be weighed (the JVM's allocated-bytes
// counter was not found): every firing is then counted, and bytes are the objects' own sizes, not
// estimates of what was allocated.
func (a *jvmkit) noteUnweighed(tr *hotspot.AllocTrace, p *hotspot.AllocProfile) {
	if p.Sizes == hotspot.SizesWeights {
		return
	}
	why := "the JVM's allocated-bytes counter was not found"
	if err := tr.WeightErr(); err != nil {
		why += " (" + err.Error() + ")"
	}
	fmt.Fprintf(a.stderr, "jvmkit: alloc: the samples could not be weighed: %s; every firing is counted, and bytes are "+
		"the objects' own sizes, not estimates of what was allocated\n", why)
}

// allocStackSummary prints how many stacks were recorded and walked to their thread's root.
func (a *jvmkit) allocStackSummary(p *hotspot.AllocProfile, elapsed time.Duration) {
	var n, complete, java uint64
	reasons := map[string]uint64{}
	for i := range p.Stacks {
		s := &p.Stacks[i]
		n += s.Count
		if s.Complete {
			complete += s.Count
		} else {
			reasons[s.Reason.String()] += s.Count
		}
		if s.FirstJava() != nil {
			java += s.Count
		}
	}
	fmt.Fprintf(a.stderr, "jvmkit: alloc: %d stacks in %.1fs", n, elapsed.Seconds())
	if n > 0 {
		fmt.Fprintf(a.stderr, ", %.2f%% with Java frames, %.2f%% walked to the thread root",
			100*float64(java)/float64(n), 100*float64(complete)/float64(n))
	}
	if len(reasons) > 0 {
		var rs []string
		for r, c := range reasons {
			rs = append(rs, fmt.Sprintf("%s %d", r, c))
		}
		sort.Strings(rs)
		fmt.Fprintf(a.stderr, "; ended early: %s", strings.Join(rs, ", "))
	}
	fmt.Fprintln(a.stderr)
	if p.Lost > 0 {
		fmt.Fprintf(a.stderr, "jvmkit: alloc: %d firings lost (full ring buffer: the stacks were walked slower than they came), "+
			"%.1f%% of those recorded: the stacks miss them; raise --sample\n", p.Lost, 100*float64(p.Lost)/float64(max(n, 1)))
	}
}

// allocFolded folds allocation stacks: thread name, frames root first, the class as the leaf. Unless
// vmFrames, the frames above the first Java frame (libjvm's allocation path) are left out. Counts or
// bytes are multiplied by scale (what a recorded firing stands for).
func allocFolded(p *hotspot.AllocProfile, byBytes, vmFrames bool, scale int64) *flame.Folded {
	sums := map[string]int64{}
	for i := range p.Stacks {
		s := &p.Stacks[i]
		frames := s.Frames
		if !vmFrames {
			for k := range frames {
				if frames[k].Java() {
					frames = frames[k:]
					break
				}
			}
		}
		names := make([]string, 0, len(frames)+2)
		names = append(names, strings.ReplaceAll(s.Thread, ";", ":"))
		for k := len(frames) - 1; k >= 0; k-- {
			names = append(names, frames[k].Label())
		}
		names = append(names, strings.ReplaceAll(s.Class, ";", ":"))
		v := int64(s.Count)
		if byBytes {
			v = int64(s.Bytes)
		}
		v *= scale
		if v > 0 {
			sums[strings.Join(names, ";")] += v
		}
	}
	keys := make([]string, 0, len(sums))
	for k := range sums {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	f := &flame.Folded{Event: "object__alloc"}
	for _, k := range keys {
		f.Stacks = append(f.Stacks, flame.Stack{Frames: strings.Split(k, ";"), Count: sums[k]})
	}
	return f
}

// writeFlame writes the stacks; what names their counts ("allocations", or "samples" in a weighed sample).
func (a *jvmkit) writeFlame(f *flame.Folded, sf *allocStackFlags, title, what string) error {
	unit, typ, svgUnit := "count", what, what
	if sf.bytes {
		unit, typ, svgUnit = "bytes", "alloc_space", "bytes"
	}
	return writeOutput(a.stdout, sf.out, func(w io.Writer) error {
		switch sf.format {
		case "svg":
			return flame.WriteSVG(w, f, flame.SVGOptions{Title: title, Subtitle: typ, Unit: svgUnit})
		case "pprof":
			return flame.WritePprof(w, f, flame.PprofOptions{SampleType: typ, Unit: unit})
		}
		return flame.WriteFolded(w, f)
	})
}
