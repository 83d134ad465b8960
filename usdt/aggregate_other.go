//go:build !linux

package usdt

import (
	"context"
	"fmt"
)

// Aggregator is a running aggregation; Aggregate always fails on this platform.
type Aggregator struct{}

// Aggregate returns ErrNotSupported: uprobes are a Linux feature.
func Aggregate(_ context.Context, _ []Site, _ AggregateOptions) (*Aggregator, error) {
	return nil, fmt.Errorf("usdt: aggregate: %w", ErrNotSupported)
}

// Sites returns nil.
func (a *Aggregator) Sites() []Site { return nil }

// Exited returns nil.
func (a *Aggregator) Exited() <-chan struct{} { return nil }

// Snapshot returns ErrNotSupported.
func (a *Aggregator) Snapshot() ([]Bucket, error) { return nil, ErrNotSupported }

// Missed returns ErrNotSupported.
func (a *Aggregator) Missed() (uint64, error) { return 0, ErrNotSupported }

// Stop does nothing.
func (a *Aggregator) Stop() error { return nil }

// Freeze is not supported on this platform.
func (a *Aggregator) Freeze() error { return ErrNotSupported }

// Close does nothing.
func (a *Aggregator) Close() error { return nil }

// SetThread returns ErrNotSupported.
func (a *Aggregator) SetThread(WeightedThread) error { return ErrNotSupported }

// DeleteThread returns ErrNotSupported.
func (a *Aggregator) DeleteThread(int) error { return ErrNotSupported }

// Windows is not supported on this system.
func (a *Aggregator) Windows() (WindowCounts, error) { return WindowCounts{}, ErrNotSupported }
