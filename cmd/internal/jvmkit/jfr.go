package jvmkit

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/jvmkit/jvmkit/flame"
	"github.com/jvmkit/jvmkit/jfr"
)

// The jfr commands read flight recordings without a JDK. They are self-contained in the jvmkit_jfr*
// files: jfrCmd is the one hook into the jvmkit tree.

func (a *jvmkit) jfrCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "jfr",
		Short: "Read flight recordings without a JDK: summary, print, flame graphs, leak chains, Parquet",
		Long: `jfr reads JDK Flight Recorder files (JDK 11 to 25; what gjcmd PID JFR.dump writes) with no JDK:

  jvmkit jfr summary rec.jfr                      events by type, as jfr summary
  jvmkit jfr print rec.jfr --events ExecutionSample --json
  jvmkit jfr flame rec.jfr --event cpu -o cpu.svg  also alloc, lock, park, io, wall; .pb.gz, .folded
  jvmkit jfr leaks rec.jfr                        Old Object Samples by reference chain
  jvmkit jfr export rec.jfr --format parquet -o dir

A recording that is cut short or corrupt is read up to the damage; the error names its offset and
the exit status is 1.`,
	}
	// jvmkit jfr export is added by cmd/jvmkit (package cmd/internal/jfrexport, merged into this
	// command by Main), so that the Parquet library is linked into jvmkit alone.
	cmd.AddCommand(a.jfrSummaryCmd(), a.jfrPrintCmd(), a.jfrFlameCmd(), a.jfrLeaksCmd())
	return cmd
}

// OpenRecording opens a recording for a jfr command: with a damaged one it returns what was read and
// keeps the damage (which names the file) for the end of the command, after its output.
func OpenRecording(path string) (r *jfr.Recording, damage, err error) { return openRecording(path) }

// openRecording opens a recording; with a damaged one it returns what was read and keeps the damage
// for the end of the command (done reports it, after the output).
func openRecording(path string) (*jfr.Recording, error, error) {
	r, err := jfr.Open(path)
	if r == nil {
		if errors.Is(err, jfr.ErrNotJFR) {
			return nil, nil, fmt.Errorf("%s: not a flight recording (no FLR magic)", path)
		}
		return nil, nil, err
	}
	return r, err, nil
}

func (a *jvmkit) jfrSummaryCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "summary FILE",
		Short: "Count the events of a recording by type, as jfr summary",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, damage, err := openRecording(args[0])
			if err != nil {
				return err
			}
			defer r.Close()
			s := r.Summary()
			if a.json {
				if err := a.printJSON("jvmkit.jfr.summary/v1", summaryJSON(s)); err != nil {
					return err
				}
				return damage
			}
			if err := s.WriteText(a.stdout); err != nil {
				return err
			}
			return damage
		},
	}
}

type summaryTypeJSON struct {
	Name  string `json:"name"`
	ID    int64  `json:"id"`
	Count int64  `json:"count"`
	Bytes int64  `json:"bytes"`
}

func summaryJSON(s jfr.Summary) any {
	types := make([]summaryTypeJSON, 0, len(s.Types))
	for _, t := range s.Types {
		types = append(types, summaryTypeJSON{t.Name, t.ID, t.Count, t.Bytes})
	}
	return map[string]any{
		"version":       fmt.Sprintf("%d.%d", s.Major, s.Minor),
		"chunks":        s.Chunks,
		"start":         s.Start,
		"durationNanos": s.Duration.Nanoseconds(),
		"types":         types,
	}
}

