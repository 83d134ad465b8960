package perfmap

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/attach"
	"github.com/jvmkit/jvmkit/jcmd"
)

// WriteFileAtomic writes entries as the map dir/name, owned by uid and gid and readable by everyone. The
// directory is opened O_PATH|O_DIRECTORY; the file is written to a temporary file created O_EXCL next to
// it, fsynced and renamed over name. A symbolic link or other non-regular file at dir/name is refused with
// ErrNotRegular and left alone.
func WriteFileAtomic(dir, name string, entries []Entry, uid, gid int) error {
	dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("perfmap: open %s: %w", dir, err)
	}
	defer unix.Close(dfd)
	return writeAt(dfd, dir, name, entries, uid, gid)
}

func writeAt(dfd int, dir, name string, entries []Entry, uid, gid int) error {
	final := dir + "/" + name
	if err := checkFinal(dfd, name, final); err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := Write(&buf, entries); err != nil {
		return err
	}
	return replaceAt(dfd, name, final, buf.Bytes(), uid, gid)
}

// replaceAt makes dfd/name hold data, readable by everyone (0644) and owned by uid and gid (-1: the
// caller): a temporary file created O_EXCL next to it is written, fsynced and renamed over the name,
// so that a reader never sees half a file and a symbolic link at the name is replaced, never
// followed. path is dfd/name as errors show it.
func replaceAt(dfd int, name, path string, data []byte, uid, gid int) error {
	tmp := "." + name + "." + randomHex(6) + ".tmp"
	fd, err := unix.Openat(dfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return fmt.Errorf("perfmap: create a temporary file beside %s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), tmp)
	err = func() error {
		if _, err := f.Write(data); err != nil {
			return err
		}
		if uid >= 0 || gid >= 0 {
			if err := f.Chown(uid, gid); err != nil {
				return err
			}
		}
		// The umask may have taken bits away: perf (or the JVM's user) run by anyone reads the file.
		if err := f.Chmod(0o644); err != nil {
			return err
		}
		return f.Sync()
	}()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(dfd, tmp, dfd, name)
	}
	if err != nil {
		_ = unix.Unlinkat(dfd, tmp, 0)
		return fmt.Errorf("perfmap: write %s: %w", path, err)
	}
	return nil
}

// randomHex returns n random bytes in hex, for names nobody can guess.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand, Go 1.24+)
	return hex.EncodeToString(b)
}

func checkFinal(dfd int, name, final string) error {
	var st unix.Stat_t
	err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil
	case err != nil:
		return fmt.Errorf("perfmap: stat %s: %w", final, err)
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return fmt.Errorf("perfmap: %s: %w (a symbolic link or special file is not written through; remove it)", final, ErrNotRegular)
	}
	return nil
}

// location is one place a map goes: a directory handle and the name in it.
type location struct {
	dfd  int
	dir  string // as shown to people: a host path
	name string
}

func (l location) path() string { return l.dir + "/" + l.name }

// locations opens the directories perf reads the map of process pid from: the target's /tmp (inside its
// root) and, when that is another directory or the pid differs, the host's /tmp. The caller closes them.
func locations(pid int) (*attach.Target, []location, error) {
	t, err := attach.Resolve(pid)
	if err != nil {
		return nil, nil, err
	}
	in, err := openInRoot(t, "/tmp", unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return nil, nil, err
	}
	locs := []location{{dfd: in, dir: jcmd.HostPath(t, "/tmp"), name: "perf-" + strconv.Itoa(t.NSPID) + ".map"}}
	host, err := unix.Open("/tmp", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		closeAll(locs)
		return nil, nil, fmt.Errorf("perfmap: open /tmp: %w", err)
	}
	if t.NSPID == t.PID && sameFile(in, host) {
		unix.Close(host)
		// The same directory and name: show the path perf uses.
		locs[0].dir = "/tmp"
		return t, locs, nil
	}
	locs = append(locs, location{dfd: host, dir: "/tmp", name: "perf-" + strconv.Itoa(t.PID) + ".map"})
	return t, locs, nil
}

func closeAll(locs []location) {
	for _, l := range locs {
		unix.Close(l.dfd)
	}
}

func sameFile(a, b int) bool {
	var sa, sb unix.Stat_t
	if unix.Fstat(a, &sa) != nil || unix.Fstat(b, &sb) != nil {
		return false
	}
	return sa.Dev == sb.Dev && sa.Ino == sb.Ino
}

// Paths returns where Place writes the map of process pid, as host paths.
func Paths(pid int) ([]string, error) {
	_, locs, err := locations(pid)
	if err != nil {
		return nil, err
	}
	defer closeAll(locs)
	var out []string
	for _, l := range locs {
		out = append(out, l.path())
	}
	return out, nil
}

