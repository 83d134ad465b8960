//go:build !linux

package attach

import (
	"context"
	"fmt"
	"io"
)

// Dial attaches to the HotSpot JVM with the given pid. Only Linux is supported: elsewhere it fails with
// ErrNotSupported.
func Dial(_ context.Context, pid int, _ *Options) (*VM, error) {
	return nil, fmt.Errorf("attach: dial %d: %w", pid, ErrNotSupported)
}

// Close releases the process handle. Dial returns no VM on this platform, so there is nothing to release.
func (vm *VM) Close() error { return nil }

// Gone is nil: Dial returns no VM on this platform.
func (vm *VM) Gone() error { return nil }

// Frozen tells a JVM its cgroup's freezer holds; nil here.
func (vm *VM) Frozen() error { return nil }

// roundTrip exists so that the platform-neutral operations build; a VM made here cannot connect.
func (vm *VM) roundTrip(context.Context, []byte, io.Writer, bool) error {
	return fmt.Errorf("attach: connect: %w", ErrNotSupported)
}
