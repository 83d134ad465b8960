package jvmkit

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/jvmkit/jvmkit/perfmap"
	"github.com/jvmkit/jvmkit/perfmap/jitlog"
)

// readLogs reads JIT logs, reports their damage on stderr and builds a resolver.
func (a *jvmkit) readLogs(paths []string) (*jitlog.Resolver, error) {
	if len(paths) == 0 {
		return nil, usagef("no log: give --log FILE")
	}
	var all []jitlog.Record
	for _, p := range paths {
		recs, damage, err := jitlog.ReadFile(p)
		if err != nil {
			return nil, err
		}
		for _, d := range damage {
			fmt.Fprintf(a.stderr, "jvmkit: warning: %s: %s\n", p, d)
		}
		if len(damage) > 0 {
			fmt.Fprintf(a.stderr, "jvmkit: warning: %s: read %d records around the damage\n", p, len(recs))
		}
		all = append(all, recs...)
	}
	return jitlog.NewResolver(all), nil
}

func (a *jvmkit) symbolizeCmd() *cobra.Command {
	var (
		logs []string
		pid  int
	)
	cmd := &cobra.Command{
		Use:   "symbolize --log FILE [--pid PID] [FILE|-]",
		Short: "Name JIT frames of perf script text by the code live at each sample's time (a JIT log)",
		Long: `symbolize reads perf script text (default: standard input) and writes it to standard output with
the frames of JIT code named after the code that was at their address at the sample's time, as a
timestamped JIT log recorded it. A perf map is read once, at the end: code that the JIT replaced or
unloaded during the recording gets a wrong name or none ([unknown]); symbolize fixes both. Every other
line is copied unchanged, so it goes before jvmkit fold in any pipeline:

  perf record -k mono -F 99 -g -p PID -- sleep 30
  perf script -F comm,pid,tid,time,period,event,ip,sym,dso --ns | jvmkit symbolize --log jit.log | jvmkit fold

-k mono is required: the log's times are CLOCK_MONOTONIC, perf's default clock is not. A frame is
renamed when its dso is a perf map (/tmp/perf-<pid>.map), [unknown] or anonymous memory and its address
is code of the log: with the name valid at the sample's time or, for a frame without a name, the
nearest in time. The frame keeps its layout, "<ip> <name>+0x<offset> (<dso>)", the offset from the
start of the code. A name that may be wrong starts with "[?] ": the nearest in time, perf's own name
where the log has only names of other times, and names of code whose load the log lost in damage.
Input cut in the middle of its last line is copied unchanged, with a warning. Without times in the input (perf script -F without time), frames are named as of
the end of the log, with a warning. Without pids in the input (perf script's default format prints
thread ids), give --pid, unless the log has one process; otherwise the process is taken from the
frame's perf map name (/tmp/perf-<pid>.map) or, for the main thread, its thread id.

--log may be repeated (several recorders); damage in a log (a recorder killed mid-write) is skipped
with a warning.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if pid < 0 {
				return usagef("--pid %d: not a pid", pid)
			}
			res, err := a.readLogs(logs)
			if err != nil {
				return err
			}
			if pid != 0 && !res.Has(pid) {
				fmt.Fprintf(a.stderr, "jvmkit: warning: the log has no records of process %d\n", pid)
			}
			in, name, err := openInput(cmd, args)
			if err != nil {
				return err
			}
			defer in.Close()
			st, err := jitlog.Symbolize(a.stdout, in, res, jitlog.SymbolizeOptions{PID: pid})
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			if st.Untimed > 0 {
				fmt.Fprintf(a.stderr, "jvmkit: warning: %s: %d of %d samples have no time (perf script -F without time?): named their JIT frames as of the end of the log\n",
					name, st.Untimed, st.Samples)
			}
			if st.NoPID > 0 {
				fmt.Fprintf(a.stderr, "jvmkit: warning: %s: %d frames that may be JIT code ([unknown], anonymous memory) left as they were: their samples give only a thread id, which is no process of the log (another process's thread, or a logged JVM's other than its main one: then give --pid, or perf script -F pid,tid,...)\n",
					name, st.NoPID)
			}
			if st.Uncertain > 0 {
				fmt.Fprintf(a.stderr, "jvmkit: warning: %s: %d JIT frames named after code whose load the log lost; marked \"[?] \": they may be wrong\n",
					name, st.Uncertain)
			}
			if st.Truncated {
				fmt.Fprintf(a.stderr, "jvmkit: warning: %s: the input ends in a line cut short; copied it unchanged (jvmkit fold leaves its sample out)\n", name)
			}
			if st.JITFrames > 0 && st.Renamed+st.Uncertain+st.Fallback == 0 {
				fmt.Fprintf(a.stderr, "jvmkit: warning: %s: none of %d JIT frames is code of the log (another process or boot, or not recorded with -k mono?)\n",
					name, st.JITFrames)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&logs, "log", nil, "JIT log file (repeatable)")
	f.IntVar(&pid, "pid", 0, "rename only this process's frames; the process of samples without a pid")
	return cmd
}

func (a *jvmkit) jitlogCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "jitlog",
		Short: "Record timestamped JIT logs, dump their records, write perf maps as of a time",
		Long: `jitlog reads timestamped JIT logs, the records of a JVM's JIT code loads and unloads with their
CLOCK_MONOTONIC times (see jvmkit symbolize). Times are nanoseconds or seconds as perf script prints
them (8376.267134341).`,
	}
	cmd.AddCommand(a.jitlogDumpCmd(), a.jitlogPerfmapCmd(), a.jitlogRecordCmd())
	return cmd
}

func (a *jvmkit) jitlogDumpCmd() *cobra.Command {
	var spans bool
	cmd := &cobra.Command{
		Use:   "dump LOG...",
		Short: "Print the records of logs, or the spans of time each name was valid",
		Long: `dump prints the records of logs, one per line:

  time pid kind start size source name

with time in seconds (as perf script prints it) and start and size in hex. With --spans it prints
instead what the records mean, the spans of time each name held its code:

  from to pid start size kind name

where from is "-" for code valid since before the log and to is "-" for code live at its end. --json
prints schema jvmkit.jitlog/v1: the records (or spans), the damage skipped and the resolver's counts.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var recs []jitlog.Record
			var damage []jitlog.Damage
			for _, p := range args {
				r, d, err := jitlog.ReadFile(p)
				if err != nil {
					return err
				}
				for _, x := range d {
					fmt.Fprintf(a.stderr, "jvmkit: warning: %s: %s\n", p, x)
				}
				recs = append(recs, r...)
				damage = append(damage, d...)
			}
			res := jitlog.NewResolver(recs)
			var all []jitlog.Span
			if spans {
				for _, pid := range res.PIDs() {
					all = append(all, res.Spans(pid)...)
				}
			}
			if a.json {
				data := map[string]any{"damage": damage, "stats": res.Stats()}
				if spans {
					data["spans"] = all
				} else {
					data["records"] = recs
				}
				if data["damage"] == nil {
					data["damage"] = []jitlog.Damage{}
				}
				return a.printJSON("jvmkit.jitlog/v1", data)
			}
			if spans {
				for _, s := range all {
					if s.From >= s.To {
						continue
					}
					from, to := "-", "-"
					if s.From != 0 {
						from = seconds(s.From)
					}
					if s.To != jitlog.Forever {
						to = seconds(s.To)
					}
					fmt.Fprintf(a.stdout, "%s %s %d %x %x %s %s\n", from, to, s.PID, s.Start, s.Size, s.Kind, s.Name)
				}
				return nil
			}
			for _, r := range recs {
				src := r.Source
				if src == "" {
					src = "-"
				}
				fmt.Fprintf(a.stdout, "%s %d %s %x %x %s %s\n", seconds(r.Time), r.PID, r.Kind, r.Start, r.Size, src, r.Name)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&spans, "spans", false, "print the spans of validity instead of the records")
	return cmd
}

// seconds prints nanoseconds as perf script --ns prints times.
func seconds(ns uint64) string {
	return strconv.FormatUint(ns/1e9, 10) + "." + fmt.Sprintf("%09d", ns%1e9)
}

func (a *jvmkit) jitlogPerfmapCmd() *cobra.Command {
	var (
		pid          int
		at, from, to string
		out          string
	)
	cmd := &cobra.Command{
		Use:   "perfmap LOG... [--pid PID] [--at T | --from T1 --to T2] [-o FILE]",
		Short: "Write a process's perf map as of a time, or for a window of time",
		Long: `perfmap writes the perf map of a process (default: the log's only one) from JIT logs: as of time T
(--at; default the end of the log), or for the window from T1 to T2 (inclusive): every name valid at
some time in it, and where code replaced in the window overlaps, only the name valid for the longest
part of the window (a perf map has one name per address; jvmkit symbolize names samples by time).
-o writes the file atomically and never through a symbolic link (perf reads /tmp/perf-<pid>.map);
default standard output.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			window := from != "" || to != ""
			if window && at != "" {
				return usagef("--at and --from/--to exclude each other")
			}
			if window && (from == "" || to == "") {
				return usagef("a window needs both --from and --to")
			}
			res, err := a.readLogs(args)
			if err != nil {
				return err
			}
			if pid == 0 {
				pids := res.PIDs()
				if len(pids) != 1 {
					return usagef("the logs have %d processes %v: choose one with --pid", len(pids), pids)
				}
				pid = pids[0]
			}
			if !res.Has(pid) {
				return fmt.Errorf("the logs have no records of process %d", pid)
			}
			var entries []perfmap.Entry
			if window {
				t1, err := jitlog.ParseTime(from)
				if err != nil {
					return usagef("--from: %v", err)
				}
				t2, err := jitlog.ParseTime(to)
				if err != nil {
					return usagef("--to: %v", err)
				}
				if t1 > t2 {
					return usagef("--from %s is after --to %s", from, to)
				}
				entries = res.PerfMapWindow(pid, t1, t2)
			} else {
				t := res.Last()
				if at != "" {
					if t, err = jitlog.ParseTime(at); err != nil {
						return usagef("--at: %v", err)
					}
				}
				entries = res.PerfMap(pid, t)
			}
			if out == "" || out == "-" {
				return perfmap.Write(a.stdout, entries)
			}
			return perfmap.WriteFileAtomic(filepath.Dir(out), filepath.Base(out), entries, os.Getuid(), os.Getgid())
		},
	}
	f := cmd.Flags()
	f.IntVar(&pid, "pid", 0, "the process (default: the logs' only one)")
	f.StringVar(&at, "at", "", "the time of the map (default: the end of the log)")
	f.StringVar(&from, "from", "", "the start of the window")
	f.StringVar(&to, "to", "", "the end of the window (inclusive)")
	f.StringVarP(&out, "output", "o", "-", "output file; - is standard output")
	return cmd
}
