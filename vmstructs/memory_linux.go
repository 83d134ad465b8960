package vmstructs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/internal/procfs"
)

// ProcessMemory reads a live process through /proc/<pid>/mem (pread), falling back to
// process_vm_readv where /proc/<pid>/mem cannot be opened. Neither stops the target.
type ProcessMemory struct {
	pid int
	f   *os.File // nil: process_vm_readv
}

// OpenProcessMemory opens the address space of pid. It needs ptrace access (same uid and a dumpable
// target, or CAP_SYS_PTRACE).
func OpenProcessMemory(pid int) (*ProcessMemory, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/mem")
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("open memory of %d: %w", pid, err)
		}
		// process_vm_readv has the same permission rules but works where /proc is restricted.
		return &ProcessMemory{pid: pid}, nil
	}
	return &ProcessMemory{pid: pid, f: f}, nil
}

// Close releases the file.
func (m *ProcessMemory) Close() error {
	if m.f != nil {
		return m.f.Close()
	}
	return nil
}

// ReadAt implements Memory.
func (m *ProcessMemory) ReadAt(p []byte, addr uint64) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if m.f != nil {
		if addr > 1<<63-1 {
			return 0, &FaultError{Addr: addr, Len: len(p), Err: unix.EFAULT}
		}
		n, err := m.f.ReadAt(p, int64(addr))
		if n == len(p) {
			return n, nil
		}
		if err == nil {
			err = unix.EFAULT
		}
		return n, &FaultError{Addr: addr, Len: len(p), Err: gone(m.pid, err)}
	}
	return readv(m.pid, p, addr)
}

// gone turns the error of a failed read into ErrProcessGone when the process has exited: reads
// of /proc/<pid>/mem then return nothing (EOF) and process_vm_readv fails with ESRCH.
func gone(pid int, err error) error {
	// A live process answers an unmapped address with EIO or EFAULT, which walkers of untrusted
	// memory meet all the time: only the two errors of an exited one are worth a look at /proc.
	if errors.Is(err, io.EOF) {
		// /proc/<pid>/mem reads nothing only once the address space it was opened on has no user left
		// (the kernel's mem_rw: mmget_not_zero fails): every thread has exited, or the process exec'd.
		// The process may still look alive then: its pidfd signals only after the thread group's exit
		// is reported, which a JVM killed with a hundred threads reaches well after its memory is gone
		// (seen: gjmaps reported "read ... EOF" for a JVM killed with SIGKILL under it).
		return fmt.Errorf("%w: process %d exited while being read (its address space is gone: %w)", ErrProcessGone, pid, err)
	}
	if !errors.Is(err, unix.ESRCH) {
		return err
	}
	if procfs.Default.Alive(pid) {
		return err
	}
	return fmt.Errorf("%w: process %d exited while being read (%w)", ErrProcessGone, pid, err)
}

// readv is process_vm_readv for one range.
func readv(pid int, p []byte, addr uint64) (int, error) {
	local := []unix.Iovec{{Base: &p[0]}}
	local[0].SetLen(len(p))
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(p)}}
	n, err := unix.ProcessVMReadv(pid, local, remote, 0)
	if n == len(p) {
		return n, nil
	}
	if err == nil {
		err = unix.EFAULT
	}
	return max(n, 0), &FaultError{Addr: addr, Len: len(p), Err: gone(pid, err)}
}

// VMReadvMemory reads a live process with process_vm_readv only.
type VMReadvMemory struct{ PID int }

// ReadAt implements Memory.
func (m VMReadvMemory) ReadAt(p []byte, addr uint64) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	return readv(m.PID, p, addr)
}
