//go:build !linux

package hsperf

import (
	"errors"
	"fmt"
	"os"
)

func openNoFollow(path string) (*os.File, error) { return os.Open(path) }

// Find is implemented on Linux only; see file_linux.go.
func Find(tmp string, nspid int, uid int) (string, error) {
	return "", fmt.Errorf("hsperf: find pid %d under %s: %w", nspid, tmp, errors.ErrUnsupported)
}
