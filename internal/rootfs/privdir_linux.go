package rootfs

import (
	"errors"
	"fmt"
	"strings"

	"github.com/jvmkit/jvmkit/internal/procfs"
	"golang.org/x/sys/unix"
)

// MakePrivateDir returns a directory named name (or name-<random> when another user has taken name)
// in the directory parent, as the process sees both, that belongs to the process's user with mode 0700,
// creating it when there is none: a place where nobody but that user and root can put anything, for
// names the process chooses itself in a parent others can write in (JFR's repository in /tmp). parent
// is checked as Prepare checks the directories on a path; an existing directory is taken only when it
// is the process's user's, not a link, and open to nobody else.
func (pr *Process) MakePrivateDir(parent, name string) (string, error) {
	if name == "" || strings.Contains(name, "/") || name == "." || name == ".." {
		return "", fmt.Errorf("rootfs: %q is not a directory name", name)
	}
	wk, err := pr.startWalk(parent)
	if err != nil {
		return "", err
	}
	defer wk.close()
	d, err := wk.walk(wk.start, wk.startPath, parent)
	if err != nil {
		return "", err
	}
	defer unix.Close(d.fd)
	if err := pr.ownNameIn(d, name); err != nil {
		return "", err
	}
	// O_PATH descriptors cannot be used for mkdirat: open the directory for real, the same one.
	dfd, err := unix.Openat(d.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", fmt.Errorf("rootfs: open %s: %w", pr.show(d.path), err)
	}
	defer unix.Close(dfd)
	for try := range 8 {
		n := name
		if try > 0 {
			n += "-" + RandomHex(6)
		}
		ok, err := pr.privateDirAt(dfd, n)
		if err != nil {
			return "", fmt.Errorf("rootfs: %s: %w", pr.show(joinPath(d.path, n)), err)
		}
		if ok {
			return joinPath(d.path, n), nil
		}
	}
	return "", fmt.Errorf("%w: %s: other users keep taking the names of a private directory there", ErrUnsafe, pr.show(d.path))
}

// privateDirAt makes name in dfd the process's private directory, or takes it if it is one already;
// false when the name is something else (another user's, a link, a file).
func (pr *Process) privateDirAt(dfd int, name string) (bool, error) {
	created := true
	if err := unix.Mkdirat(dfd, name, 0o700); errors.Is(err, unix.EEXIST) {
		created = false
	} else if err != nil {
		return false, err
	}
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return false, err
	}
	if created && int(st.Uid) == unix.Geteuid() && int(st.Uid) != pr.UID {
		// Ours, just made (nobody else can chown a directory to us): hand it to the process's user.
		if err := unix.Fchown(fd, pr.UID, pr.GID); err != nil {
			return false, procfs.Explain(err, procfs.CapChown)
		}
		if err := unix.Fstat(fd, &st); err != nil {
			return false, err
		}
	}
	if int(st.Uid) != pr.UID || st.Mode&0o077 != 0 {
		return false, nil
	}
	return true, nil
}
