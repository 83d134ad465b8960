package procfs

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/internal/procerr"
)

// Handle is a hold on one process (a pidfd): unlike its pid, it cannot come to name another process.
type Handle struct{ fd int }

// OpenHandle takes a hold on process pid; a process that is gone is procerr.ErrProcessGone.
func OpenHandle(pid int) (*Handle, error) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		if isNoProcess(err) {
			return nil, fmt.Errorf("%w: %d", procerr.ErrProcessGone, pid)
		}
		return nil, fmt.Errorf("open a pidfd for process %d: %w", pid, err)
	}
	return &Handle{fd: fd}, nil
}

// Exited reports, without waiting, whether the process has exited (a zombie has).
func (h *Handle) Exited() bool { return Exited(h.fd) }

// Close releases the hold.
func (h *Handle) Close() error { return unix.Close(h.fd) }
