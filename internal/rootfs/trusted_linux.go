package rootfs

import (
	"fmt"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// CheckTrusted refuses a file that the process is to load and run (a JVMTI agent, a native library),
// path as the process sees it, when anyone but trusted users (root, the process's user) could change
// what it loads: a directory on the way, a symbolic link, or the file itself that another user owns or
// may write (a sticky directory's entries must be trusted users' too). The same walk as Prepare's;
// symbolic links are followed, each checked.
func (pr *Process) CheckTrusted(p string) error {
	for range maxLinks {
		wk, err := pr.startWalk(p)
		if err != nil {
			return err
		}
		parent, name := path.Split(p)
		if name == "" || name == "." || name == ".." {
			wk.close()
			return fmt.Errorf("%s: not a file name", pr.show(p))
		}
		d, err := wk.walk(wk.start, wk.startPath, parent)
		if err != nil {
			wk.close()
			return err
		}
		var st unix.Stat_t
		err = unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
		if err == nil {
			err = wk.rule(d, name, st)
		}
		var target string
		if err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			buf := make([]byte, unix.PathMax)
			n, rerr := unix.Readlinkat(d.fd, name, buf)
			if rerr != nil {
				err = rerr
			}
			target = string(buf[:max(n, 0)])
		}
		shown := pr.show(joinPath(d.path, name))
		unix.Close(d.fd)
		wk.close()
		switch {
		case err != nil:
			return &os.PathError{Op: "check", Path: shown, Err: err}
		case st.Mode&unix.S_IFMT == unix.S_IFLNK:
			if !strings.HasPrefix(target, "/") && parent != "" {
				target = strings.TrimSuffix(parent, "/") + "/" + target // relative to the link's directory
			}
			p = target
			continue
		case st.Mode&unix.S_IFMT != unix.S_IFREG:
			return fmt.Errorf("%s: %w (%s)", shown, ErrNotRegular, Kind(st.Mode))
		case !pr.trusts(st.Uid) || st.Mode&0o022 != 0:
			return fmt.Errorf("%w: %s is uid %d's, mode %#o: %s; use a file that only root and uid %d can change",
				ErrUnsafe, shown, st.Uid, st.Mode&0o7777, whoCanWrite(st), pr.UID)
		}
		return nil
	}
	return &os.PathError{Op: "resolve", Path: pr.show(p), Err: unix.ELOOP}
}
