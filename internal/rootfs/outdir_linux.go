package rootfs

import (
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// OpenOutputDir opens the directory name, a directory of the caller's own choosing for its output (a tool's -o), with
// flags (O_PATH or O_RDONLY, O_DIRECTORY is added), resolving it as the kernel does with
// fs.protected_symlinks on, whatever the host's setting: a symbolic link in a sticky directory that
// others can write in (/tmp) is followed only when it belongs to the caller or to the directory's
// owner. Another user's link there (/tmp/dumps -> /etc/cron.d) would otherwise choose where a root
// tool writes. The error for such a link wraps ErrUnsafe. /proc's links (/proc/<pid>/root) are
// followed by the kernel.
func OpenOutputDir(name string, flags int) (int, error) {
	root, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: "/", Err: err}
	}
	euid := unix.Geteuid()
	wk := &walker{root: root, start: root, startPath: "/", show: func(p string) string { return p },
		kernelLinks: true,
		rule: func(d dir, entry string, st unix.Stat_t) error {
			if st.Mode&unix.S_IFMT == unix.S_IFLNK && d.st.Mode&unix.S_ISVTX != 0 && d.st.Mode&0o002 != 0 &&
				int(st.Uid) != euid && st.Uid != d.st.Uid {
				return fmt.Errorf("%w: %s: %s is a symbolic link of uid %d in a sticky directory every user can write in; not following it (use the directory it points to)",
					ErrUnsafe, name, joinPath(d.path, entry), st.Uid)
			}
			return nil
		}}
	defer wk.close()
	if !strings.HasPrefix(name, "/") {
		cwd, err := unix.Open(".", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, &os.PathError{Op: "open", Path: ".", Err: err}
		}
		wk.start, wk.startPath = cwd, "."
	}
	d, err := wk.walk(wk.start, wk.startPath, name)
	if err != nil {
		return -1, err
	}
	if flags&^unix.O_CLOEXEC == unix.O_PATH {
		return d.fd, nil
	}
	fd, err := unix.Openat(d.fd, ".", flags|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	unix.Close(d.fd)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: name, Err: err}
	}
	return fd, nil
}
