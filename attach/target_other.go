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
