//go:build !linux

package jitlog

import (
	"context"

	"github.com/jvmkit/jvmkit/perfmap"
)

// RecordJVMs records the JIT code of HotSpot JVMs; it needs Linux (uprobes) and returns ErrNotSupported
// elsewhere.
func RecordJVMs(_ context.Context, _ []int, _ *Writer, _ RecordOptions) (RecordStats, error) {
	return RecordStats{}, perfmap.ErrNotSupported
}
