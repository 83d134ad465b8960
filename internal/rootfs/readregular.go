package rootfs

import (
	"fmt"
	"io"
	"os"
)

// ReadRegular reads all of f, opened from name, which must be a regular file of at most max bytes: a
// FIFO, device or directory is refused before anything is read (it could block, or never end), and a
// larger file is refused rather than read in part. Open such files with O_NONBLOCK (and O_NOCTTY) so
// that the open itself cannot block or give the caller a terminal.
func ReadRegular(f *os.File, name string, max int64) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file (%v)", name, fi.Mode().Type())
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s: larger than %d bytes", name, max)
	}
	return b, nil
}
