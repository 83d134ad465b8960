//go:build !(linux && amd64)

package unwind

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jvmkit/jvmkit/vmstructs"
)

// ErrThreadGone is returned for a thread that exited before or while it was stopped.
var ErrThreadGone = errors.New("thread exited")

// StopThread is supported on linux/amd64 only.
func StopThread(ctx context.Context, tid int, timeout time.Duration, fn func(Regs) error) error {
	return fmt.Errorf("unwind: stop thread: %w", vmstructs.ErrNotSupported)
}
