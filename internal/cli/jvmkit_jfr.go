package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
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
	cmd.AddCommand(a.jfrSummaryCmd(), a.jfrPrintCmd(), a.jfrFlameCmd(), a.jfrLeaksCmd(), a.jfrExportCmd())
	return cmd
}

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
			writeSummary(a.stdout, r, s)
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

// writeSummary prints the summary as the JDK's jfr summary does, byte for byte.
func writeSummary(w io.Writer, r *jfr.Recording, s jfr.Summary) {
	fmt.Fprintln(w)
	fmt.Fprintf(w, " Version: %d.%d\n", s.Major, s.Minor)
	fmt.Fprintf(w, " Chunks: %d\n", s.Chunks)
	fmt.Fprintf(w, " Start: %s (UTC)\n", s.Start.UTC().Format("2006-01-02 15:04:05"))
	fmt.Fprintf(w, " Duration: %d s\n", (s.Duration.Nanoseconds()+500_000_000)/1_000_000_000)
	fmt.Fprintln(w)
	const header = "      Count  Size (bytes) "
	const typeHeader = " Event Type"
	width := len(typeHeader)
	for _, c := range r.Chunks {
		if c.Metadata != nil {
			for _, t := range c.Metadata.Events {
				width = max(width, len(t.Name))
			}
		}
	}
	fmt.Fprintf(w, "%s%s%s\n", typeHeader, strings.Repeat(" ", width-len(typeHeader)), header)
	fmt.Fprintln(w, strings.Repeat("=", width+len(header)))
	for _, t := range s.Types {
		fmt.Fprintf(w, " %-*s%10d  %12d\n", width, t.Name, t.Count, t.Bytes)
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
as JDK 25's tool writes them. Without --json, a readable block per event.

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
			for e, err := range r.Events(jfr.EventOptions{Types: jfr.Filter(events, categories), Ordered: true}) {
				if err != nil {
					damage = err
					break
				}
				if err := write(e); err != nil {
					return err
				}
			}
			if err := flush(); err != nil {
				return err
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

  cpu    jdk.ExecutionSample, counted
  wall   jdk.ExecutionSample and jdk.NativeMethodSample, counted
  alloc  jdk.ObjectAllocationSample by weight in bytes (JDK 11: the TLAB events by size); the
         allocated class is the leaf
  lock   jdk.JavaMonitorEnter by duration; the monitor's class is the leaf
  park   jdk.ThreadPark by duration; the parked-on object's class is the leaf
  io     jdk.FileRead/FileWrite/SocketRead/SocketWrite by duration

The first frame is the thread (--no-threads leaves it out). A stack the JVM cut at its depth starts
with [truncated]; an event without a stack is [no stack trace]. The format comes from --format, else
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
			if err != nil && f == nil {
				return err
			}
			if len(f.Stacks) == 0 {
				return errors.Join(fmt.Errorf("%s: no %s events with a weight to draw (the recording has none: record with settings=profile, or enable them)", args[0], kind), damage)
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
			fmt.Fprintf(a.stderr, "jvmkit: %s: %s\n", args[0], sub)
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
				damage = err
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
			fmt.Fprintf(w, ", %s", bytesText(g.TotalSize))
		}
		fmt.Fprintf(w, ", age %s", ageText(g.MinAge, g.MaxAge))
		if g.HeapUsage > 0 {
			fmt.Fprintf(w, ", heap in use %s", bytesText(g.HeapUsage))
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

func bytesText(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

func ageText(lo, hi time.Duration) string {
	r := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
	if lo == hi {
		return r(hi)
	}
	return r(lo) + " to " + r(hi)
}

// jfrExporters are the formats of jvmkit jfr export. cmd/jvmkit registers parquet (package
// jfr/parquet) so that its library is linked into jvmkit alone, not into gjcmd and gjmaps, which share
// this package until issue 13 gives each binary its own.
var jfrExporters = map[string]JfrExporter{}

// JfrExporter writes a recording in a format to a directory and returns the files it wrote.
type JfrExporter func(r *jfr.Recording, dir string) ([]string, error)

// RegisterJfrExporter makes a format available to jvmkit jfr export.
func RegisterJfrExporter(format string, e JfrExporter) { jfrExporters[format] = e }

func (a *jvmkit) jfrExportCmd() *cobra.Command {
	var format, dir string
	cmd := &cobra.Command{
		Use:   "export FILE --format parquet -o DIR",
		Short: "Write a recording as tables, one file per event type (Parquet, for DuckDB)",
		Long: `export writes one table per event type of the recording into DIR (created if missing):
DIR/jdk.ExecutionSample.parquet and so on, with a typed column per field (times as timestamps,
timespans in nanoseconds, unsigned numbers unsigned), constants as structs with their fields (a class
or method as its Java name) and stack traces as lists of frames. For example, with DuckDB:

  SELECT count(*), sampledThread.javaName FROM 'dir/jdk.ExecutionSample.parquet' GROUP BY 2;`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			e := jfrExporters[format]
			if e == nil {
				var have []string
				for f := range jfrExporters {
					have = append(have, f)
				}
				slices.Sort(have)
				return usagef("--format %q: this build writes %s", format, strings.Join(have, ", "))
			}
			if dir == "" {
				return usagef("-o DIR is required")
			}
			r, damage, err := openRecording(args[0])
			if err != nil {
				return err
			}
			defer r.Close()
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			files, err := e(r, dir)
			for _, f := range files {
				fmt.Fprintln(a.stdout, f)
			}
			if err != nil {
				return err
			}
			return damage
		},
	}
	cmd.Flags().StringVar(&format, "format", "parquet", "output format")
	cmd.Flags().StringVarP(&dir, "output", "o", "", "output directory")
	return cmd
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
