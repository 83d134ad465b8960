package jcmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/jvmkit/jvmkit/attach"
	"github.com/jvmkit/jvmkit/internal/hsperf"
	"github.com/jvmkit/jvmkit/internal/procfs"
)

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
			return JVM{}, procfs.Wrap(pid, "memory map", err)
		}
		return JVM{}, fmt.Errorf("%w: %d", attach.ErrProcessGone, pid)
	}
	if !found[0] && !found[1] && !found[2] {
		return JVM{}, fmt.Errorf("%w: process %d (%s)", attach.ErrNotJVM, pid, t.Status.Name)
	}
	j := JVM{PID: pid, NSPID: t.NSPID, UID: t.UID, HotSpot: found[0], Attachable: true}
	tmp, err := t.OpenTmp() // its /tmp as it resolves it, inside its root
	j.Container = j.NSPID != pid || err != nil || !sameFile(tmp.Path(), "/tmp")
	if err == nil {
		defer tmp.Close()
		if path, err := hsperf.Find(tmp.Path(), t.NSPID, t.UID); err == nil {
			if d, err := hsperf.ReadFile(ctx, path); d != nil {
				_ = err // partial data is still useful for listing
				j.PerfData = tmp.Shown(path)
				j.Command = d.JavaCommand()
				if ok, known := d.AttachSupported(); known {
					j.Attachable = ok
				}
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
