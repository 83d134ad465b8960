//go:build !linux

package procfs

import (
	"fmt"

	"github.com/jvmkit/jvmkit/internal/procerr"
)

// Handle is a hold on one process; Linux only (pidfds).
type Handle struct{}

// OpenHandle is supported on Linux only.
func OpenHandle(pid int) (*Handle, error) {
	return nil, fmt.Errorf("process %d: pidfd: %w", pid, procerr.ErrNotSupported)
}

// Exited reports whether the process has exited; never known here.
func (*Handle) Exited() bool { return false }

// Close releases the hold.
func (*Handle) Close() error { return nil }
