package hsperf

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jvmkit/jvmkit/internal/rootfs"
)

// Retry policy of ReadFile. The jvmstat reader waits up to 5 s for 'accessible'; the flag is set
// early in JVM startup, so half a second is plenty, and a caller in a hurry passes a deadline.
const (
	retryWait         = 20 * time.Millisecond
	maxAccessRetries  = 25
	maxCorruptRetries = 3
	maxFileSize       = 1 << 28 // far above any -XX:PerfDataMemorySize seen in practice
)

// ReadFile reads and parses a live hsperfdata file. The JVM may be writing it: while the prologue
// says it is not accessible, or the image looks torn (HotSpot counts a new entry before writing
// it), ReadFile reads it again after a short sleep, a bounded number of times and never past ctx.
// If it still fails it returns what it has with an error (wrapping ErrNotAccessible, ErrCorrupt,
// ErrVersion or ctx.Err()). The final path component must be a regular file, not a symlink.
func ReadFile(ctx context.Context, path string) (*Data, error) {
	var (
		d   *Data
		err error
	)
	torn, waited := 0, 0
	for {
		var b []byte
		b, err = readImage(path)
		if err != nil {
			return nil, fmt.Errorf("hsperf: %w", err)
		}
		d, err = Parse(b)
		switch {
		case err == nil && d.Accessible:
			return d, nil
		case err == nil:
			if waited >= maxAccessRetries {
				return d, fmt.Errorf("hsperf: %s: %w", path, ErrNotAccessible)
			}
		case errors.Is(err, ErrCorrupt):
			torn++
			if torn > maxCorruptRetries {
				return d, withPath(err, path)
			}
		default:
			return d, withPath(err, path)
		}
		waited++
		t := time.NewTimer(retryWait)
		select {
		case <-ctx.Done():
			t.Stop()
			if err == nil {
				err = fmt.Errorf("hsperf: %s: %w", path, ErrNotAccessible)
			}
			return d, fmt.Errorf("%w (gave up: %w)", withPath(err, path), ctx.Err())
		case <-t.C:
		}
	}
}

func withPath(err error, path string) error {
	var fe *FormatError
	if errors.As(err, &fe) && fe.Path == "" {
		fe.Path = path
	}
	return err
}

func readImage(path string) ([]byte, error) {
	f, err := openNoFollow(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return rootfs.ReadRegular(f, path, maxFileSize)
}
