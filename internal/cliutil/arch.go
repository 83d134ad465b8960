package cliutil

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// ExitUnsupported is the exit status of a command this build cannot run on its architecture.
const ExitUnsupported = 6

// archLimit is something the build for one architecture cannot do yet.
type archLimit struct {
	path    string // the command as CommandPath prints it: "jvmkit profile"
	flag    string // only with this flag set; "" for the whole command
	why     string
	instead string
}

// archLimits lists what the build for goarch cannot do. The Java unwinder (package unwind) knows
// x86-64 frames and perf_event's x86-64 register set only, so everything that walks Java stacks is
// amd64-only. Everything else is built for arm64 as well: attach (gjcmd), perf maps (gjmaps, with the
// JVMTI agent cross-built for arm64), VMStructs (vmstructs, flags, threads, codecache), USDT on eBPF
// (usdt, gc, alloc's counts, jitlog record: arm64's argument specs and user_pt_regs), and the pure
// tools (fold, flame, symbolize, jitlog, jfr).
func archLimits(goarch string) []archLimit {
	if goarch == "amd64" {
		return nil
	}
	return []archLimit{
		{path: "jvmkit profile", why: "the Java stack walker knows x86-64 frames only",
			instead: "perf record -g with a JVM started with -XX:+PreserveFramePointer and gjmaps for the JIT symbols (scripts/java-flames), or a flight recording: gjcmd PID JFR.start, then jvmkit jfr flame"},
		{path: "jvmkit alloc", flag: "stacks", why: "allocation stacks are walked by the x86-64 Java stack walker",
			instead: "jvmkit alloc without --stacks (counts and bytes by class), or a flight recording's allocation samples: jvmkit jfr flame --event alloc"},
		{path: "jvmkit agent", why: "continuous profiling walks Java stacks with the x86-64 stack walker",
			instead: "periodic flight recordings (gjcmd PID JFR.start) read with jvmkit jfr flame, or jvmkit gc and jvmkit alloc for GC pauses and allocations"},
	}
}

// archError says that something cannot be done on this architecture, and what works instead.
type archError struct{ msg string }

func (e *archError) Error() string { return e.msg }

// ArchErrorf is an error that says what this architecture's build cannot do, and what works instead
// (exit status ExitUnsupported).
func ArchErrorf(format string, args ...any) error { return &archError{fmt.Sprintf(format, args...)} }

// MarkArch marks, in the help, the commands and flags of a tree (gjcmd.Command, gjmaps.Command,
// jvmkit.Command) that a build for goarch cannot run, and has them fail at once with ExitUnsupported and
// the reason. Every tree has its own architecture's marks (FinishTree); the release tool adds another's
// to generate that architecture's man pages.
func MarkArch(root *cobra.Command, goarch string) { markArch(root, goarch) }

// markArch marks, in the help, the commands and flags that this build cannot run, and has them fail at
// once with ExitUnsupported and the reason, before anything is opened or attached.
func markArch(root *cobra.Command, goarch string) {
	for _, l := range archLimits(goarch) {
		cmd := findCommand(root, l.path)
		if cmd == nil {
			continue // a tree without that command (another binary, or an extra not linked in)
		}
		mark := fmt.Sprintf("[not on %s]", goarch)
		what := l.path
		if l.flag == "" {
			cmd.Short += " " + mark
		} else if f := cmd.Flags().Lookup(l.flag); f != nil {
			f.Usage += " " + mark
			what += " --" + l.flag
		} else {
			continue
		}
		cmd.Long = strings.TrimRight(cmd.Long, "\n") + fmt.Sprintf("\n\nNot available in this build (linux/%s): %s. Instead: %s.", goarch, what, l.instead)
		orig := cmd.Args
		if orig == nil {
			orig = cobra.ArbitraryArgs
		}
		err := &archError{fmt.Sprintf("%s is not available on linux/%s: %s. Instead: %s", strings.TrimPrefix(what, root.Name()+" "), goarch, l.why, l.instead)}
		cmd.Args = func(c *cobra.Command, args []string) error {
			if l.flag == "" || c.Flags().Changed(l.flag) {
				return err
			}
			return orig(c, args)
		}
	}
}

func findCommand(root *cobra.Command, path string) *cobra.Command {
	words := strings.Fields(path)
	if len(words) == 0 || words[0] != root.Name() {
		return nil
	}
	c := root
	for _, w := range words[1:] {
		var next *cobra.Command
		for _, sub := range c.Commands() {
			if sub.Name() == w {
				next = sub
			}
		}
		if next == nil {
			return nil
		}
		c = next
	}
	return c
}