func (a *jvmkit) jfrPrintCmd() *cobra.Command {
	var events, categories string
	var depth int
	cmd := &cobra.Command{
		Use:   "print FILE",
		Short: "Print every field of a recording's events, as text or JSON lines",
		Long: `print prints the events of a recording, each chunk's events ordered by their end time as jfr print
orders them.

--json writes one JSON object per line, {"type": ..., "values": {...}}: the object the JDK's
jfr print --json prints for the event, every field in the metadata's order with constants expanded,
timestamps as ISO-8601 date-times in the recording JVM's zone and timespans as ISO-8601 durations,
floats and doubles as Java writes them (20.0, 1.0E-7), as JDK 25's tool writes them. Without --json,
a readable block per event; N/A is null.

A recording cut short (or with a damaged checkpoint) is printed up to the damage, but the JVM writes
the constants that events refer to (stack traces, threads, classes) after the events, so some of
those before the cut refer to constants that are gone. Such a value is never shown as null: the text
shows [lost: constant pool cut off] (or [lost: constant pool damaged]); --json writes the object
{"lost":"constant pool cut off","type":"jdk.types.StackTrace","key":123} in its place and adds
"lost":N (the number of such references, nested ones included) after the event's "values". Standard
error says how many events are affected. A null (N/A, JSON null) is a null as jfr print shows it; a
lost value is one the part read cannot give (rarely, the whole recording has null there: the JVM does
not always write a constant it refers to).

--events and --categories select types as jfr print's do: comma-separated names or patterns with
* and ?, matching the full name (jdk.GarbageCollection) or the part after the last dot.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if depth < 0 {
				return usagef("--stack-depth %d: want 0 (all frames) or more", depth)
			}
			r, damage, err := openRecording(args[0])
			if err != nil {
				return err
			}
			defer r.Close()
			opts := jfr.JSONOptions{StackDepth: depth}
			var write func(*jfr.Event) error
			var flush func() error
			if a.json {
				w := r.NewJSONWriter(a.stdout, opts)
				write, flush = w.Write, w.Flush
			} else {
				w := r.NewTextWriter(a.stdout, opts)
				write, flush = w.Write, w.Flush
			}
			var lostEvents, lostRefs, n int
			for e, err := range r.Events(jfr.EventOptions{Types: jfr.Filter(events, categories), Ordered: true}) {
				if err != nil {
					damage = namedDamage(args[0], damage, err)
					break
				}
				n++
				if e.Lost > 0 {
					lostEvents++
					lostRefs += e.Lost
				}
				if err := write(e); err != nil {
					return err
				}
			}
			if err := flush(); err != nil {
				return err
			}
			if lostEvents > 0 {
				fmt.Fprintf(a.stderr, "jvmkit: %s: %d of %d events printed have %d references to constants the damage lost (shown as %s)\n",
					args[0], lostEvents, n, lostRefs, lostShown(a.json))
			}
			return damage
		},
	}
	f := cmd.Flags()
	f.StringVar(&events, "events", "", "event types to print: names or patterns, comma-separated")
	f.StringVar(&categories, "categories", "", "categories to print: names or patterns, comma-separated")
	f.IntVar(&depth, "stack-depth", 0, "frames per stack trace; 0 prints all")
	return cmd
}

func lostShown(json bool) string {
	if json {
		return `{"lost":"constant pool cut off",...} with "lost":N on the event's line`
	}
	return "[lost: constant pool cut off]"
}

