package rootfs

import (
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// OpenOutputDir opens dir, a directory of the caller's own choosing for its output (a tool's -o), with
// flags (O_PATH or O_RDONLY, O_DIRECTORY is added), resolving it as the kernel does with
// fs.protected_symlinks on, whatever the host's setting: a symbolic link in a sticky directory that
// others can write in (/tmp) is followed only when it belongs to the caller or to the directory's
// owner. Another user's link there (/tmp/dumps -> /etc/cron.d) would otherwise choose where a root
// tool writes. The error for such a link wraps ErrUnsafe.
func OpenOutputDir(dir string, flags int) (int, error) {
	start := "."
	if strings.HasPrefix(dir, "/") {
		start = "/"
	}
	cur, err := unix.Open(start, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: start, Err: err}
	}
	fail := func(err error) (int, error) {
		unix.Close(cur)
		return -1, err
	}
	euid := unix.Geteuid()
	queue := strings.Split(dir, "/")
	links := 0
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		if c == "" || c == "." {
			continue
		}
		var st unix.Stat_t
		if err := unix.Fstatat(cur, c, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return fail(&os.PathError{Op: "stat", Path: dir, Err: err})
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			var dst unix.Stat_t
			if err := unix.Fstat(cur, &dst); err != nil {
				return fail(err)
			}
			if dst.Mode&unix.S_ISVTX != 0 && dst.Mode&0o002 != 0 && int(st.Uid) != euid && st.Uid != dst.Uid {
				return fail(fmt.Errorf("%w: %s: %q is a symbolic link of uid %d in a sticky directory every user can write in; not following it (use the directory it points to)",
					ErrUnsafe, dir, c, st.Uid))
			}
			var fs unix.Statfs_t
			if unix.Fstatfs(cur, &fs) == nil && fs.Type == unix.PROC_SUPER_MAGIC {
				// /proc/<pid>/root, /proc/<pid>/cwd: the kernel's links into another process's world,
				// which only the kernel can follow (their text is that process's view).
				next, err := unix.Openat(cur, c, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
				if err != nil {
					return fail(&os.PathError{Op: "open", Path: dir, Err: err})
				}
				unix.Close(cur)
				cur = next
				continue
			}
			if links++; links > maxLinks {
				return fail(&os.PathError{Op: "resolve", Path: dir, Err: unix.ELOOP})
			}
			buf := make([]byte, unix.PathMax)
			n, err := unix.Readlinkat(cur, c, buf)
			if err != nil {
				return fail(&os.PathError{Op: "readlink", Path: dir, Err: err})
			}
			target := string(buf[:n])
			if strings.HasPrefix(target, "/") {
				next, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
				if err != nil {
					return fail(err)
				}
				unix.Close(cur)
				cur = next
			}
			queue = append(strings.Split(target, "/"), queue...)
			continue
		}
		next, err := unix.Openat(cur, c, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return fail(&os.PathError{Op: "open", Path: dir, Err: err})
		}
		unix.Close(cur)
		cur = next
	}
	if flags&^unix.O_CLOEXEC == unix.O_PATH {
		return cur, nil
	}
	fd, err := unix.Openat(cur, ".", flags|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	unix.Close(cur)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	return fd, nil
}
