package gjmaps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/jvmkit/jvmkit/attach"
	"github.com/jvmkit/jvmkit/cmd/internal/clitree"
	"github.com/jvmkit/jvmkit/cmd/internal/cliutil"
	"github.com/jvmkit/jvmkit/cmd/internal/jitrecord"
	"github.com/jvmkit/jvmkit/jcmd"
	"github.com/jvmkit/jvmkit/perfmap"
	"github.com/jvmkit/jvmkit/perfmap/jitlog/recorder"
)

// Main runs gjmaps with the given arguments (without the program name) and returns the exit status.
func Main(args []string, stdout, stderr io.Writer) int {
	return clitree.Run("gjmaps", Command(stdout, stderr), args, stdout, stderr, true)
}

// Command builds gjmaps' command tree: for Main, and for the release tool, which generates completions
// and man pages from it.
func Command(stdout, stderr io.Writer) *cobra.Command {
	g := &gjmaps{stdout: stdout, stderr: stderr}
	root := g.command()
	clitree.FinishTree(root)
	return root
}

func usagef(format string, args ...any) error { return cliutil.UsageErrorf(format, args...) }

type gjmaps struct {
	stdout, stderr io.Writer
	pids           string
	strategy       string
	unfold         bool
	annotate       bool
	owner          string
	agentPath      string
	agentOptions   string
	jsonOut        bool
	clean          bool
	logPath        string
	duration       time.Duration

	uid, gid int  // the maps' owner
	ownerSet bool // --owner was given: every map is the owner's, the container's copy too
}

