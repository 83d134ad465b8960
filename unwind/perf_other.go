//go:build !(linux && amd64)

package unwind

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jvmkit/jvmkit/vmstructs"
)

// SamplerOptions tune a Sampler.
type SamplerOptions struct {
	Frequency  int
	StackBytes int
	NoKernel   bool
	ThreadPoll time.Duration
}

// ErrProcessExited is returned by Run when the sampled process exited.
var ErrProcessExited = errors.New("process exited")

// Profile is supported on linux/amd64 only.
func (w *Walker) Profile(ctx context.Context, opts SamplerOptions, fn func(*Sample, *Stack)) error {
	return fmt.Errorf("unwind: profile: %w", vmstructs.ErrNotSupported)
}
