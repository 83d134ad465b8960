//go:build !linux

package vmstructs

import (
	"context"
	"fmt"

	"github.com/jvmkit/jvmkit/attach"
)

// Open reads the VMStructs of a live JVM; only Linux is supported.
func Open(ctx context.Context, pid int) (*JVM, error) {
	return nil, fmt.Errorf("vmstructs: live processes: %w", attach.ErrNotSupported)
}
