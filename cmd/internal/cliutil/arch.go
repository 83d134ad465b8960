package cliutil

import "fmt"

// ExitUnsupported is the exit status of a command this build cannot run on its architecture.
const ExitUnsupported = 6

// ArchLimit is something the build for one architecture cannot do yet.
type ArchLimit struct {
	Path    string // the command as CommandPath prints it: "jvmkit profile"
	Flag    string // only with this flag set; "" for the whole command
	Why     string
	Instead string
}

// ArchLimits lists what the build for goarch cannot do. The Java unwinder (package unwind) knows
// x86-64 frames and perf_event's x86-64 register set only, so everything that walks Java stacks is
// amd64-only. Everything else is built for arm64 as well: attach (gjcmd), perf maps (gjmaps, with the
// JVMTI agent cross-built for arm64), VMStructs (vmstructs, flags, threads, codecache), USDT on eBPF
// (usdt, gc, alloc's counts, jitlog record: arm64's argument specs and user_pt_regs), and the pure
// tools (fold, flame, symbolize, jitlog, jfr).
func ArchLimits(goarch string) []ArchLimit {
	if goarch == "amd64" {
		return nil
	}
	return []ArchLimit{
		{Path: "jvmkit profile", Why: "the Java stack walker knows x86-64 frames only",
			Instead: "perf record -g with a JVM started with -XX:+PreserveFramePointer and gjmaps for the JIT symbols (scripts/java-flames), or a flight recording: gjcmd PID JFR.start, then jvmkit jfr flame"},
		{Path: "jvmkit alloc", Flag: "stacks", Why: "allocation stacks are walked by the x86-64 Java stack walker",
			Instead: "jvmkit alloc without --stacks (counts and bytes by class), or a flight recording's allocation samples: jvmkit jfr flame --event alloc"},
		{Path: "jvmkit agent", Why: "continuous profiling walks Java stacks with the x86-64 stack walker",
			Instead: "periodic flight recordings (gjcmd PID JFR.start) read with jvmkit jfr flame, or jvmkit gc and jvmkit alloc for GC pauses and allocations"},
	}
}

// archError says that something cannot be done on this architecture, and what works instead.
type archError struct{ msg string }

func (e *archError) Error() string { return e.msg }

// ArchErrorf is an error that says what this architecture's build cannot do, and what works instead
// (exit status ExitUnsupported).
func ArchErrorf(format string, args ...any) error { return &archError{fmt.Sprintf(format, args...)} }
