package jcmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/jvmkit/jvmkit/attach"
	"github.com/jvmkit/jvmkit/internal/hsperf"
	"github.com/jvmkit/jvmkit/internal/procfs"
)

// JVM is a Java process found on the machine.
type JVM struct {
	PID   int `json:"pid"`   // pid in the caller's namespace (host pid)
	NSPID int `json:"nspid"` // pid inside the JVM's own pid namespace
	UID   int `json:"uid"`
	// MainClass is the main class, jar or module as jcmd shows it; Command adds the program arguments
	// (hsperfdata sun.rt.javaCommand, or the command line when the JVM has no hsperfdata).
	MainClass string `json:"main_class"`
	Command   string `json:"command"`
	// HotSpot is false for OpenJ9, which has another attach mechanism.
	HotSpot bool `json:"hotspot"`
	// Attachable is false when the JVM reports -XX:+DisableAttachMechanism; true when it does not or
	// cannot tell (no hsperfdata).
	Attachable bool `json:"attachable"`
	// PerfData is the host-visible path of its hsperfdata file, empty when it has none
	// (-XX:-UsePerfData) or it is not readable.
	PerfData string `json:"perfdata,omitempty"`
	// Container is true when the JVM lives in another pid or mount namespace than the caller.
	Container bool `json:"container"`
}

// List returns the JVMs visible to the caller, sorted by pid. Processes the caller may not inspect
// (other users' processes for a non-root caller) are skipped.
func List(ctx context.Context) ([]JVM, error) {
	pids, err := procfs.Default.Pids()
	if err != nil {
		return nil, fmt.Errorf("jcmd: list processes: %w", err)
	}
	self := os.Getpid()
	var (
		mu   sync.Mutex
		out  []JVM
		wg   sync.WaitGroup
		work = make(chan int)
	)
	for range 4 {
		wg.Go(func() {
			for pid := range work {
				if j, ok := inspect(ctx, pid); ok {
					mu.Lock()
					out = append(out, j)
					mu.Unlock()
				}
			}
		})
	}
	for _, pid := range pids {
		if pid != self {
			work <- pid
		}
	}
	close(work)
	wg.Wait()
	sort.Slice(out, func(i, k int) bool { return out[i].PID < out[k].PID })
	return out, ctx.Err()
}

// Inspect describes one process; it fails with attach.ErrNotJVM for anything but a JVM.
func Inspect(ctx context.Context, pid int) (JVM, error) {
	t, err := attach.Resolve(pid)
	if err != nil {
		return JVM{}, err
	}
	found, err := procfs.Default.MapsContain(pid, "/libjvm.so", "/libj9vm29.so", "/libopenj9.so")
	if err != nil {
		if errors.Is(err, os.ErrPermission) {
			return JVM{}, fmt.Errorf("%w: cannot inspect process %d", attach.ErrPermission, pid)
		}
		return JVM{}, fmt.Errorf("%w: %d", attach.ErrProcessGone, pid)
	}
	if !found[0] && !found[1] && !found[2] {
		return JVM{}, fmt.Errorf("%w: process %d (%s)", attach.ErrNotJVM, pid, t.Status.Name)
	}
	j := JVM{PID: pid, NSPID: t.NSPID, UID: t.UID, HotSpot: found[0], Attachable: true}
	j.Container = j.NSPID != pid || !sameFile(t.TmpDir(), "/tmp")
	if path, err := hsperf.Find(t.TmpDir(), t.NSPID, t.UID); err == nil {
		if d, err := hsperf.ReadFile(ctx, path); d != nil {
			_ = err // partial data is still useful for listing
			j.PerfData = path
			j.Command = d.JavaCommand()
			if ok, known := d.AttachSupported(); known {
				j.Attachable = ok
			}
		}
	}
	if j.Command == "" {
		if args, err := procfs.Default.Cmdline(pid); err == nil {
			j.Command = CommandFromArgs(args)
		}
	}
	j.MainClass, _, _ = strings.Cut(j.Command, " ")
	return j, nil
}

func inspect(ctx context.Context, pid int) (JVM, bool) {
	j, err := Inspect(ctx, pid)
	return j, err == nil
}

func sameFile(a, b string) bool {
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

// optionsWithValue are java launcher options whose value is the next word.
var optionsWithValue = map[string]bool{
	"-cp": true, "-classpath": true, "--class-path": true, "-p": true, "--module-path": true,
	"--upgrade-module-path": true, "--add-modules": true, "--enable-native-access": true,
	"--limit-modules": true, "--add-reads": true, "--add-exports": true, "--add-opens": true,
	"--patch-module": true, "--source": true, "-d": true, "--describe-module": true,
}

// CommandFromArgs reconstructs what the JVM reports as sun.rt.javaCommand from a java command line:
// the main class, the jar (-jar) or the module/main class (-m), followed by the program arguments.
func CommandFromArgs(args []string) string {
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-jar" || a == "-m" || a == "--module":
			if i+1 < len(args) {
				return strings.Join(args[i+1:], " ")
			}
			return ""
		case strings.HasPrefix(a, "--module="):
			return strings.Join(append([]string{strings.TrimPrefix(a, "--module=")}, args[i+1:]...), " ")
		case optionsWithValue[a]:
			i++
		case strings.HasPrefix(a, "-"):
		default:
			return strings.Join(args[i:], " ")
		}
	}
	if len(args) > 0 {
		return filepath.Base(args[0])
	}
	return ""
}

// ErrNoMatch is returned by Select when nothing matches.
var ErrNoMatch = errors.New("no matching JVM")

// Select resolves jcmd's target argument against the JVMs on the machine: a pid (used as-is, even if
// List does not show it), "0" for every attachable HotSpot JVM, or a substring of the main class.
func Select(ctx context.Context, target string) ([]int, error) {
	if n, err := strconv.Atoi(target); err == nil && n != 0 {
		return []int{n}, nil
	}
	jvms, err := List(ctx)
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, j := range jvms {
		if !j.HotSpot || !j.Attachable {
			continue
		}
		if target == "0" || strings.Contains(j.MainClass, target) {
			pids = append(pids, j.PID)
		}
	}
	if len(pids) == 0 {
		return nil, fmt.Errorf("%w: could not find any processes matching: '%s'", ErrNoMatch, target)
	}
	return pids, nil
}
