//go:build !(linux && amd64)

package unwind

import (
	"context"
	"fmt"
	"time"
)

// SamplerOptions tune a Sampler.
type SamplerOptions struct {
	Frequency  int
	StackBytes int
	NoKernel   bool
	ThreadPoll time.Duration
	DrainEvery time.Duration
}

// Profile is supported on linux/amd64 only.
func (w *Walker) Profile(ctx context.Context, opts SamplerOptions, fn func(*Sample, *Stack)) error {
	return fmt.Errorf("unwind: profile: %w", ErrNotSupported)
}
