package jvmkit

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/jvmkit/jvmkit/flame"
	"github.com/jvmkit/jvmkit/internal/rootfs"
)

// foldFlags are the folding options that fold and flame share.
type foldFlags struct {
	opts    flame.FoldOptions
	all     bool
	lenient bool
}

func (ff *foldFlags) add(cmd *cobra.Command, annotate bool) {
	f := cmd.Flags()
	f.BoolVar(&ff.opts.PID, "pid", false, `name the first frame "comm-pid"`)
	f.BoolVar(&ff.opts.TID, "tid", false, `name the first frame "comm-pid/tid"`)
	f.BoolVar(&ff.opts.Kernel, "kernel", annotate, `suffix kernel frames "_[k]"`)
	f.BoolVar(&ff.opts.JIT, "jit", annotate, `suffix frames of perf maps (/tmp/perf-<pid>.map) "_[j]"`)
	f.BoolVar(&ff.all, "all", false, "--kernel and --jit")
	f.BoolVar(&ff.opts.Addrs, "addrs", false, `name unresolved frames "[dso <ip>]"`)
	f.StringVar(&ff.opts.Event, "event", "", "keep the samples of this event (default: the first sample's)")
	f.StringVar(&ff.opts.Event, "event-filter", "", "same as --event (stackcollapse-perf.pl's name)")
	f.BoolVar(&ff.opts.Count, "count", false, "count samples instead of summing their periods")
	f.BoolVar(&ff.opts.Count, "no-period", false, "same as --count")
	f.BoolVar(&ff.opts.NoSplit, "no-split", false, `keep inlining chains "a->b" as one frame`)
	f.BoolVar(&ff.lenient, "lenient", false, "skip unrecognised lines instead of failing")
	_ = f.MarkHidden("event-filter")
	_ = f.MarkHidden("no-period")
}

func (ff *foldFlags) options() flame.FoldOptions {
	o := ff.opts
	if ff.all {
		o.Kernel, o.JIT = true, true
	}
	o.Lenient = ff.lenient
	return o
}

const foldHelp = `Folding follows brendangregg/FlameGraph's stackcollapse-perf.pl, whose options have the same names:
one line per distinct stack, "comm;root;...;leaf count", sorted. A sample counts its period when
perf script printed one (cpu-clock: nanoseconds), else 1; only the first sample's event is kept. Names
lose offsets, argument lists and quotes, ";" becomes ":", "[unknown]" becomes "[dso]", and an inlining
chain "a->b" (gjmaps --unfold, perf-map-agent unfoldall) becomes frames "a;b_[i]". A line that is
neither a sample header nor a frame is an error (--lenient skips it, as the script does); a sample cut
off by the end of the input is left out with a warning.`

func (a *jvmkit) foldCmd() *cobra.Command {
	var ff foldFlags
	cmd := &cobra.Command{
		Use:   "fold [FILE|-]",
		Short: "Fold perf script stacks into one line per stack, as stackcollapse-perf.pl",
		Long: `fold reads the text of perf script (default: standard input) for a recording made with call graphs
and prints folded stacks, the input of flame graph tools:

  perf record -k mono -F 99 -g -p PID -- sleep 30
  perf script -F comm,pid,tid,time,period,event,ip,sym,dso --ns | jvmkit fold > out.folded

` + foldHelp,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			in, name, err := openInput(cmd, args)
			if err != nil {
				return err
			}
			defer in.Close()
			f, st, err := flame.Fold(in, ff.options())
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			a.foldWarnings(name, f, st)
			return flame.WriteFolded(a.stdout, f)
		},
	}
	ff.add(cmd, false)
	return cmd
}

