package vmstructs

import (
	"context"
	"fmt"
)

// OpenCoreFile reads the VMStructs of a JVM from an ELF core file (gcore).
func OpenCoreFile(ctx context.Context, path string) (*JVM, error) {
	return nil, fmt.Errorf("vmstructs: core files: %w", ErrNotSupported)
}
