package rootfs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/jvmkit/jvmkit/internal/procfs"
	"golang.org/x/sys/unix"
)

// Lock takes an exclusive flock(2) on the lock file name in the directory dfd (shown to people as dir),
// waiting until ctx is done, and returns the lock file: closing it releases the lock, and so does the
// death of the process, however it dies.
//
// The lock file is a regular file of mode 0600 owned by uid and gid (the process whose files the lock
// guards, so that its own user can take the lock too, and nobody else can open the file to hold the lock
// against us). It is created under a temporary name and renamed into place, never followed; a lock file
// that is anything else (a symbolic link, a FIFO, another user's file, a file with hard links, a mode
// that lets others open it) is replaced. Only the holder removes the lock file, while it still holds
// it (Unlock): a locker that waited on the removed file then finds that the name no longer holds it
// (Lock checks the name after every lock taken) and makes a new one.
//
// A replacement races with another locker only when someone has planted something at the name while
// two lockers start at once; then both may hold a lock for a moment. Lock serialises writers so that
// none waits on another's half-done work; it is not what keeps a writer from reading a file someone else
// is writing: writers check what they read (Prepared.Written) and publish by rename.
func Lock(ctx context.Context, dfd int, dir, name string, uid, gid int) (*os.File, error) {
	shown := join(dir, name)
	wait := time.Millisecond
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("lock %s: %w", shown, err)
		}
		if attempt == 1000 {
			return nil, fmt.Errorf("lock %s: it keeps changing", shown)
		}
		fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		switch {
		case errors.Is(err, unix.ENOENT):
			f, err := newLockFile(dfd, dir, name, uid, gid, false)
			if errors.Is(err, unix.EEXIST) {
				continue // another locker created it first
			}
			if err != nil {
				return nil, err
			}
			if sameFile(dfd, name, f) {
				return f, nil
			}
			f.Close()
			continue
		case err != nil && !errors.Is(err, unix.ELOOP):
			// The lock file is the JVM's user's, mode 0600: root opens it by CAP_DAC_OVERRIDE.
			return nil, procfs.Explain(&os.PathError{Op: "open", Path: shown, Err: err}, procfs.CapDacOverride)
		}
		if err != nil || !goodLockFile(fd, uid) {
			// A link (ELOOP) or a file we must not trust: replace it in one step.
			if fd >= 0 {
				unix.Close(fd)
			}
			f, err := newLockFile(dfd, dir, name, uid, gid, true)
			if err != nil {
				return nil, err
			}
			f.Close()
			continue
		}
		f := os.NewFile(uintptr(fd), shown)
		if err := lockWait(ctx, dfd, name, f, &wait); err != nil {
			f.Close()
			if errors.Is(err, errReplaced) {
				continue
			}
			return nil, fmt.Errorf("lock %s: %w", shown, err)
		}
		if sameFile(dfd, name, f) {
			return f, nil
		}
		f.Close() // replaced while we waited: lock the file that is there now
	}
}

var errReplaced = errors.New("lock file replaced")

// Unlock releases the lock f that Lock returned for name in dfd and removes the lock file first, while
// the lock is still held, so that lock files do not pile up (one per JVM ever mapped, in /tmp).
func Unlock(dfd int, name string, f *os.File) {
	if sameFile(dfd, name, f) {
		_ = unix.Unlinkat(dfd, name, 0)
	}
	f.Close()
}

// lockWait waits for the lock on f; every few tries it makes sure f is still the file at the name.
func lockWait(ctx context.Context, dfd int, name string, f *os.File, wait *time.Duration) error {
	for i := 0; ; i++ {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			return err
		}
		if i%16 == 15 && !sameFile(dfd, name, f) {
			return errReplaced
		}
		t := time.NewTimer(*wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("held by another process: %w", ctx.Err())
		case <-t.C:
		}
		*wait = min(*wait*2, 50*time.Millisecond)
	}
}

// goodLockFile: a regular file with one name, owned by uid, root or us, that nobody else can open.
func goodLockFile(fd, uid int) bool {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return false
	}
	return st.Mode&unix.S_IFMT == unix.S_IFREG && st.Nlink == 1 && st.Mode&0o077 == 0 &&
		(int(st.Uid) == uid || st.Uid == 0 || int(st.Uid) == os.Geteuid())
}

// newLockFile puts a new lock file at the name: only where there is none, or over whatever is there.
// The file comes back locked when it was created at a free name.
func newLockFile(dfd int, dir, name string, uid, gid int, replace bool) (*os.File, error) {
	t, err := CreateTemp(dfd, dir, "."+name+".", ".tmp", 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", join(dir, name), err)
	}
	if os.Geteuid() != uid {
		if err := t.File.Chown(uid, gid); err != nil {
			t.Discard()
			return nil, fmt.Errorf("lock %s: %w", join(dir, name), procfs.Explain(err, procfs.CapChown))
		}
	}
	if replace {
		err = unix.Renameat(dfd, t.Name, dfd, name)
	} else {
		err = renameNoReplace(dfd, t.Name, name)
	}
	if err != nil {
		t.Discard()
		if errors.Is(err, unix.EEXIST) {
			return nil, err
		}
		return nil, &os.PathError{Op: "lock", Path: join(dir, name), Err: err}
	}
	return t.File, nil
}

// sameFile reports whether dfd/name is the file f.
func sameFile(dfd int, name string, f *os.File) bool {
	var a, b unix.Stat_t
	return unix.Fstat(int(f.Fd()), &a) == nil && unix.Fstatat(dfd, name, &b, unix.AT_SYMLINK_NOFOLLOW) == nil &&
		a.Dev == b.Dev && a.Ino == b.Ino
}
