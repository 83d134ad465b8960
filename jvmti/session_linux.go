package jvmti

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/attach"
	"github.com/jvmkit/jvmkit/internal/procfs"
	"github.com/jvmkit/jvmkit/internal/rootfs"
	"github.com/jvmkit/jvmkit/jcmd"
)

// libDirPrefix names the directories Stage creates in the JVM's /tmp.
const libDirPrefix = ".jvmkit-agent-"

// Load runs the attach load operation: the library at libPath (as the JVM sees it, from Stage) with
// options. An agent's failure wraps *attach.AgentError, whose ReturnCode is what Agent_OnAttach returned.
func (s *Session) Load(ctx context.Context, libPath, options string) error {
	start := time.Now()
	err := s.vm.Load(ctx, libPath, true, options)
	s.debug("agent load", "library", libPath, "options", options, "duration", time.Since(start), "err", err)
	return err
}

// Session is an attach connection to one JVM and an open handle of its /tmp, where agent libraries are
// staged and agents write their output.
type Session struct {
	ctx context.Context
	t   *attach.Target
	vm  *attach.VM
	log attach.Logger
	tmp int // O_PATH handle of the JVM's /tmp
}

// Open attaches to JVM pid and opens its /tmp (inside its root, no link followed out of it), checking that
// the JVM's user could create files there (rootfs.MayCreate) and that it is not mounted noexec
// (ErrNoExec). log, when not nil, gets debug records: the files created and removed, with their host
// paths.
func Open(ctx context.Context, pid int, log attach.Logger) (*Session, error) {
	vm, err := attach.Dial(ctx, pid, &attach.Options{Logger: log})
	if err != nil {
		return nil, err
	}
	s := &Session{ctx: ctx, t: vm.Target, vm: vm, log: log, tmp: -1}
	fd, err := rootfs.Open(s.t.Root, "/tmp", unix.O_PATH|unix.O_DIRECTORY, 0)
	if errors.Is(err, errors.ErrUnsupported) {
		err = fmt.Errorf("%w: %w", ErrNotSupported, err)
	}
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("jvmti: process %d: %w", pid, err)
	}
	s.tmp = fd
	// Libraries and output directories go where the JVM's user could create them.
	if err := rootfs.MayCreate(s.tmp, jcmd.HostPath(s.t, "/tmp"), s.t.UID, s.t.GID, s.t.Status.Groups); err != nil {
		s.Close()
		return nil, fmt.Errorf("jvmti: not loading an agent into process %d: %w", pid, err)
	}
	if err := s.checkExec(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Close closes the handle of the JVM's /tmp and the attach connection.
func (s *Session) Close() {
	if s.tmp >= 0 {
		unix.Close(s.tmp)
		s.tmp = -1
	}
	s.vm.Close()
}

// Target is the JVM.
func (s *Session) Target() *attach.Target { return s.t }

// Tmp is the O_PATH handle of the JVM's /tmp, for *at calls.
func (s *Session) Tmp() int { return s.tmp }

func (s *Session) debug(msg string, args ...any) {
	if s.log != nil {
		s.log.Debug(msg, append([]any{"pid", s.t.PID}, args...)...)
	}
}

// HostPath is where a person on the host finds /tmp/<name> of the JVM.
func (s *Session) HostPath(name string) string { return jcmd.HostPath(s.t, "/tmp/"+name) }

func (s *Session) checkExec() error {
	var st unix.Statfs_t
	if err := unix.Fstatfs(s.tmp, &st); err != nil {
		return fmt.Errorf("jvmti: statfs %s: %w", s.HostPath(""), err)
	}
	if st.Flags&unix.ST_NOEXEC != 0 {
		return fmt.Errorf("%w (process %d): a JVMTI agent cannot be loaded from it", ErrNoExec, s.t.PID)
	}
	return nil
}

// ErrorName names a jvmtiError code.
func ErrorName(e int) string {
	names := map[int]string{
		23: "JVMTI_ERROR_INVALID_METHODID", 98: "JVMTI_ERROR_NOT_AVAILABLE", 99: "JVMTI_ERROR_MUST_POSSESS_CAPABILITY",
		100: "JVMTI_ERROR_NULL_POINTER", 102: "JVMTI_ERROR_INVALID_EVENT_TYPE", 103: "JVMTI_ERROR_ILLEGAL_ARGUMENT",
		110: "JVMTI_ERROR_OUT_OF_MEMORY", 111: "JVMTI_ERROR_ACCESS_DENIED", 112: "JVMTI_ERROR_WRONG_PHASE",
		113: "JVMTI_ERROR_INTERNAL", 115: "JVMTI_ERROR_UNATTACHED_THREAD", 116: "JVMTI_ERROR_INVALID_ENVIRONMENT",
	}
	if n, ok := names[e]; ok {
		return n
	}
	return "jvmtiError " + strconv.Itoa(e)
}

// PrivateDir creates /tmp/<prefix><random>, owned by the JVM's user, mode 0700, and returns its name and
// a handle: an agent writes there, and nobody but that user and root can put anything in its way. The
// directory is flocked while in use; directories of the prefix that sessions killed before their clean-up
// left (their lock free) are removed first. RemovePrivateDir removes it.
func (s *Session) PrivateDir(prefix string) (string, int, error) {
	s.removeStaleDirs(prefix)
	for range 8 {
		name := prefix + rootfs.RandomHex(8)
		if err := unix.Mkdirat(s.tmp, name, 0o700); err != nil {
			return "", -1, fmt.Errorf("jvmti: create %s: %w", s.HostPath(name), err)
		}
		s.debug("created", "path", s.HostPath(name))
		dfd, err := unix.Openat(s.tmp, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			continue // another session took it for a stale one before we could lock it: take another
		}
		if err == nil {
			if err = unix.Flock(dfd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
				unix.Close(dfd)
				continue // the same, with the other session still at it
			}
			var st, now unix.Stat_t
			if unix.Fstat(dfd, &st) != nil || unix.Fstatat(s.tmp, name, &now, unix.AT_SYMLINK_NOFOLLOW) != nil ||
				st.Dev != now.Dev || st.Ino != now.Ino {
				unix.Close(dfd)
				continue // removed by the other session before we locked it
			}
			if err = procfs.Explain(unix.Fchown(dfd, s.t.UID, s.t.GID), procfs.CapChown); err == nil {
				err = procfs.Explain(unix.Fchmod(dfd, 0o700), procfs.CapFowner)
			}
			if err != nil {
				unix.Close(dfd)
			}
		}
		if err != nil {
			_ = unix.Unlinkat(s.tmp, name, unix.AT_REMOVEDIR)
			return "", -1, fmt.Errorf("jvmti: prepare %s: %w", s.HostPath(name), err)
		}
		return name, dfd, nil
	}
	return "", -1, fmt.Errorf("jvmti: %s: cannot create a private directory there (other sessions keep removing it)", s.HostPath(""))
}

// removeStaleDirs removes the private directories that sessions killed before their clean-up left in the
// JVM's /tmp: directories of the JVM's user with the prefix whose lock is free.
func (s *Session) removeStaleDirs(prefix string) {
	names, err := rootfs.ReadDirNames(s.tmp)
	if err != nil {
		return
	}
	for _, n := range names {
		if !strings.HasPrefix(n, prefix) {
			continue
		}
		dfd, err := unix.Openat(s.tmp, n, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		var st unix.Stat_t
		if unix.Fstat(dfd, &st) != nil || int(st.Uid) != s.t.UID || unix.Flock(dfd, unix.LOCK_EX|unix.LOCK_NB) != nil {
			unix.Close(dfd)
			continue
		}
		s.RemovePrivateDir(n, dfd)
	}
}

// RemovePrivateDir removes a directory of PrivateDir and whatever is in it (an agent's output, temporary
// files of a failed agent) and closes dfd. Entries are removed through the directory's handle, never by a
// path.
func (s *Session) RemovePrivateDir(name string, dfd int) {
	defer unix.Close(dfd)
	if names, err := rootfs.ReadDirNames(dfd); err == nil {
		for _, n := range names {
			if unix.Unlinkat(dfd, n, 0) != nil {
				_ = unix.Unlinkat(dfd, n, unix.AT_REMOVEDIR)
			}
		}
	}
	if err := unix.Unlinkat(s.tmp, name, unix.AT_REMOVEDIR); err != nil {
		s.debug("remove failed", "path", s.HostPath(name), "err", err)
		return
	}
	s.debug("removed", "path", s.HostPath(name))
}

// Stage puts lib into /tmp/.jvmkit-agent-<sha256>/<name> in the JVM's root and returns its path as the
// JVM sees it, and a function that removes it when no other session uses it.
//
// The directory is owned by root, mode 0755, named after the library's SHA-256: the JVM, whatever its
// user, can read it, and nobody else can change it. Loading by the same path again reaches the library
// already in the JVM (the dynamic linker matches loaded libraries by name), so repeated sessions do not
// pile up copies of it. The copy is removed after use unless another session holds it (a shared flock
// on the directory). The JVM opens the library by that path with its own privileges, so the path must be
// one that nobody but root and the JVM's user can change: a /tmp that other users may write without the
// sticky bit (a Kubernetes emptyDir at /tmp) or that another user owns is refused with an error wrapping
// rootfs.ErrUnsafe (fs.ErrPermission), and nothing is staged.
func (s *Session) Stage(name string, lib []byte) (string, func(), error) {
	sum := sha256.Sum256(lib)
	base := libDirPrefix + hex.EncodeToString(sum[:16])
	dir := base
	for attempt := 0; ; attempt++ {
		if err := s.ctx.Err(); err != nil {
			return "", nil, err
		}
		if attempt == 8 {
			return "", nil, fmt.Errorf("jvmti: %s keeps changing; not loading an agent from it", s.HostPath(dir))
		}
		dfd, state, err := s.openLibDir(dir)
		if err != nil {
			return "", nil, err
		}
		switch state {
		case libDirGone:
			continue
		case libDirUnusable:
			if dir != base {
				return "", nil, fmt.Errorf("jvmti: %s: cannot use it", s.HostPath(dir))
			}
			// Not ours, or locked by someone for too long: a private directory loads a second instance
			// of the library into a JVM that has the shared one already, which is harmless.
			dir = base + "-" + rootfs.RandomHex(6)
			continue
		}
		if err := s.placeLibrary(dfd, dir, name, lib); err != nil {
			unix.Close(dfd)
			return "", nil, err
		}
		if err := s.checkStaged(dfd, dir, name); err != nil {
			if errors.Is(err, errReplaced) && attempt < 7 {
				// Another session replaced a wrong file at the name at the same time as this one:
				// the next round keeps whichever copy is there now, if it is right.
				s.debug("replaced while checking; again", "path", s.HostPath(dir+"/"+name))
				unix.Close(dfd)
				continue
			}
			s.releaseLibrary(dfd, dir, name)
			return "", nil, err
		}
		release := func() { s.releaseLibrary(dfd, dir, name) }
		return "/tmp/" + dir + "/" + name, release, nil
	}
}

// errReplaced: the library at the path the JVM loads by is not the file in the directory just checked.
var errReplaced = errors.New("replaced")

// checkStaged makes sure that the path the JVM will load the library by, /tmp/<dir>/<name> inside its
// root, is one that nobody but root and the JVM's user can change before the JVM opens it, and that it
// leads to the copy just placed. The JVM runs whatever that path names with its own privileges: in a
// /tmp that other users may write without the sticky bit (a Kubernetes emptyDir mounted at /tmp is
// 0777), or that another user owns, that user can rename our directory away between our write and the
// JVM's dlopen and put one of their own, holding their library, under its name (seen: a root JVM ran
// uid 65534's code that way). rootfs.Prepare walks the path as the kernel will for the JVM and refuses
// such a path with an error wrapping rootfs.ErrUnsafe; what passes cannot change until the load.
func (s *Session) checkStaged(dfd int, dir, name string) error {
	path := "/tmp/" + dir + "/" + name
	p, err := rootfs.NewProcess(s.t.PID, s.t.UID, s.t.GID, s.t.Status.Groups, "").Prepare(context.Background(), path, rootfs.Exclusive, 0)
	if err != nil {
		return fmt.Errorf("jvmti: not loading an agent into process %d: %w", s.t.PID, err)
	}
	p.Close()
	f, err := rootfs.OpenRegular(s.t.Root, path, s.HostPath(dir+"/"+name))
	if err != nil {
		return fmt.Errorf("jvmti: not loading an agent into process %d: %w", s.t.PID, err)
	}
	defer f.Close()
	var got, placed unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &got); err != nil {
		return fmt.Errorf("jvmti: stat %s: %w", s.HostPath(dir+"/"+name), err)
	}
	if err := unix.Fstatat(dfd, name, &placed, unix.AT_SYMLINK_NOFOLLOW); err != nil || got.Dev != placed.Dev || got.Ino != placed.Ino {
		return fmt.Errorf("jvmti: %s is not the library just placed there: %w; not loading it into process %d", s.HostPath(dir+"/"+name), errReplaced, s.t.PID)
	}
	return nil
}

// releaseLibrary removes the library directory unless another session still uses it. Whoever finishes
// last takes the directory's lock exclusively and removes it; one that finds it shared lets go of its own
// shared lock and tries again for a while, so that two finishing together do not both leave it.
func (s *Session) releaseLibrary(dfd int, dir, name string) {
	defer unix.Close(dfd)
	deadline := time.Now().Add(2 * time.Second)
	for unix.Flock(dfd, unix.LOCK_EX|unix.LOCK_NB) != nil {
		_ = unix.Flock(dfd, unix.LOCK_UN)
		if time.Now().After(deadline) {
			s.debug("left for another user", "path", s.HostPath(dir))
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	var st, now unix.Stat_t
	if unix.Fstat(dfd, &st) != nil || unix.Fstatat(s.tmp, dir, &now, unix.AT_SYMLINK_NOFOLLOW) != nil || now.Dev != st.Dev || now.Ino != st.Ino {
		return // removed by the last other user
	}
	_ = unix.Unlinkat(dfd, name, 0)
	if err := unix.Unlinkat(s.tmp, dir, unix.AT_REMOVEDIR); err != nil {
		s.debug("remove failed", "path", s.HostPath(dir), "err", err)
		return
	}
	s.debug("removed", "path", s.HostPath(dir))
}

// States of a library directory for openLibDir.
const (
	libDirOK       = iota
	libDirGone     // removed or replaced under us: try the same name again
	libDirUnusable // not ours, or locked too long: use another name
)

// openLibDir opens (creating it if needed) the library directory, shared-locked.
func (s *Session) openLibDir(dir string) (int, int, error) {
	err := unix.Mkdirat(s.tmp, dir, 0o755)
	fresh := err == nil
	if err != nil && !errors.Is(err, unix.EEXIST) {
		return -1, 0, fmt.Errorf("jvmti: create %s: %w", s.HostPath(dir), err)
	}
	if fresh {
		s.debug("created", "path", s.HostPath(dir))
	}
	dfd, err := unix.Openat(s.tmp, dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		switch {
		case errors.Is(err, unix.ENOENT):
			return -1, libDirGone, nil
		case errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR):
			return -1, libDirUnusable, nil // a symbolic link or a file planted there
		}
		return -1, 0, fmt.Errorf("jvmti: open %s: %w", s.HostPath(dir), err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(dfd, &st); err != nil {
		unix.Close(dfd)
		return -1, 0, fmt.Errorf("jvmti: stat %s: %w", s.HostPath(dir), err)
	}
	if fresh {
		if err := unix.Fchmod(dfd, 0o755); err != nil {
			unix.Close(dfd)
			return -1, 0, fmt.Errorf("jvmti: chmod %s: %w", s.HostPath(dir), err)
		}
	} else if int(st.Uid) != os.Geteuid() || st.Mode&0o022 != 0 {
		unix.Close(dfd)
		s.debug("not using", "path", s.HostPath(dir), "uid", st.Uid, "mode", fmt.Sprintf("%o", st.Mode&0o7777))
		return -1, libDirUnusable, nil
	}
	locked := false
	for range 50 {
		if unix.Flock(dfd, unix.LOCK_SH|unix.LOCK_NB) == nil {
			locked = true
			break
		}
		select {
		case <-s.ctx.Done():
			unix.Close(dfd)
			return -1, 0, s.ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	if !locked {
		unix.Close(dfd)
		return -1, libDirUnusable, nil
	}
	// Still the directory under that name? Its last user may have removed it before we locked it.
	var now unix.Stat_t
	if unix.Fstatat(s.tmp, dir, &now, unix.AT_SYMLINK_NOFOLLOW) != nil || now.Dev != st.Dev || now.Ino != st.Ino {
		unix.Close(dfd)
		return -1, libDirGone, nil
	}
	return dfd, libDirOK, nil
}

// placeLibrary makes dfd/name hold lib: an existing copy is kept when it is a regular file of ours with
// the same bytes; otherwise a new one is written beside it and renamed to the name. A name that is free
// is taken without replacing (two sessions placing the library at once: the second keeps the first's
// copy, so that the copy the first checks and loads stays in place); only a wrong file is replaced.
func (s *Session) placeLibrary(dfd int, dir, name string, lib []byte) error {
	for range 3 {
		exists := false
		if fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0); err == nil {
			exists = true
			f := os.NewFile(uintptr(fd), name)
			var st unix.Stat_t
			same := unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG && int(st.Uid) == os.Geteuid() &&
				st.Mode&0o022 == 0 && st.Size == int64(len(lib))
			if same {
				got, err := io.ReadAll(io.LimitReader(f, int64(len(lib))+1))
				same = err == nil && bytes.Equal(got, lib)
			}
			f.Close()
			if same {
				return nil
			}
		} else if !errors.Is(err, unix.ENOENT) {
			exists = true // a symbolic link (ELOOP), a socket (ENXIO), ...: replaced, never followed
		}
		write := rootfs.WriteNewFile
		if exists {
			write = rootfs.WriteFile
		}
		err := write(dfd, s.HostPath(dir), name, lib, -1, -1, 0o644)
		if err == nil {
			s.debug("created", "path", s.HostPath(dir+"/"+name))
			return nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("jvmti: %w", err)
		}
		// Placed by another session just now: look at theirs.
	}
	return fmt.Errorf("jvmti: %s keeps changing; not loading an agent from it", s.HostPath(dir+"/"+name))
}
