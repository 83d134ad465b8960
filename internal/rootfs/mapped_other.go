//go:build !linux

package rootfs

import (
	"errors"
	"os"

	"github.com/jvmkit/jvmkit/internal/procfs"
)

// OpenMapped needs Linux's /proc/<pid>/map_files; elsewhere it fails.
func OpenMapped(procfs.FS, int, procfs.Mapping) (*os.File, error) {
	return nil, errors.New("rootfs: opening another process's mappings needs Linux")
}
