package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/jvmkit/jvmkit/jcmd"
	"github.com/jvmkit/jvmkit/perfmap"
)

// GjmapsMain runs gjmaps with the given arguments (without the program name) and returns the exit status.
func GjmapsMain(args []string, stdout, stderr io.Writer) int {
	g := &gjmaps{stdout: stdout, stderr: stderr}
	return run("gjmaps", g.command(), args, stdout, stderr, true)
}

type gjmaps struct {
	stdout, stderr io.Writer
	pids           string
	strategy       string
	unfold         bool
	jsonOut        bool
	clean          bool
}

func (g *gjmaps) command() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "gjmaps [flags]",
		Short: "Write perf maps (/tmp/perf-<pid>.map) for running HotSpot JVMs",
		Long: `gjmaps writes perf's JIT symbol maps for running HotSpot JVMs, so that perf shows
JIT-compiled Java frames by name: every HotSpot JVM on the machine, or those given with -p.

For a JVM in a container the map is written twice: in the container's /tmp under the JVM's own pid,
and in the host's /tmp under its host pid. Maps are owned by root.

Strategies (--strategy):
  vmstructs  read the code cache from the JVM's memory; no code runs in the JVM
  jcmd       have the JVM write its map (Compiler.perfmap, JDK 17+) and copy it
  auto       vmstructs, falling back to jcmd (the default)

Exit status: 0 ok, 1 a JVM failed (the others are still done), 2 usage, 130 interrupted.`,
		Args:          cobra.NoArgs,
		Version:       version(),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE:          g.run,
	}
	f := cmd.Flags()
	f.StringVarP(&g.pids, "pid", "p", "", "comma-separated pids (default: every HotSpot JVM)")
	f.StringVar(&g.strategy, "strategy", "auto", "auto, vmstructs or jcmd")
	f.BoolVar(&g.unfold, "unfold", false, "vmstructs: append the methods inlined into each nmethod to its name, after \"->\"")
	f.BoolVar(&g.jsonOut, "json", false, "print results as JSON (schema jvmkit.gjmaps/v1)")
	f.BoolVar(&g.clean, "clean", false, "remove the maps gjmaps would write (regular files owned by root only)")
	return cmd
}

// mapResult is the outcome for one JVM.
type mapResult struct {
	PID        int      `json:"pid"`
	Strategy   string   `json:"strategy,omitempty"`
	Entries    int      `json:"entries"`
	Paths      []string `json:"paths"`
	DurationMS float64  `json:"duration_ms"`
	Error      string   `json:"error,omitempty"`
	Note       string   `json:"note,omitempty"`
}

func (g *gjmaps) run(cmd *cobra.Command, _ []string) error {
	ctx := cmd.Context()
	switch g.strategy {
	case "auto", "vmstructs", "jcmd":
	case "agent":
		return usagef("--strategy agent is not implemented yet; use auto, vmstructs or jcmd")
	default:
		return usagef("--strategy must be auto, vmstructs or jcmd, not %q", g.strategy)
	}
	if g.unfold && g.strategy == "jcmd" {
		return usagef("--unfold needs --strategy vmstructs or auto")
	}
	pids, err := g.targets(ctx)
	if err != nil {
		return err
	}
	failed := false
	var results []mapResult
	for _, pid := range pids {
		if ctx.Err() != nil {
			return context.Canceled
		}
		var r mapResult
		if g.clean {
			r = g.cleanOne(ctx, pid)
		} else {
			r = g.mapOne(ctx, pid)
		}
		failed = failed || r.Error != ""
		results = append(results, r)
		if !g.jsonOut {
			g.print(r)
		}
	}
	if g.jsonOut {
		enc := json.NewEncoder(g.stdout)
		enc.SetIndent("", "  ")
		if results == nil {
			results = []mapResult{}
		}
		if err := enc.Encode(struct {
			Schema string      `json:"schema"`
			JVMs   []mapResult `json:"jvms"`
		}{"jvmkit.gjmaps/v1", results}); err != nil {
			return err
		}
	}
	if failed {
		return &exitError{ExitFailed}
	}
	return nil
}

func (g *gjmaps) targets(ctx context.Context) ([]int, error) {
	if g.pids != "" {
		var pids []int
		for _, s := range strings.Split(g.pids, ",") {
			pid, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || pid <= 0 {
				return nil, usagef("-p: %q is not a pid", s)
			}
			pids = append(pids, pid)
		}
		return pids, nil
	}
	jvms, err := jcmd.List(ctx)
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, j := range jvms {
		if j.HotSpot {
			pids = append(pids, j.PID)
		}
	}
	return pids, nil
}

func (g *gjmaps) mapOne(ctx context.Context, pid int) mapResult {
	start := time.Now()
	r := mapResult{PID: pid}
	var entries []perfmap.Entry
	var err error
	switch g.strategy {
	case "vmstructs":
		r.Strategy = "vmstructs"
		entries, err = perfmap.FromVMStructs(ctx, pid, g.unfold)
	case "jcmd":
		r.Strategy = "jcmd"
		entries, err = perfmap.FromJcmd(ctx, pid)
	default:
		r.Strategy = "vmstructs"
		entries, err = perfmap.FromVMStructs(ctx, pid, g.unfold)
		if err != nil && ctx.Err() == nil {
			r.Note = fmt.Sprintf("vmstructs failed (%v); used jcmd", err)
			r.Strategy = "jcmd"
			entries, err = perfmap.FromJcmd(ctx, pid)
		}
	}
	if err == nil {
		r.Entries = len(entries)
		r.Paths, err = perfmap.Place(ctx, pid, entries)
	}
	if err != nil {
		r.Error = err.Error()
	}
	if r.Paths == nil {
		r.Paths = []string{}
	}
	r.DurationMS = float64(time.Since(start).Microseconds()) / 1000
	return r
}

func (g *gjmaps) cleanOne(ctx context.Context, pid int) mapResult {
	start := time.Now()
	r := mapResult{PID: pid}
	var err error
	r.Paths, err = perfmap.Clean(ctx, pid)
	if err != nil {
		r.Error = err.Error()
	}
	if r.Paths == nil {
		r.Paths = []string{}
	}
	r.DurationMS = float64(time.Since(start).Microseconds()) / 1000
	return r
}

func (g *gjmaps) print(r mapResult) {
	if r.Note != "" {
		fmt.Fprintf(g.stderr, "gjmaps: %d: %s\n", r.PID, r.Note)
	}
	if r.Error != "" {
		fmt.Fprintf(g.stderr, "gjmaps: %d: %s\n", r.PID, r.Error)
	}
	switch {
	case g.clean:
		for _, p := range r.Paths {
			fmt.Fprintf(g.stdout, "%d: removed %s\n", r.PID, p)
		}
	case r.Error == "":
		fmt.Fprintf(g.stdout, "%d: %d entries (%s, %.0f ms): %s\n", r.PID, r.Entries, r.Strategy, r.DurationMS, strings.Join(r.Paths, " "))
	}
}
