package attach

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/internal/procfs"
	"github.com/jvmkit/jvmkit/internal/rootfs"
)

// Resolve inspects a live process. It fails with ErrProcessGone for a pid that does not exist and
// ErrPermission when the caller may not inspect it.
func Resolve(pid int) (*Target, error) {
	return resolve(procfs.Default, pid)
}

func resolve(pfs procfs.FS, pid int) (*Target, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("%w: invalid pid %d", ErrProcessGone, pid)
	}
	st, err := pfs.Status(pid)
	if err != nil {
		return nil, procErr(pid, err)
	}
	if st.Dead() {
		if err := pfs.GoneErr(pid); err != nil { // how it ended, while it is a zombie
			return nil, err
		}
		return nil, fmt.Errorf("%w: process %d has exited (%s)", ErrProcessGone, pid, st.StateName())
	}
	if st.TGID != pid {
		// /proc/<tid> of a thread also resolves; attach needs the process.
		return nil, fmt.Errorf("%w: %d is a thread of process %d", ErrProcessGone, pid, st.TGID)
	}
	return &Target{
		PID:    pid,
		NSPID:  st.NSPID(),
		UID:    st.EUID(),
		GID:    st.EGID(),
		Root:   pfs.Path(pid, "root"),
		Cwd:    pfs.Path(pid, "cwd"),
		Status: st,
	}, nil
}

func (t *Target) triggerName() string { return ".attach_pid" + strconv.Itoa(t.NSPID) }

// current reads the process's status now, leaving the Target as it is (it may be shared); an exited
// process is ErrProcessGone.
func (t *Target) current() (procfs.Status, error) {
	st, err := procfs.Default.Status(t.PID)
	if err != nil {
		return st, procErr(t.PID, err)
	}
	if st.Dead() {
		return st, fmt.Errorf("%w: process %d exited while attaching", ErrProcessGone, t.PID)
	}
	return st, nil
}

// checkJVM tells HotSpot JVMs from everything else by the libraries mapped into the process.
func (t *Target) checkJVM() error {
	found, err := procfs.Default.MapsContain(t.PID, "/libjvm.so", "/libj9vm29.so", "/libopenj9.so")
	if err != nil {
		return procfs.Wrap(t.PID, "memory maps", err) // another user's process: /proc/<pid>/maps is denied
	}
	switch {
	case found[0]:
		return nil
	case found[1], found[2]:
		return fmt.Errorf("%w: process %d is an OpenJ9 JVM; it uses a different attach mechanism (use OpenJ9's own jcmd)", ErrNotHotSpot, t.PID)
	}
	if err := procfs.Default.GoneErr(t.PID); err != nil { // a zombie's maps read empty
		return err
	}
	return fmt.Errorf("%w: process %d (%s) has no libjvm.so mapped", ErrNotJVM, t.PID, t.Status.Name)
}

func procErr(pid int, err error) error { return procfs.Wrap(pid, "status", err) }

// Container reports whether the target lives in another pid or mount namespace than the caller, so
// that paths it uses mean something else from here.
func (t *Target) Container() bool {
	if t.NSPID != t.PID {
		return true
	}
	var self, other unix.Stat_t
	if unix.Stat("/proc/self/ns/mnt", &self) != nil || unix.Stat(procfs.Default.Path(t.PID, "ns", "mnt"), &other) != nil {
		return false
	}
	return self.Ino != other.Ino || self.Dev != other.Dev
}

// OpenTmp opens the target's /tmp the way the target resolves it: inside its root (openat2 with
// RESOLVE_IN_ROOT), so that an absolute symbolic link there (/tmp -> /srv, in a container's root or a
// chroot that its user made) leads to the target's /srv, as for the JVM, never to the caller's. The
// path Root + "/tmp" would follow such a link out of the root: a caller running as root would create,
// watch, read and connect to files in a directory of the host's. A /tmp that is missing or not a
// directory is an error naming the process and the path; one that cannot be opened for lack of
// privileges is ErrPermission.
func (t *Target) OpenTmp() (*Dir, error) {
	fd, err := openTmp(t.Root)
	if err == nil {
		return &Dir{fd: fd, name: t.tmpName()}, nil
	}
	if gerr := procfs.Default.GoneErr(t.PID); gerr != nil {
		return nil, gerr
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err // the path is said below, by its name for the user
	}
	if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
		return nil, fmt.Errorf("%w: cannot open the /tmp of process %d (%s) as uid %d: %w; %s",
			ErrPermission, t.PID, t.tmpName(), os.Geteuid(), err, t.Remedy(procfs.CapSysPtrace))
	}
	return nil, fmt.Errorf("attach: the /tmp of process %d (%s, resolved inside its root) cannot be used: %w", t.PID, t.tmpName(), err)
}

// Close releases the directory.
func (d *Dir) Close() error {
	if d == nil || d.fd < 0 {
		return nil
	}
	err := unix.Close(d.fd)
	d.fd = -1
	return err
}

// openTmp opens the tmp directory under root (O_PATH) as the process whose root it is resolves /tmp.
func openTmp(root string) (int, error) {
	fd, err := rootfs.Open(root, "/tmp", unix.O_PATH|unix.O_DIRECTORY, 0)
	if !errors.Is(err, errors.ErrUnsupported) {
		return fd, err
	}
	return openTmpNoFollow(root)
}

// openTmpNoFollow is openTmp for kernels without openat2 (before Linux 5.6): a /tmp that is a directory
// itself is opened; a symbolic link, which only openat2 resolves inside the root, is refused.
func openTmpNoFollow(root string) (int, error) {
	rootFd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: root, Err: err}
	}
	defer unix.Close(rootFd)
	fd, err := unix.Openat(rootFd, "tmp", unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		var st unix.Stat_t
		if unix.Fstatat(rootFd, "tmp", &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			err = fmt.Errorf("a symbolic link, which only openat2 (Linux 5.6) resolves inside the process's root: %w", errors.ErrUnsupported)
		}
		return -1, &os.PathError{Op: "open", Path: root + "/tmp", Err: err}
	}
	return fd, nil
}