func (g *gjmaps) command() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "gjmaps [flags]",
		Short: "Write perf maps (/tmp/perf-<pid>.map) for running HotSpot JVMs",
		Long: `gjmaps writes perf's JIT symbol maps for running HotSpot JVMs, so that perf shows
JIT-compiled Java frames by name: every HotSpot JVM on the machine, or those given with -p.

For a JVM in a container the map is written twice: in the container's /tmp under the JVM's own pid,
and in the host's /tmp under its host pid. Maps are owned by root (perf reads maps owned by root or by
the user running it; --owner chooses another owner), except the container's copy, which is the JVM's
user's unless --owner is given, so that the JVM can rewrite it (its own Compiler.perfmap).

Strategies (--strategy):
  vmstructs  read the code cache from the JVM's memory; no code runs in the JVM, works with
             -XX:+DisableAttachMechanism; names as Compiler.perfmap's
  jcmd       have the JVM write its map (Compiler.perfmap, JDK 17+) and copy it
  agent      load jvmkit's JVMTI perf-map agent (embedded in gjmaps) into the JVM with the attach
             mechanism; perf-map-agent's names ("Ljava/lang/String;::hashCode") and options; with
             --agent PATH, load that library instead (e.g. perf-map-agent's libperfmap.so)
  auto       the first of vmstructs, jcmd, agent that works for the JVM (the default); the one
             used is printed

--unfold names inlined code by its inlining chain ("outer->inner"), one map range per chain, as
perf-map-agent's unfoldall; --annotate suffixes compiled Java frames "_[j]" and inlined ones "_[i]",
which flame graphs colour.

--log FILE then records the JVMs' JIT code loads and unloads into a timestamped log until --duration
has passed or SIGINT (jvmkit symbolize names perf samples by it, code the JIT replaced included).

Exit status: 0 ok, 1 a JVM failed (the others are still done), 2 usage, 130 interrupted.`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE:          g.run,
	}
	f := cmd.Flags()
	f.StringVarP(&g.pids, "pid", "p", "", "comma-separated pids (default: every HotSpot JVM)")
	f.StringVar(&g.strategy, "strategy", "auto", "auto, vmstructs, jcmd or agent")
	f.BoolVar(&g.unfold, "unfold", false, "vmstructs and agent: one range per inlining chain, named \"outer->inner\"")
	f.BoolVar(&g.annotate, "annotate", false, "suffix compiled Java frames \"_[j]\" and inlined ones \"_[i]\"")
	f.StringVar(&g.owner, "owner", "root", "owner of the maps: user[:group], names or numbers")
	f.StringVar(&g.agentPath, "agent", "", "agent strategy: load this JVMTI agent library (a host path) instead of jvmkit's")
	f.StringVar(&g.agentOptions, "agent-options", "", "agent strategy: extra options for the agent (perf-map-agent's: msig, sourcepos, dottedclass, ...)")
	f.BoolVar(&g.jsonOut, "json", false, "print results as JSON (schema jvmkit.gjmaps/v1)")
	f.BoolVar(&g.clean, "clean", false, "remove the maps gjmaps would write (regular files owned by root only)")
	f.StringVar(&g.logPath, "log", "", "then record a timestamped JIT log of the JVMs into this new file (see jvmkit jitlog record) until --duration or SIGINT")
	f.DurationVar(&g.duration, "duration", 0, "with --log: stop recording after this long")
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
	case "auto", "vmstructs", "jcmd", "agent":
	default:
		return usagef("--strategy must be auto, vmstructs, jcmd or agent, not %q", g.strategy)
	}
	if g.unfold && g.strategy == "jcmd" {
		return usagef("--unfold needs --strategy vmstructs, agent or auto (Compiler.perfmap has no inlining)")
	}
	if (g.agentPath != "" || g.agentOptions != "") && g.strategy != "agent" && g.strategy != "auto" {
		return usagef("--agent and --agent-options need --strategy agent or auto")
	}
	if g.agentPath != "" && !strings.HasPrefix(g.agentPath, "/") {
		abs, err := filepath.Abs(g.agentPath)
		if err != nil {
			return usagef("--agent: %v", err)
		}
		g.agentPath = abs
	}
	if g.logPath != "" && g.clean {
		return usagef("--log and --clean exclude each other")
	}
	if g.duration != 0 && g.logPath == "" || g.duration < 0 {
		return usagef("--duration needs --log and a positive duration")
	}
	var err error
	if g.uid, g.gid, err = parseOwner(g.owner); err != nil {
		return usagef("--owner: %v", err)
	}
	g.ownerSet = cmd.Flags().Changed("owner")
	pids, err := g.targets(ctx)
	if err != nil {
		return err
	}
	failed := false
	var results []mapResult
	interrupted := false
	for i, pid := range pids {
		if ctx.Err() != nil {
			fmt.Fprintf(g.stderr, "gjmaps: interrupted; nothing done for %s\n", joinPids(pids[i:]))
			interrupted = true
			break
		}
		var r mapResult
		if g.clean {
			r = g.cleanOne(ctx, pid)
		} else {
			r = g.mapOne(ctx, pid)
		}
		interrupted = interrupted || strings.HasPrefix(r.Error, "interrupted")
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
	if interrupted {
		return cliutil.Exit(cliutil.ExitInterrupted) // each JVM's line said what was written
	}
	if g.logPath != "" && len(pids) > 0 {
		st, err := jitrecord.Record(ctx, g.stderr, "gjmaps", g.logPath, pids, recorder.Options{Duration: g.duration})
		if err != nil && ctx.Err() == nil {
			return err
		}
		for _, j := range st.JVMs {
			failed = failed || j.Err != ""
		}
	}
	if failed {
		return cliutil.Exit(cliutil.ExitFailed)
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
	var notes []string
	// One writer of a JVM's maps at a time: the JVM writes its own map in place (Compiler.perfmap), and
	// two runs at once would each read half of the other's.
	unlock, note, err := lockMap(ctx, pid)
	if note != "" {
		notes = append(notes, note)
	}
	if err == nil {
		defer unlock()
		if g.strategy == "auto" {
			var failed []string
			for _, strategy := range []string{"vmstructs", "jcmd", "agent"} {
				if strategy == "jcmd" && g.unfold {
					continue
				}
				r.Strategy = strategy
				var n []string
				entries, n, err = g.fromStrategy(ctx, pid, strategy)
				notes = append(notes, n...)
				if err == nil || ctx.Err() != nil || !fallBack(err) {
					break
				}
				failed = append(failed, fmt.Sprintf("%s failed (%v)", strategy, err))
			}
			if err == nil && len(failed) > 0 {
				notes = append(notes, strings.Join(failed, "; ")+"; used "+r.Strategy)
			}
		} else {
			r.Strategy = g.strategy
			var n []string
			entries, n, err = g.fromStrategy(ctx, pid, g.strategy)
			notes = append(notes, n...)
		}
	}
	r.Note = strings.Join(notes, "; ")
	if err == nil {
		r.Entries = len(entries)
		r.Paths, err = perfmap.PlaceWith(ctx, pid, entries, perfmap.PlaceOptions{UID: g.uid, GID: g.gid, JVMOwnsContainerMap: !g.ownerSet,
			Note: func(n string) { notes = append(notes, n) }})
		r.Note = strings.Join(notes, "; ")
	}
	switch {
	case err != nil && ctx.Err() != nil && len(r.Paths) == 0:
		r.Error = "interrupted; no map was written"
	case err != nil && ctx.Err() != nil:
		r.Error = "interrupted after writing " + strings.Join(r.Paths, " ")
	case err != nil:
		r.Error = withCapsNote(err)
	}
	if r.Paths == nil {
		r.Paths = []string{}
	}
	r.DurationMS = float64(time.Since(start).Microseconds()) / 1000
	return r
}

// lockMap takes the lock of JVM pid's map (jcmd.LockMap). When the lock file cannot be had (a read-only
// /tmp, a directory someone put at its name) the JVM is mapped without it, which a concurrent run can
// make fail but never makes wrong: every map is checked when read and published by rename. Only a lock
// held by another run for longer than the wait is an error.
func lockMap(ctx context.Context, pid int) (func(), string, error) {
	t, err := attach.Resolve(pid)
	if err != nil {
		return nil, "", err
	}
	f, err := jcmd.LockMap(ctx, t)
	switch {
	case err == nil && f == nil: // a read-only /tmp
		return func() {}, "", nil
	case err == nil:
		return func() { f.Close() }, "", nil
	case ctx.Err() != nil, errors.Is(err, context.DeadlineExceeded):
		return nil, "", err
	}
	return func() {}, fmt.Sprintf("mapping without the map lock: %v", err), nil
}

// fromStrategy builds the map of one JVM with one strategy; the notes say what was done on the way.
func (g *gjmaps) fromStrategy(ctx context.Context, pid int, strategy string) ([]perfmap.Entry, []string, error) {
	switch strategy {
	case "vmstructs":
		entries, err := perfmap.FromVMStructsWith(ctx, pid, perfmap.VMStructsOptions{Unfold: g.unfold, Annotate: g.annotate})
		return entries, nil, err
	case "jcmd":
		entries, notes, err := perfmap.FromJcmdNotes(ctx, pid)
		if err == nil && g.annotate {
			perfmap.AnnotateJDKNames(entries)
		}
		return entries, notes, err
	default:
		opts := g.agentOptions
		if g.unfold {
			opts = joinOptions(opts, "unfoldall")
		}
		if g.annotate {
			opts = joinOptions(opts, "annotate_java_frames")
		}
		entries, err := perfmap.FromAgent(ctx, pid, perfmap.AgentOptions{Options: opts, Library: g.agentPath})
		return entries, nil, err
	}
}

// fallBack tells whether auto goes on to the next strategy after err: not when the JVM is gone or the
// caller may not touch it, which every strategy would find again.
func fallBack(err error) bool {
	for _, e := range []error{attach.ErrProcessGone, attach.ErrNotJVM, attach.ErrNotHotSpot, attach.ErrPermission, os.ErrPermission} {
		if errors.Is(err, e) {
			return false
		}
	}
	return true
}

func joinPids(pids []int) string {
	s := make([]string, len(pids))
	for i, p := range pids {
		s[i] = strconv.Itoa(p)
	}
	return strings.Join(s, " ")
}

func joinOptions(a, b string) string {
	if a == "" {
		return b
	}
	return a + "," + b
}

// parseOwner parses user[:group], names or numbers; without a group, the user's primary group.
func parseOwner(s string) (uid, gid int, err error) {
	name, group, hasGroup := strings.Cut(s, ":")
	if name == "" {
		return 0, 0, fmt.Errorf("%q: no user", s)
	}
	if n, err := strconv.Atoi(name); err == nil && n >= 0 {
		uid, gid = n, n
		if u, err := user.LookupId(name); err == nil {
			gid, _ = strconv.Atoi(u.Gid)
		}
	} else {
		u, err := user.Lookup(name)
		if err != nil {
			return 0, 0, err
		}
		uid, _ = strconv.Atoi(u.Uid)
		gid, _ = strconv.Atoi(u.Gid)
	}
	if hasGroup {
		if n, err := strconv.Atoi(group); err == nil && n >= 0 {
			gid = n
		} else {
			g, err := user.LookupGroup(group)
			if err != nil {
				return 0, 0, err
			}
			gid, _ = strconv.Atoi(g.Gid)
		}
	}
	return uid, gid, nil
}

func (g *gjmaps) cleanOne(ctx context.Context, pid int) mapResult {
	start := time.Now()
	r := mapResult{PID: pid}
	var err error
	r.Paths, err = perfmap.CleanOwned(ctx, pid, g.uid)
	if err != nil {
		r.Error = withCapsNote(err)
	}
	if r.Paths == nil {
		r.Paths = []string{}
	}
	r.DurationMS = float64(time.Since(start).Microseconds()) / 1000
	return r
}

// withCapsNote is err's message, with the capabilities this process lacks as root when it is a refusal
// that names none (cliutil.CapsNote).
func withCapsNote(err error) string {
	if n := cliutil.CapsNote(err); n != "" {
		return err.Error() + " (" + n + ")"
	}
	return err.Error()
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
