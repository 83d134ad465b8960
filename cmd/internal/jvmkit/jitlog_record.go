package jvmkit

import (
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/jvmkit/jvmkit/cmd/internal/jitrecord"
	"github.com/jvmkit/jvmkit/perfmap/jitlog/recorder"
)

func (a *jvmkit) jitlogRecordCmd() *cobra.Command {
	var (
		out      string
		duration time.Duration
		jitdump  string
		snapshot string
	)
	cmd := &cobra.Command{
		Use:   "record -o LOG [--duration D] [--jitdump DIR] PID...",
		Short: "Record the JIT code of running HotSpot JVMs into a timestamped log",
		Long: `record writes a timestamped JIT log of running HotSpot JVMs, for jvmkit symbolize and the other
jitlog commands: it attaches to the probes hotspot:compiled__method__load and unload of every JVM,
takes a snapshot of its code cache (read from its memory; --snapshot perfmap asks the JVM for
Compiler.perfmap instead), then logs every load and unload with its CLOCK_MONOTONIC time until
--duration has passed, SIGINT or SIGTERM, or every JVM has exited. The log (a new file) is written
every 200 ms: a killed recorder leaves a readable log that lacks at most the last 200 ms.

"recording ..." on standard error says when the log names the JVMs' code: start perf record -k mono
after it. --jitdump DIR also writes DIR/jit-<recorder pid>.dump for perf inject --jit, with the code
of each load read from the JVM: perf must record this process as well (perf record -p JVM,RECORDER
or -a). For a JVM in a container, perf report looks for the jitted-*.so files perf inject writes
inside the JVM's own file system (its mount namespace), where they are not: the Java frames stay
unnamed there unless the files are copied to the same path under /proc/<pid>/root; jvmkit symbolize
with the log names them without that.

Needs root (uprobes, and reading the JVMs' memory) and JDKs built with DTrace probes (most are).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usagef("give the log file with -o")
			}
			if duration < 0 {
				return usagef("--duration %v: negative", duration)
			}
			var pids []int
			for _, s := range args {
				pid, err := strconv.Atoi(s)
				if err != nil || pid <= 0 {
					return usagef("%q is not a pid", s)
				}
				pids = append(pids, pid)
			}
			st, err := jitrecord.Record(cmd.Context(), a.stderr, "jvmkit", out, pids, recorder.Options{
				Duration: duration, Jitdump: jitdump, Snapshot: snapshot,
			})
			if a.json {
				if jerr := a.printJSON("jvmkit.jitlog-record/v1", st); jerr != nil && err == nil {
					err = jerr
				}
			}
			if err == nil && cmd.Context().Err() != nil {
				return nil // SIGINT or SIGTERM is how a recording ends
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVarP(&out, "output", "o", "", "the log file to create (must not exist)")
	f.DurationVar(&duration, "duration", 0, "stop after this long (default: until interrupted or the JVMs exit)")
	f.StringVar(&jitdump, "jitdump", "", "also write a jitdump for perf inject --jit in this directory")
	f.StringVar(&snapshot, "snapshot", "vmstructs", "the snapshot after attaching: vmstructs, perfmap (jcmd Compiler.perfmap) or none")
	return cmd
}
