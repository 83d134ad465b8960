//go:build !linux

package vmstructs

import (
	"context"
	"fmt"
)

// Open reads the VMStructs of a live JVM; only Linux is supported.
func Open(ctx context.Context, pid int) (*JVM, error) {
	return nil, fmt.Errorf("vmstructs: live processes: %w", ErrUnsupportedPlatform)
}
