//go:build !linux

package recorder

import (
	"context"

	"github.com/jvmkit/jvmkit/perfmap"
	"github.com/jvmkit/jvmkit/perfmap/jitlog"
)

// Record records the JIT code of HotSpot JVMs; it needs Linux (uprobes) and returns ErrNotSupported
// elsewhere.
func Record(_ context.Context, _ []int, _ *jitlog.Writer, _ Options) (Stats, error) {
	return Stats{}, perfmap.ErrNotSupported
}
