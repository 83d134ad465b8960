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

// CPUSampler is supported on linux/amd64 only.
type CPUSampler struct{}

// NewCPUSampler is supported on linux/amd64 only.
func NewCPUSampler(SamplerOptions) (*CPUSampler, error) {
	return nil, fmt.Errorf("unwind: cpu sampler: %w", ErrNotSupported)
}

// Add is supported on linux/amd64 only.
func (*CPUSampler) Add(int) error { return ErrNotSupported }

// Remove is supported on linux/amd64 only.
func (*CPUSampler) Remove(int) {}

// DrainEvery is supported on linux/amd64 only.
func (*CPUSampler) DrainEvery() time.Duration { return time.Second }

// Drain is supported on linux/amd64 only.
func (*CPUSampler) Drain(func(*Sample)) {}

// Lost is supported on linux/amd64 only.
func (*CPUSampler) Lost() uint64 { return 0 }

// Close is supported on linux/amd64 only.
func (*CPUSampler) Close() error { return nil }
