//go:build unix

package jfr

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Open maps the recording at path into memory and parses it (see Parse). Close unmaps it. A damaged
// recording returns the Recording with what could be read, and the damage as the error.
func Open(path string) (*Recording, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() == 0 {
		// Pipes, devices and empty files: read what there is.
		return openRead(f, path)
	}
	if fi.Size() != int64(int(fi.Size())) {
		return nil, fmt.Errorf("%s: too large to map", path)
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return openRead(f, path)
	}
	r, perr := Parse(data)
	if r == nil {
		_ = unix.Munmap(data)
		return nil, fmt.Errorf("%s: %w", path, perr)
	}
	r.unmap = func() error { return unix.Munmap(data) }
	if perr != nil {
		return r, fmt.Errorf("%s: %w", path, perr)
	}
	return r, nil
}