func (a *jvmkit) jfrFlameCmd() *cobra.Command {
	var (
		kind, out, format string
		noThreads         bool
		svg               flame.SVGOptions
	)
	kinds := make([]string, len(jfr.FlameKinds))
	for i, k := range jfr.FlameKinds {
		kinds[i] = string(k)
	}
	cmd := &cobra.Command{
		Use:   "flame FILE [--event cpu|wall|alloc|lock|park|io] [-o OUT]",
		Short: "Draw a flame graph (SVG), a pprof profile or folded stacks of a recording's samples",
		Long: `flame folds a recording's stack traces into a flame graph, through the same writers as
jvmkit profile, with the same frame names (pkg.Class.method; _[j] JIT-compiled, _[i] inlined):

  cpu    jdk.CPUTimeSample (JDK 25+) when the recording has it, else jdk.ExecutionSample, counted
         (with both, CPUTimeSample is drawn: it samples by thread CPU time, native code included;
         standard error says so, and reports jdk.CPUTimeSamplesLost, failed and biased samples)
  wall   jdk.ExecutionSample and jdk.NativeMethodSample, counted
  alloc  jdk.ObjectAllocationSample by weight in bytes (JDK 11: the TLAB events by size); the
         allocated class is the leaf
  lock   jdk.JavaMonitorEnter by duration; the monitor's class is the leaf
  park   jdk.ThreadPark by duration; the parked-on object's class is the leaf
  io     jdk.FileRead/FileWrite/SocketRead/SocketWrite by duration

The first frame is the thread (--no-threads leaves it out). A stack the JVM cut at its depth starts
with [truncated]; an event without a stack is [no stack trace]; a CPU time sample whose stack the JVM
failed to walk is [stack walk failed]. In a recording cut short, a stack whose constants are past the
cut is [stack lost: recording cut off] (a thread, method or class: [thread lost: ...] and so on), and
standard error counts those events. The format comes from --format, else
from the output's name (.svg; .pb.gz, .pb or .pprof; .folded, .collapsed or .txt), else svg.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !slices.Contains(kinds, kind) {
				return usagef("--event %q: want one of %s", kind, strings.Join(kinds, ", "))
			}
			if format == "" {
				format = formatFor(out)
			}
			if !slices.Contains([]string{"svg", "pprof", "folded"}, format) {
				return usagef("--format %q: want svg, pprof or folded", format)
			}
			r, damage, err := openRecording(args[0])
			if err != nil {
				return err
			}
			defer r.Close()
			f, st, err := jfr.Flame(r, jfr.FlameOptions{Kind: jfr.FlameKind(kind), NoThreads: noThreads})
			if err != nil {
				damage = namedDamage(args[0], damage, err)
			}
			if len(f.Stacks) == 0 {
				if damage != nil {
					return errors.Join(fmt.Errorf("%s: no %s events with a weight to draw before the damage", args[0], kind), damage)
				}
				return fmt.Errorf("%s: no %s events with a weight to draw (the recording has none: %s)", args[0], kind, enableHint(r, kind))
			}
			var names []string
			for n, c := range st.Events {
				names = append(names, fmt.Sprintf("%d %s", c, n))
			}
			slices.Sort(names)
			sub := strings.Join(names, ", ")
			if st.Truncated > 0 {
				sub += fmt.Sprintf("; %d stacks truncated by the JVM", st.Truncated)
			}
			if st.Failed > 0 {
				sub += fmt.Sprintf("; %d stack walks failed", st.Failed)
			}
			if st.LostSamples > 0 {
				sub += fmt.Sprintf("; %d samples lost by the JVM (jdk.CPUTimeSamplesLost)", st.LostSamples)
			}
			fmt.Fprintf(a.stderr, "jvmkit: %s: %s\n", args[0], sub)
			for n, c := range st.Unused {
				fmt.Fprintf(a.stderr, "jvmkit: %s: %d %s events not drawn: --event cpu draws jdk.CPUTimeSample when the recording has it\n", args[0], c, n)
			}
			if st.Biased > 0 {
				fmt.Fprintf(a.stderr, "jvmkit: %s: %d of %d CPU time samples are safepoint-biased (the JVM took their stack at the next safepoint)\n", args[0], st.Biased, st.Events["jdk.CPUTimeSample"])
			}
			if st.Lost > 0 {
				fmt.Fprintf(a.stderr, "jvmkit: %s: %d of the events drawn refer to constants the damage lost: a lost stack is drawn as [stack lost: ...], a thread, method or class likewise\n", args[0], st.Lost)
			}
			if svg.Subtitle == "" {
				svg.Subtitle = sub
			}
			if svg.Title == "" {
				svg.Title = "JFR " + kind
			}
			err = writeOutput(a.stdout, out, func(w io.Writer) error {
				switch format {
				case "pprof":
					return flame.WritePprof(w, f, flame.PprofOptions{SampleType: st.SampleType, Unit: st.Unit})
				case "folded":
					return flame.WriteFolded(w, f)
				}
				return flame.WriteSVG(w, f, svg)
			})
			if err != nil {
				return err
			}
			return damage
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&kind, "event", "cpu", "what to draw: "+strings.Join(kinds, ", "))
	fl.StringVarP(&out, "output", "o", "-", "output file; - is standard output")
	fl.StringVar(&format, "format", "", "svg, pprof or folded (default: from the output's name, else svg)")
	fl.BoolVar(&noThreads, "no-threads", false, "leave out the thread as first frame")
	fl.StringVar(&svg.Title, "title", "", `title (default "JFR <event>")`)
	fl.StringVar(&svg.Subtitle, "subtitle", "", "subtitle (default: the events drawn)")
	fl.IntVar(&svg.Width, "width", 1200, "image width in pixels")
	fl.BoolVar(&svg.Reverse, "reverse", false, "icicle graph: root at the top")
	return cmd
}

// enableHint says how to record the events of a flame graph kind; for cpu, on the recording's JDK.
func enableHint(r *jfr.Recording, kind string) string {
	if kind != string(jfr.FlameCPU) {
		return "record with settings=profile, or enable them"
	}
	if r.HasType("jdk.CPUTimeSample") {
		// JDK 25+: CPU time sampling is off in both of the JDK's configurations.
		return "record with settings=profile,jdk.CPUTimeSample#enabled=true (JDK 25+ on Linux; in a .jfc of your own, " +
			`<event name="jdk.CPUTimeSample"><setting name="enabled">true</setting></event>), or with jdk.ExecutionSample (settings=profile)`
	}
	return "record with settings=profile, or jdk.ExecutionSample#enabled=true"
}

func (a *jvmkit) jfrLeaksCmd() *cobra.Command {
	var top int
	cmd := &cobra.Command{
		Use:   "leaks FILE",
		Short: "Group a recording's Old Object Samples by reference chain to a GC root, most suspicious first",
		Long: `leaks explains the jdk.OldObjectSample events of a recording: objects the JVM sampled at allocation
that were still alive at the dump, each with the chain of references that keeps it alive, from a GC
root to the object. Samples with the same chain (array indices aside) are one group; groups that reach
a root come first, then those with more samples, more bytes and older objects.

Chains need a dump made with path-to-gc-roots=true and the Old Object Sample event on (settings=profile
has it):

  gjcmd PID JFR.start name=leak settings=profile
  gjcmd --copy-to . PID JFR.dump name=leak filename=leak.jfr path-to-gc-roots=true
  jvmkit jfr leaks leak.jfr

--json prints every group with every sample and its full chain.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, damage, err := openRecording(args[0])
			if err != nil {
				return err
			}
			defer r.Close()
			groups, n, err := jfr.Leaks(r)
			if err != nil {
				damage = namedDamage(args[0], damage, err)
			}
			if a.json {
				if groups == nil {
					groups = []*jfr.LeakGroup{}
				}
				if err := a.printJSON("jvmkit.jfr.leaks/v1", map[string]any{"samples": n, "groups": groups}); err != nil {
					return err
				}
				return damage
			}
			writeLeaks(a.stdout, groups, n, top)
			if n == 0 {
				fmt.Fprintf(a.stderr, "jvmkit: %s: no jdk.OldObjectSample events: start the recording with settings=profile (or jdk.OldObjectSample#enabled=true) and dump it with path-to-gc-roots=true\n", args[0])
			} else if rootless(groups) == n {
				fmt.Fprintf(a.stderr, "jvmkit: %s: no sample has a path to a GC root: dump with path-to-gc-roots=true\n", args[0])
			}
			return damage
		},
	}
	cmd.Flags().IntVar(&top, "top", 10, "groups to show (0: all)")
	return cmd
}

