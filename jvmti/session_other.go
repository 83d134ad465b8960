//go:build !linux

package jvmti

import (
	"context"
	"fmt"

	"github.com/jvmkit/jvmkit/attach"
)

// Session is Linux-only.
type Session struct{}

// Open fails with ErrNotSupported: agents are staged through /proc.
func Open(_ context.Context, pid int, _ attach.Logger) (*Session, error) {
	return nil, fmt.Errorf("jvmti: process %d: %w", pid, ErrNotSupported)
}

// HeapSample fails with ErrNotSupported: agents are staged through /proc.
func HeapSample(_ context.Context, pid int, _ HeapSampleOptions) (*HeapProfile, error) {
	return nil, fmt.Errorf("jvmti: process %d: %w", pid, ErrNotSupported)
}
