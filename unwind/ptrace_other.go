//go:build !(linux && amd64)

package unwind

import (
	"context"
	"fmt"
	"time"
)

// StopThread is supported on linux/amd64 only.
func StopThread(ctx context.Context, tid int, timeout time.Duration, fn func(Regs) error) error {
	return fmt.Errorf("unwind: stop thread: %w", ErrNotSupported)
}