// namedDamage is the error a command ends with when reading stopped at err: the damage Open found
// (which names the file) if err is it, else err with the file's name.
func namedDamage(path string, opened, err error) error {
	if opened != nil && errors.Is(opened, err) {
		return opened
	}
	return fmt.Errorf("%s: %w", path, err)
}

func rootless(groups []*jfr.LeakGroup) int {
	n := 0
	for _, g := range groups {
		if g.Root == nil {
			n += g.Count
		}
	}
	return n
}

func writeLeaks(w io.Writer, groups []*jfr.LeakGroup, n, top int) {
	fmt.Fprintf(w, "%d old object samples in %d reference chains\n", n, len(groups))
	for i, g := range groups {
		if top > 0 && i == top {
			fmt.Fprintf(w, "\n... %d more chains (--top 0 shows all)\n", len(groups)-top)
			break
		}
		fmt.Fprintf(w, "\n#%d  %d %s of %s", i+1, g.Count, plural(g.Count, "sample", "samples"), orNA(g.Class))
		if g.TotalSize > 0 {
			fmt.Fprintf(w, ", %s", formatBytes(uint64(g.TotalSize)))
		}
		fmt.Fprintf(w, ", age %s", ageText(g.MinAge, g.MaxAge))
		if g.HeapUsage > 0 {
			fmt.Fprintf(w, ", heap in use %s", formatBytes(uint64(g.HeapUsage)))
		}
		fmt.Fprintln(w)
		if g.Root == nil {
			fmt.Fprintln(w, "    root: none found (no path searched, or none within the cutoff)")
		} else {
			fmt.Fprintf(w, "    root: %s", g.Root.System)
			if g.Root.Type != "" {
				fmt.Fprintf(w, ", %s", g.Root.Type)
			}
			if g.Root.Description != "" {
				fmt.Fprintf(w, " (%s)", g.Root.Description)
			}
			fmt.Fprintln(w)
		}
		// Root first: the last link is the object the root holds.
		for j := len(g.Chain) - 1; j >= 0; j-- {
			l := g.Chain[j]
			prefix := "    "
			if j < len(g.Chain)-1 {
				holder := g.Chain[j]
				switch {
				case holder.Field != "" && holder.Static:
					prefix = "      ." + holder.Field + " (static) -> "
				case holder.Field != "":
					prefix = "      ." + holder.Field + " -> "
				case holder.Index >= 0:
					prefix = fmt.Sprintf("      [%d] -> ", holder.Index)
				default:
					prefix = "      -> "
				}
			}
			text := l.Class
			if l.Description != "" {
				text += " (" + l.Description + ")"
			}
			if j == 0 {
				text += "   <- sampled"
			}
			fmt.Fprintln(w, prefix+text)
			if l.Skipped > 0 && j > 0 {
				fmt.Fprintf(w, "      ... %d references left out by the JVM ...\n", l.Skipped)
			}
		}
		if len(g.Stack) > 0 {
			fmt.Fprintf(w, "    allocated at (%d of %d samples):\n", g.StackCount, g.Count)
			for k, f := range g.Stack {
				if k == 8 {
					fmt.Fprintf(w, "      ... %d more frames\n", len(g.Stack)-k)
					break
				}
				fmt.Fprintf(w, "      %s line %d\n", f.Method, f.Line)
			}
		}
	}
}

func orNA(s string) string {
	if s == "" {
		return "N/A"
	}
	return s
}

func ageText(lo, hi time.Duration) string {
	r := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
	if lo == hi {
		return r(hi)
	}
	return r(lo) + " to " + r(hi)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
