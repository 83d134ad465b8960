//go:build !linux

package attach

import "fmt"

// Resolve inspects a live process. Only Linux is supported (it reads /proc): elsewhere it fails with
// ErrNotSupported.
func Resolve(pid int) (*Target, error) {
	return nil, fmt.Errorf("attach: inspect process %d: %w", pid, ErrNotSupported)
}

// Container reports whether the target lives in another pid or mount namespace than the caller; those
// namespaces exist on Linux only.
func (t *Target) Container() bool { return false }

// OpenTmp opens the target's /tmp; Resolve returns no Target on this platform.
func (t *Target) OpenTmp() (*Dir, error) {
	return nil, fmt.Errorf("attach: open the /tmp of process %d: %w", t.PID, ErrNotSupported)
}

// Close releases the directory; OpenTmp opens none on this platform.
func (d *Dir) Close() error { return nil }
