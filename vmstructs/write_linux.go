package vmstructs

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strconv"

	"github.com/jvmkit/jvmkit/internal/procfs"
	"golang.org/x/sys/unix"
)

// ProcessMemoryWriter writes into a live process through /proc/<pid>/mem (pwrite). The kernel writes
// even into pages the process mapped read-only (copy-on-write, as for a debugger's breakpoints), so
// every caller must check where it writes: SetBoolFlag does.
type ProcessMemoryWriter struct {
	pid int
	f   *os.File
}

// OpenProcessMemoryWriter opens the memory of pid for writing. It needs ptrace access (root, or the
// same uid and a dumpable target when ptrace_scope allows it).
func OpenProcessMemoryWriter(pid int) (*ProcessMemoryWriter, error) {
	f, err := os.OpenFile("/proc/"+strconv.Itoa(pid)+"/mem", os.O_RDWR, 0)
	if err != nil {
		switch {
		case errors.Is(err, os.ErrNotExist):
			return nil, fmt.Errorf("%w: %d", ErrProcessGone, pid)
		case errors.Is(err, os.ErrPermission):
			remedy := "run as root (writing needs ptrace attach access: the same user only where kernel.yama.ptrace_scope is 0)"
			if os.Geteuid() == 0 {
				remedy = procfs.Remedy("", procfs.CapSysPtrace, procfs.CapDacOverride)
			}
			return nil, fmt.Errorf("%w: cannot open the memory of %d for writing; %s", ErrPermission, pid, remedy)
		}
		return nil, fmt.Errorf("vmstructs: open memory of %d for writing: %w", pid, err)
	}
	return &ProcessMemoryWriter{pid: pid, f: f}, nil
}

// PID implements Writer.
func (w *ProcessMemoryWriter) PID() int { return w.pid }

// WriteAt implements Writer: pwrite of p at addr.
func (w *ProcessMemoryWriter) WriteAt(p []byte, addr uint64) (int, error) {
	if addr > 1<<63-1 {
		return 0, &FaultError{Addr: addr, Len: len(p), Err: unix.EFAULT}
	}
	n, err := w.f.WriteAt(p, int64(addr))
	if err != nil {
		return n, &FaultError{Addr: addr, Len: len(p), Err: err}
	}
	return n, nil
}

// Close releases the file.
func (w *ProcessMemoryWriter) Close() error { return w.f.Close() }

// checkFlagAddr accepts addr only inside libjvm's writable data: a writable, private mapping of
// libjvm.so (.data) or the anonymous writable mapping right after one (.bss beyond the file). That is
// where HotSpot keeps every flag variable; anything else (code, .rodata, RELRO, the heap, another
// library) means the table is not what we think.
func checkFlagAddr(pid int, lib string, addr uint64) error {
	maps, err := procfs.Default.Maps(pid)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%w: %d", ErrProcessGone, pid)
		}
		return err
	}
	isLib := func(m procfs.Mapping) bool {
		return m.Path == lib || lib == "" && path.Base(m.Path) == "libjvm.so"
	}
	for i, m := range maps {
		if addr < m.Start || addr >= m.End {
			continue
		}
		if len(m.Perms) < 4 || m.Perms[0] != 'r' || m.Perms[1] != 'w' || m.Perms[3] != 'p' {
			return fmt.Errorf("%w: %#x is in a %s mapping, not writable data", ErrFlagNotWritable, addr, m.Perms)
		}
		if isLib(m) {
			return nil
		}
		if m.Path == "" && i > 0 && maps[i-1].End == m.Start && isLib(maps[i-1]) {
			return nil
		}
		return fmt.Errorf("%w: %#x is outside libjvm's data (in %q)", ErrFlagNotWritable, addr, m.Path)
	}
	return fmt.Errorf("%w: %#x is not mapped", ErrFlagNotWritable, addr)
}
