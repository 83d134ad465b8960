package rootfs

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// Open opens path inside the root directory root (a /proc/<pid>/root link, or "/" for the caller's own)
// with openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS) and returns the descriptor: absolute symbolic
// links and ".." stay inside that root, as they do for the process whose root it is, and /proc magic
// links are refused. Opening root + path instead would resolve an absolute link met inside a container
// against the caller's root: a container could make a tool that runs as root open any host file.
//
// resolve adds RESOLVE_* flags (RESOLVE_NO_SYMLINKS, ...). Errors wrap the errno, and
// errors.ErrUnsupported on kernels without openat2 (before Linux 5.6).
func Open(root, path string, flags int, resolve uint64) (int, error) {
	if !strings.HasPrefix(path, "/") {
		return -1, fmt.Errorf("open %q under %s: not an absolute path", path, root)
	}
	rootFd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: root, Err: err}
	}
	defer unix.Close(rootFd)
	return openIn(rootFd, root, path, flags, resolve)
}

// openIn is Open relative to an open root directory; root is its name for messages.
func openIn(rootFd int, root, path string, flags int, resolve uint64) (int, error) {
	flags |= unix.O_CLOEXEC
	if flags&unix.O_PATH == 0 {
		flags |= unix.O_NOCTTY // openat2 rejects any flag that O_PATH ignores, so only without O_PATH
	}
	how := unix.OpenHow{
		Flags:   uint64(flags),
		Resolve: resolve | unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
	}
	for range 16 {
		fd, err := unix.Openat2(rootFd, path, &how)
		switch {
		case err == nil:
			return fd, nil
		case errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EINTR):
			// RESOLVE_IN_ROOT gives up when a rename or mount races with a lookup through "..".
			continue
		case errors.Is(err, unix.ENOSYS):
			return -1, fmt.Errorf("open %s under %s: %w: openat2 needs Linux 5.6", path, root, errors.ErrUnsupported)
		}
		return -1, &os.PathError{Op: "open", Path: root + path, Err: err}
	}
	return -1, &os.PathError{Op: "open", Path: root + path, Err: unix.EAGAIN}
}

// OpenRegular opens, read-only, the regular file at path inside root (see Open): symbolic links are
// followed as the process whose root it is would follow them. The file is opened non-blocking, so that a
// FIFO planted under the name cannot hang the caller, and anything but a regular file is refused with
// ErrNotRegular; the returned file blocks as usual. name is the file's name for its *os.File.
func OpenRegular(root, path, name string) (*os.File, error) {
	fd, err := Open(root, path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	return regularFile(fd, name, &st)
}

// ReadHead reads the start of the regular file path inside root (as Open resolves it) into buf and
// returns how many bytes it read: all of a file shorter than buf. A FIFO, device or directory is refused
// before anything is read (ErrNotRegular). For small files read in passing, without an *os.File (a warm
// gjcmd reads one: an *os.File costs three more system calls and a finalizer).
func ReadHead(root, path string, buf []byte) (int, error) {
	fd, err := Open(root, path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := checkRegular(fd, path, &st); err != nil {
		return 0, err
	}
	n := 0
	for n < len(buf) {
		m, err := unix.Read(fd, buf[n:])
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return n, &os.PathError{Op: "read", Path: path, Err: err}
		case m == 0:
			return n, nil
		}
		n += m
	}
	return n, nil
}

// regularFile turns fd, opened non-blocking, into a blocking *os.File named name if it is a regular file,
// and fills in st; otherwise it closes fd and fails with ErrNotRegular.
func regularFile(fd int, name string, st *unix.Stat_t) (*os.File, error) {
	if err := checkRegular(fd, name, st); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	return os.NewFile(uintptr(fd), name), nil
}

// checkRegular fills in st for fd and fails with ErrNotRegular unless it is a regular file; name is the
// file's name in the error.
func checkRegular(fd int, name string, st *unix.Stat_t) error {
	if err := unix.Fstat(fd, st); err != nil {
		return &os.PathError{Op: "stat", Path: name, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return &os.PathError{Op: "open", Path: name, Err: fmt.Errorf("%w (%s)", ErrNotRegular, Kind(st.Mode))}
	}
	return nil
}

// Kind names a file type for messages ("a symbolic link", "a FIFO", ...), from a stat mode.
func Kind(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFLNK:
		return "a symbolic link"
	case unix.S_IFREG:
		return "a regular file"
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFCHR, unix.S_IFBLK:
		return "a device"
	}
	return "a special file"
}
