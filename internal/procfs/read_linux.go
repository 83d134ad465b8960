package procfs

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// readFile reads a small file of /proc whole, as os.ReadFile does but with plain system calls: a file
// of /proc is never pollable, and os.File's attempt to register it with the runtime's poller (four fcntl
// and an epoll_ctl), its fstat and its buffer growing from 512 bytes cost a warm gjcmd 0.1 ms per
// /proc/<pid>/status (docs/benchmarks.md). Errors are *os.PathError, as os.ReadFile's.
func readFile(path string) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	for errors.Is(err, unix.EINTR) {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	b := make([]byte, 0, 4096)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := unix.Read(fd, b[len(b):cap(b)])
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		case n == 0:
			return b, nil
		}
		b = b[:len(b)+n]
	}
}
