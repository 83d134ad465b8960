package usdt

import (
	"errors"
	"fmt"
	"os"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/internal/procfs"
)

// uprober attaches programs to probe sites as uprobes, with the PID filter and the semaphore's
// reference counter, opening each file once. Tracer and Aggregator share it.
type uprober struct {
	pid  int
	exes map[string]*link.Executable
}

func (u *uprober) attach(file string, p *Probe, prog *ebpf.Program) (link.Link, error) {
	ex := u.exes[file]
	if ex == nil {
		var err error
		if ex, err = link.OpenExecutable(file); err != nil {
			return nil, fmt.Errorf("usdt: %w", err)
		}
		if u.exes == nil {
			u.exes = make(map[string]*link.Executable)
		}
		u.exes[file] = ex
	}
	l, err := ex.Uprobe("", prog, &link.UprobeOptions{
		Address:      p.FileOffset,
		PID:          u.pid,
		RefCtrOffset: p.SemaphoreOffset,
	})
	if err != nil {
		if u.pid != 0 && errors.Is(err, unix.ESRCH) {
			return nil, fmt.Errorf("%w: %d", ErrProcessGone, u.pid)
		}
		return nil, bpfError(fmt.Sprintf("attach uprobe for probe %s at %s+%#x", p, file, p.FileOffset), err)
	}
	return l, nil
}

// watchExit calls onExit once process pid has exited, unless done is closed first. Without pidfds
// (Linux < 5.3) it never calls it.
func watchExit(pid int, done <-chan struct{}, onExit func()) error {
	w, err := procfs.Default.WatchExitOnly(pid)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%w: %d", ErrProcessGone, pid)
		}
		return nil
	}
	go func() {
		defer w.Close()
		select {
		case <-done:
		case <-w.Exited():
			onExit()
		}
	}()
	return nil
}