func (a *jvmkit) flameCmd() *cobra.Command {
	var (
		ff                     foldFlags
		out, format, inputKind string
		svg                    flame.SVGOptions
	)
	cmd := &cobra.Command{
		Use:   "flame [FILE|-] [-o OUT]",
		Short: "Draw a flame graph (SVG) or write a pprof profile from perf script text or folded stacks",
		Long: `flame reads perf script text or folded stacks (default: standard input) and writes an interactive
flame graph, a self-contained SVG (hover for details, click to zoom, Ctrl+F to search), a pprof
profile (gzipped profile.proto, for go tool pprof) or folded stacks:

  perf script -F comm,pid,tid,time,period,event,ip,sym,dso --ns | jvmkit flame -o cpu.svg
  jvmkit flame out.folded --format pprof -o cpu.pb.gz

The input kind is detected from its first line that is not blank or a "#" comment: a line that ends in
a blank and a count, and does not start with a blank or end in ":", is folded stacks; anything else is
perf script text. --input says it instead. The format comes from --format, else from the name of the
output (.svg; .pb.gz, .pb or .pprof; .folded, .collapsed or .txt), else svg.

Perf script text is folded as by jvmkit fold, with its flags, except that --kernel and --jit are on
(the suffixes colour the graph; labels do not show them): ` + foldHelp,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format == "" {
				format = formatFor(out)
			}
			if !slices.Contains([]string{"svg", "pprof", "folded"}, format) {
				return usagef("--format %q: want svg, pprof or folded", format)
			}
			if !slices.Contains([]string{"auto", "perf", "folded"}, inputKind) {
				return usagef("--input %q: want auto, perf or folded", inputKind)
			}
			if cmd.Flags().Changed("width") && svg.Width < 120 {
				return usagef("--width %d: want at least 120", svg.Width)
			}
			in, name, err := openInput(cmd, args)
			if err != nil {
				return err
			}
			defer in.Close()
			br := bufio.NewReaderSize(in, 64<<10)
			if inputKind == "auto" {
				head, _ := br.Peek(64 << 10) // a short read is the whole input, or fails again below
				if flame.Sniff(head) == flame.InputFolded {
					inputKind = "folded"
				}
			}
			var f *flame.Folded
			if inputKind == "folded" {
				if f, err = flame.ParseFolded(br); err != nil {
					return fmt.Errorf("%s (folded stacks): %w", name, err)
				}
			} else {
				var st flame.FoldStats
				if f, st, err = flame.Fold(br, ff.options()); err != nil {
					return fmt.Errorf("%s (perf script): %w", name, err)
				}
				a.foldWarnings(name, f, st)
				if svg.Subtitle == "" && st.Samples > 0 {
					svg.Subtitle = subtitle(f, st)
				}
			}
			if len(f.Stacks) == 0 {
				return fmt.Errorf("%s: no stacks to draw", name)
			}
			return writeOutput(a.stdout, out, func(w io.Writer) error {
				switch format {
				case "pprof":
					return flame.WritePprof(w, f, flame.PprofOptions{})
				case "folded":
					return flame.WriteFolded(w, f)
				}
				return flame.WriteSVG(w, f, svg)
			})
		},
	}
	ff.add(cmd, true)
	fl := cmd.Flags()
	fl.StringVarP(&out, "output", "o", "-", "output file; - is standard output")
	fl.StringVar(&format, "format", "", "svg, pprof or folded (default: from the output's name, else svg)")
	fl.StringVar(&inputKind, "input", "auto", "input kind: auto, perf (perf script text) or folded")
	fl.StringVar(&svg.Title, "title", "", `title (default "Flame Graph", or "Icicle Graph" with --reverse)`)
	fl.StringVar(&svg.Subtitle, "subtitle", "", "subtitle (default for perf script input: samples and event)")
	fl.IntVar(&svg.Width, "width", 1200, "image width in pixels")
	fl.Float64Var(&svg.MinWidth, "min-width", 0.1, "merge frames narrower than this many pixels")
	fl.BoolVar(&svg.Reverse, "reverse", false, "icicle graph: root at the top")
	return cmd
}

// openInput opens the command's file argument, or standard input for none or "-".
func openInput(cmd *cobra.Command, args []string) (io.ReadCloser, string, error) {
	if len(args) == 0 || args[0] == "-" {
		return io.NopCloser(cmd.InOrStdin()), "standard input", nil
	}
	f, err := os.Open(args[0])
	if err != nil {
		return nil, "", err
	}
	return f, args[0], nil
}

// formatFor guesses the output format from the output's name.
func formatFor(out string) string {
	name := strings.ToLower(filepath.Base(out))
	switch {
	case strings.HasSuffix(name, ".pb.gz"), strings.HasSuffix(name, ".pb"), strings.HasSuffix(name, ".pprof"):
		return "pprof"
	case strings.HasSuffix(name, ".folded"), strings.HasSuffix(name, ".collapsed"), strings.HasSuffix(name, ".txt"):
		return "folded"
	}
	return "svg"
}

// writeOutput runs write on standard output for "-", else on the named file, which it removes when
// write fails.
func writeOutput(stdout io.Writer, out string, write func(io.Writer) error) error {
	if out == "-" || out == "" {
		return write(stdout)
	}
	// Never through a link someone planted at the name; never a half file after an interrupt.
	return rootfs.WriteOutput(out, 0o644, write)
}

// checkOutput checks, before a long task, that writeOutput will be able to write out (see
// rootfs.CheckOutput); standard output needs no check.
func checkOutput(out string) error {
	if out == "-" || out == "" {
		return nil
	}
	return rootfs.CheckOutput(out)
}

// foldWarnings reports on stderr what Fold left out.
func (a *jvmkit) foldWarnings(name string, f *flame.Folded, st flame.FoldStats) {
	if st.Filtered > 0 {
		var others []string
		for e, n := range st.Events {
			if e != f.Event {
				others = append(others, fmt.Sprintf("%s: %d", e, n))
			}
		}
		slices.Sort(others)
		fmt.Fprintf(a.stderr, "jvmkit: %s: kept %d samples of %s, left out %d of other events (%s); choose with --event\n",
			name, st.Samples, f.Event, st.Filtered, strings.Join(others, ", "))
	}
	if st.Skipped > 0 {
		fmt.Fprintf(a.stderr, "jvmkit: %s: skipped %d unrecognised lines\n", name, st.Skipped)
	}
	if st.Truncated {
		fmt.Fprintf(a.stderr, "jvmkit: %s: the input ends inside a sample; left it out\n", name)
	}
	if st.Samples == 0 {
		fmt.Fprintf(a.stderr, "jvmkit: %s: no samples (want perf script output of a recording with call graphs, perf record -g)\n", name)
	}
}

func subtitle(f *flame.Folded, st flame.FoldStats) string {
	s := fmt.Sprintf("%d samples", st.Samples)
	if f.Event != "" {
		s += " of " + f.Event
	}
	if f.Period {
		s += ", weighted by period"
	}
	return s
}
