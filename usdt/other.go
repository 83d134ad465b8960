//go:build !linux

package usdt

import (
	"context"
	"fmt"
)

// Modules returns ErrNotSupported: it reads /proc.
func Modules(_ context.Context, pid int) ([]Module, error) {
	return nil, fmt.Errorf("usdt: modules of process %d: %w", pid, ErrNotSupported)
}

// Tracer is a running trace; Attach always fails on this platform.
type Tracer struct{}

// Attach returns ErrNotSupported: uprobes are a Linux feature.
func Attach(_ context.Context, _ []Site, _ Options) (*Tracer, error) {
	return nil, fmt.Errorf("usdt: attach: %w", ErrNotSupported)
}

// Sites returns nil.
func (t *Tracer) Sites() []Site { return nil }

// Read returns ErrNotSupported.
func (t *Tracer) Read() (Event, error) { return Event{}, ErrNotSupported }

// Stop does nothing.
func (t *Tracer) Stop() error { return nil }

// Exited is never closed on this platform.
func (t *Tracer) Exited() <-chan struct{} { return nil }

// Drops returns ErrNotSupported.
func (t *Tracer) Drops() ([]uint64, error) { return nil, ErrNotSupported }

// Close does nothing.
func (t *Tracer) Close() error { return nil }

// SetThread always fails on this platform.
func (t *Tracer) SetThread(WeightedThread) error { return ErrNotSupported }

// DeleteThread always fails on this platform.
func (t *Tracer) DeleteThread(int) error { return ErrNotSupported }