// Place writes the map of process pid where perf looks for it, owned by root: the target's
// /tmp/perf-<nspid>.map inside its mount namespace and, for a JVM in a container, the host's
// /tmp/perf-<hostpid>.map. It returns the host paths written. A place that cannot be written (a read-only
// /tmp, a symbolic link at the map's name) does not keep the map from the others: the error names it and
// the paths written are returned with it.
func Place(ctx context.Context, pid int, entries []Entry) ([]string, error) {
	return PlaceOwned(ctx, pid, entries, 0, 0)
}

// PlaceOwned is Place with the maps owned by uid and gid (perf reads maps owned by its user or root).
func PlaceOwned(ctx context.Context, pid int, entries []Entry, uid, gid int) ([]string, error) {
	_, locs, err := locations(pid)
	if err != nil {
		return nil, err
	}
	defer closeAll(locs)
	var done []string
	var errs []error
	for _, l := range locs {
		if err := ctx.Err(); err != nil {
			return done, err
		}
		if err := writeAt(l.dfd, l.dir, l.name, entries, uid, gid); err != nil {
			errs = append(errs, err)
			continue
		}
		done = append(done, l.path())
	}
	return done, errors.Join(errs...)
}

// Clean removes the maps Place would write for process pid, but only regular files owned by root (maps
// someone else wrote are left alone). It returns the host paths removed.
func Clean(ctx context.Context, pid int) ([]string, error) {
	return CleanOwned(ctx, pid, 0)
}

// CleanOwned is Clean for maps owned by root or uid (PlaceOwned's).
// For a process that has exited, only the host's /tmp/perf-<pid>.map is left to remove.
func CleanOwned(_ context.Context, pid, uid int) ([]string, error) {
	_, locs, err := locations(pid)
	if errors.Is(err, attach.ErrProcessGone) {
		host, herr := unix.Open("/tmp", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if herr != nil {
			return nil, fmt.Errorf("perfmap: open /tmp: %w", herr)
		}
		locs, err = []location{{dfd: host, dir: "/tmp", name: "perf-" + strconv.Itoa(pid) + ".map"}}, nil
	}
	if err != nil {
		return nil, err
	}
	defer closeAll(locs)
	var removed []string
	var errs []error
	for _, l := range locs {
		var st unix.Stat_t
		err := unix.Fstatat(l.dfd, l.name, &st, unix.AT_SYMLINK_NOFOLLOW)
		switch {
		case errors.Is(err, unix.ENOENT):
			continue
		case err != nil:
			errs = append(errs, fmt.Errorf("perfmap: stat %s: %w", l.path(), err))
			continue
		case st.Mode&unix.S_IFMT != unix.S_IFREG:
			errs = append(errs, fmt.Errorf("perfmap: %s: %w; not removed", l.path(), ErrNotRegular))
			continue
		case st.Uid != 0 && int(st.Uid) != uid:
			errs = append(errs, fmt.Errorf("perfmap: %s is owned by uid %d, not root or %d; not removed", l.path(), st.Uid, uid))
			continue
		}
		if err := unix.Unlinkat(l.dfd, l.name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("perfmap: remove %s: %w", l.path(), err))
			continue
		}
		removed = append(removed, l.path())
	}
	return removed, errors.Join(errs...)
}

// openInRoot opens path with openat2 relative to the target's root with RESOLVE_IN_ROOT: absolute symbolic
// links and ".." stay inside the container, as they do for the JVM.
func openInRoot(t *attach.Target, path string, flags int) (int, error) {
	rootFd, err := unix.Open(t.Root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("perfmap: open root of process %d: %w", t.PID, err)
	}
	defer unix.Close(rootFd)
	how := unix.OpenHow{
		Flags:   uint64(flags | unix.O_CLOEXEC),
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
	}
	for range 16 {
		fd, err := unix.Openat2(rootFd, path, &how)
		switch {
		case err == nil:
			return fd, nil
		case errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EINTR):
			continue // a rename or mount raced with the lookup
		case errors.Is(err, unix.ENOSYS):
			return -1, fmt.Errorf("perfmap: open %s in process %d: %w: openat2 needs Linux 5.6", path, t.PID, ErrNotSupported)
		}
		return -1, fmt.Errorf("perfmap: open %s in process %d: %w", path, t.PID, err)
	}
	return -1, fmt.Errorf("perfmap: open %s in process %d: %w", path, t.PID, unix.EAGAIN)
}

// removeInJVM removes /tmp/<name> inside the target's root, if it is a regular file.
func removeInJVM(t *attach.Target, name string) error {
	dfd, err := openInRoot(t, "/tmp", unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	if err := checkFinal(dfd, name, jcmd.HostPath(t, "/tmp/"+name)); err != nil {
		return err
	}
	if err := unix.Unlinkat(dfd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("perfmap: remove %s: %w", jcmd.HostPath(t, "/tmp/"+name), err)
	}
	return nil
}

// existsInJVM tells whether /tmp/<name> exists inside the target's root.
func existsInJVM(t *attach.Target, name string) (bool, error) {
	dfd, err := openInRoot(t, "/tmp", unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return false, err
	}
	defer unix.Close(dfd)
	var st unix.Stat_t
	err = unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	return err == nil, err
}
