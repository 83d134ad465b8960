package attach

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/internal/hsperf"
	"github.com/jvmkit/jvmkit/internal/procfs"
	"github.com/jvmkit/jvmkit/internal/rootfs"
)

// checkSocket reports whether the target's listener socket exists in tmp, its /tmp, and refuses anything
// at that name that the target cannot have made: HotSpot creates it as a socket, mode 0600, owned by its
// euid.
func (t *Target) checkSocket(tmp *Dir) (bool, error) {
	_, ok, err := t.checkSocketIno(tmp)
	return ok, err
}

// checkSocketIno is checkSocket that also returns the socket's inode.
func (t *Target) checkSocketIno(tmp *Dir) (uint64, bool, error) {
	var st unix.Stat_t
	path := t.socketName()
	err := unix.Fstatat(tmp.fd, t.socketFile(), &st, unix.AT_SYMLINK_NOFOLLOW)
	switch {
	case errors.Is(err, unix.ENOENT):
		return 0, false, nil
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		return 0, false, fmt.Errorf("%w: cannot reach %s as uid %d; %s", ErrPermission, path, os.Geteuid(), t.RemedyAny(procfs.CapDacReadSearch, procfs.CapDacOverride))
	case err != nil:
		return 0, false, fmt.Errorf("attach: stat %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return 0, false, fmt.Errorf("%w: %s is %s owned by uid %d, not the JVM's socket; refusing to use it (remove it if it is stale)", ErrPermission, path, rootfs.Kind(st.Mode), st.Uid)
	}
	if int(st.Uid) != t.UID {
		return 0, false, fmt.Errorf("%w: socket %s is owned by uid %d but the JVM runs as uid %d; refusing a socket the JVM did not create: %w", ErrPermission, path, st.Uid, t.UID, errForeignSocket)
	}
	if st.Mode&0o077 != 0 {
		return 0, false, fmt.Errorf("%w: socket %s has mode %#o; the JVM creates it 0600; refusing it", ErrPermission, path, st.Mode&0o777)
	}
	return st.Ino, true, nil
}

// errForeignSocket: the file at the listener's name is a socket of another user than the JVM's.
var errForeignSocket = errors.New("foreign socket")

// socketIno returns the inode of the socket at the listener's name in tmp, 0 when there is none.
func (t *Target) socketIno(tmp *Dir) uint64 {
	var st unix.Stat_t
	if unix.Fstatat(tmp.fd, t.socketFile(), &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return 0
	}
	return st.Ino
}

// removeStaleSocket removes the socket at the listener's name if nobody listens on it (connecting is
// refused) and it is still the file of inode ino (0: any). Such a socket was left by a process that had
// the JVM's pid before it and was killed (pids are reused; a JVM killed by SIGKILL leaves its socket):
// the JVM removes a stale one of its own user when it starts, but not one that appears later, and may
// not remove another user's in a sticky /tmp; either way nobody could attach. A socket somebody listens
// on, or that is busy, is left alone. It is removed by name relative to its directory, after checking
// that the name still holds the socket found refusing. It reports whether one was removed.
func (t *Target) removeStaleSocket(tmp *Dir, ino uint64) bool {
	dfd, name := tmp.fd, t.socketFile()
	var before, now unix.Stat_t
	if unix.Fstatat(dfd, name, &before, unix.AT_SYMLINK_NOFOLLOW) != nil || before.Mode&unix.S_IFMT != unix.S_IFSOCK || ino != 0 && before.Ino != ino {
		return false
	}
	c, err := dialUnix(tmp.Path() + "/" + name)
	if err == nil {
		c.Close()
		return false
	}
	if !errors.Is(err, unix.ECONNREFUSED) {
		return false // busy, or not ours to reach: cannot tell
	}
	if unix.Fstatat(dfd, name, &now, unix.AT_SYMLINK_NOFOLLOW) != nil || now.Dev != before.Dev || now.Ino != before.Ino {
		return false
	}
	return unix.Unlinkat(dfd, name, 0) == nil
}

// trigger is an .attach_pid<nspid> file. HotSpot looks for it in its cwd, then in /tmp, when it gets
// SIGQUIT; without it the signal prints a thread dump instead of starting the listener.
type trigger struct {
	dirfd   int
	dir     string
	name    string
	created bool // false: another attacher's trigger that we reuse and must not remove
}

// createTrigger makes the trigger file in the target's cwd, else in tmp, its /tmp, relative to an
// O_PATH handle of the directory, with O_EXCL|O_NOFOLLOW (never through a planted symlink) and owned by
// the target's euid (JDK 8 accepts only that owner; JDK 11+ also root).
func (t *Target) createTrigger(tmp *Dir) (*trigger, error) {
	var errs []error
	for _, dir := range []string{t.Cwd, tmp.Path()} {
		tr, err := t.createTriggerIn(dir, tmp.Shown(dir))
		if err == nil {
			return tr, nil
		}
		errs = append(errs, err)
	}
	err := errors.Join(errs...)
	switch {
	case errors.Is(err, rootfs.ErrUnsafe):
		return nil, fmt.Errorf("%w: cannot create the attach trigger file: %w", ErrPermission, err)
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		return nil, fmt.Errorf("%w: cannot create the attach trigger file: %w; %s", ErrPermission, err, t.Remedy(procfs.CapDacOverride))
	}
	return nil, fmt.Errorf("attach: cannot create the attach trigger file: %w", err)
}

// createTriggerIn is createTrigger in the directory at path, dir for messages.
func (t *Target) createTriggerIn(path, dir string) (*trigger, error) {
	name := t.triggerName()
	dfd, err := unix.Open(path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	// The trigger is the JVM's user's file: only where that user could have made it, not in whatever
	// directory the JVM's mounts put at its working directory or /tmp (rootfs.MayCreate).
	if err := rootfs.MayCreate(dfd, dir, t.UID, t.GID, t.Status.Groups); err != nil {
		unix.Close(dfd)
		return nil, err
	}
	fd, err := unix.Openat(dfd, name, unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_WRONLY|unix.O_CLOEXEC, 0o600)
	if errors.Is(err, unix.EEXIST) {
		// Another attacher may be starting the listener right now: share its trigger if it is a plain
		// file the JVM would accept, never anything else.
		var st unix.Stat_t
		if serr := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); serr == nil &&
			st.Mode&unix.S_IFMT == unix.S_IFREG && (int(st.Uid) == t.UID || st.Uid == 0) {
			unix.Close(dfd)
			return &trigger{dirfd: -1, dir: dir, name: name}, nil
		}
		unix.Close(dfd)
		return nil, &os.PathError{Op: "create", Path: dir + "/" + name, Err: fmt.Errorf("exists and is not a usable trigger file: %w", err)}
	}
	if err != nil {
		unix.Close(dfd)
		return nil, &os.PathError{Op: "create", Path: dir + "/" + name, Err: err}
	}
	tr := &trigger{dirfd: dfd, dir: dir, name: name, created: true}
	if os.Geteuid() == 0 && t.UID != 0 {
		_ = unix.Fchown(fd, t.UID, t.GID)
	}
	var st unix.Stat_t
	err = unix.Fstat(fd, &st)
	unix.Close(fd)
	if err == nil && int(st.Uid) != t.UID && st.Uid != 0 {
		// Some file systems force the owner; the JVM would ignore this file.
		err = fmt.Errorf("trigger file got owner uid %d, which the JVM (uid %d) does not accept", st.Uid, t.UID)
	}
	if err != nil {
		tr.remove()
		return nil, &os.PathError{Op: "create", Path: dir + "/" + name, Err: err}
	}
	return tr, nil
}

func (tr *trigger) remove() {
	if tr == nil || tr.dirfd < 0 {
		return
	}
	if tr.created {
		_ = unix.Unlinkat(tr.dirfd, tr.name, 0)
	}
	unix.Close(tr.dirfd)
	tr.dirfd = -1
}

// removeStaleTriggers removes the trigger files left by attachers that were killed while they started
// the listener (gjcmd killed a millisecond into attaching, a jcmd killed by its supervisor): once the
// listener is up, a trigger file older than its socket has done its work, whoever made it. Only a regular
// empty file that the JVM would accept (its user's or root's) and that is not newer than the socket is
// removed, by name relative to its directory; anything else is left alone. It returns the paths removed.
// tmp is the target's /tmp.
func (t *Target) removeStaleTriggers(tmp *Dir) []string {
	var sock unix.Stat_t
	if err := unix.Fstatat(tmp.fd, t.socketFile(), &sock, unix.AT_SYMLINK_NOFOLLOW); err != nil || sock.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return nil
	}
	var removed []string
	for _, path := range []string{t.Cwd, tmp.Path()} {
		dir := tmp.Shown(path)
		dfd, err := unix.Open(path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		var st unix.Stat_t
		name := t.triggerName()
		if rootfs.MayCreate(dfd, dir, t.UID, t.GID, t.Status.Groups) == nil && unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG &&
			st.Size == 0 && (int(st.Uid) == t.UID || st.Uid == 0) && !newer(st.Ctim, sock.Ctim) &&
			unix.Unlinkat(dfd, name, 0) == nil {
			removed = append(removed, dir+"/"+name)
		}
		unix.Close(dfd)
	}
	return removed
}

func newer(a, b unix.Timespec) bool { return a.Sec > b.Sec || a.Sec == b.Sec && a.Nsec > b.Nsec }

// attachDisabled reads the JVM's capabilities from its hsperfdata in tmp, like the JDK's attach
// provider, so a JVM started with -XX:+DisableAttachMechanism is refused without being signalled.
func (t *Target) attachDisabled(ctx context.Context, tmp *Dir) bool {
	path, err := hsperf.Find(tmp.Path(), t.NSPID, t.UID)
	if err != nil {
		return false
	}
	d, err := hsperf.ReadFile(ctx, path)
	if err != nil && d == nil {
		return false
	}
	ok, known := d.AttachSupported()
	return known && !ok
}

// startListener makes the JVM start its attach listener: trigger file, SIGQUIT, wait for the socket in
// tmp, its /tmp. The JVM needs about a millisecond; inotify on tmp tells us the moment the socket is
// renamed into place, with polling as the fallback.
func (vm *VM) startListener(ctx context.Context, tmp *Dir) error {
	t := vm.Target
	if err := t.checkJVM(); err != nil {
		return err
	}
	// The status as read now, not t.Status: after Dial the VM is shared (restartListener) and the Target
	// is read by others.
	st, err := t.current()
	if err != nil {
		return err
	}
	if st.Stopped() {
		return vm.stoppedErr(st)
	}
	if err := vm.frozenErr(); err != nil {
		return err // it could not handle SIGQUIT
	}
	if t.attachDisabled(ctx, tmp) {
		return fmt.Errorf("process %d: %w", t.PID, ErrAttachDisabled)
	}
	if !st.Catches(int(unix.SIGQUIT)) || st.Ignores(int(unix.SIGQUIT)) {
		// With -Xrs the JVM installs no SIGQUIT handler (the signal would kill it) but starts the
		// listener at startup; if the socket is gone there is no safe way to restart it.
		return fmt.Errorf("%w: JVM %d has no attach socket and does not handle SIGQUIT (started with -Xrs?); not signalling it", ErrNoListener, t.PID)
	}

	// One-shot inotify watch: the first entry created in the target's /tmp after our signal is,
	// almost always, the JVM's .java_pid<pid>.tmp socket, renamed into place microseconds later; from
	// then on a fine lstat poll finds it. The watch removes itself at that first event, and the
	// inotify descriptor is closed only by VM.Close: closing an instance right after its watch went
	// away waits for an SRCU grace period (8-16 ms measured on Linux 6.18), a few ms later it does not.
	ifd := -1
	if fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK); err == nil {
		if _, err := unix.InotifyAddWatch(fd, tmp.Path(), unix.IN_CREATE|unix.IN_MOVED_TO|unix.IN_ONLYDIR|unix.IN_ONESHOT); err == nil {
			ifd = fd
			if vm.inotify >= 0 {
				unix.Close(vm.inotify) // an earlier start's (see restartListener)
			}
			vm.inotify = fd
		} else {
			unix.Close(fd)
		}
	}

	if vm.opts.BeforeStart != nil {
		vm.opts.BeforeStart()
	}
	tr, err := t.createTrigger(tmp)
	if err != nil {
		return err
	}
	defer tr.remove()
	vm.logf("trigger %s/%s (created=%t), inotify=%t", tr.dir, tr.name, tr.created, ifd >= 0)

	start := time.Now()
	deadline, _ := ctx.Deadline()
	resendAt := start.Add(deadline.Sub(start) / 2)
	resent := false
	if err := vm.signal(); err != nil {
		return err
	}
	// Without inotify, or once its one event has come, poll: the JVM needs about a millisecond.
	poll := 100 * time.Microsecond
	lastState := start
	for {
		if ok, err := t.checkSocket(tmp); ok || err != nil {
			if ok {
				vm.logf("listener up after %v", time.Since(start))
			}
			return err
		}
		now := time.Now()
		if ctx.Err() != nil || !now.Before(deadline) {
			if st, err = t.current(); err != nil {
				return err
			}
			if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return ctx.Err()
			}
			return fmt.Errorf("%w: JVM %d did not start its attach listener within %v (%s)", ErrNoListener, t.PID, time.Since(start).Round(time.Millisecond), st.StateName())
		}
		if now.Sub(lastState) > 50*time.Millisecond {
			lastState = now
			if st, err = t.current(); err != nil {
				return err
			}
			if st.Stopped() {
				return vm.stoppedErr(st)
			}
			if now.Sub(start) > 500*time.Millisecond {
				if err := vm.frozenErr(); err != nil {
					return err
				}
			}
		}
		if !resent && now.After(resendAt) {
			// The JDK resends once too: a signal that arrived while the JVM was still starting up may
			// have been handled before the trigger file existed.
			resent = true
			if err := vm.signal(); err != nil {
				return err
			}
		}
		wait := min(deadline.Sub(now), 100*time.Millisecond)
		if ifd < 0 {
			wait = min(wait, poll)
			poll = min(poll*2, 10*time.Millisecond)
		}
		fired, exited, err := waitEvent(ifd, vm.pidfd, wait)
		switch {
		case err != nil:
			return err
		case exited:
			return fmt.Errorf("%w: process %d exited while attaching", ErrProcessGone, t.PID)
		case fired:
			ifd = -1 // the one-shot watch is gone; poll from here
		}
	}
}

// waitEvent waits up to d for an inotify event or the exit of the process behind pidfd.
func waitEvent(ifd, pidfd int, d time.Duration) (fired, exited bool, err error) {
	fds := make([]unix.PollFd, 0, 2)
	if ifd >= 0 {
		fds = append(fds, unix.PollFd{Fd: int32(ifd), Events: unix.POLLIN})
	}
	if pidfd >= 0 {
		fds = append(fds, unix.PollFd{Fd: int32(pidfd), Events: unix.POLLIN})
	}
	if len(fds) == 0 {
		time.Sleep(d)
		return false, false, nil
	}
	ts := unix.NsecToTimespec(int64(d))
	_, err = unix.Ppoll(fds, &ts, nil)
	if err != nil && !errors.Is(err, unix.EINTR) {
		return false, false, fmt.Errorf("attach: poll: %w", err)
	}
	for _, f := range fds {
		switch {
		case f.Revents == 0:
		case int(f.Fd) == pidfd:
			exited = true
		default:
			fired = true
			var buf [4096]byte
			for {
				if n, err := unix.Read(ifd, buf[:]); n <= 0 || err != nil {
					break
				}
			}
		}
	}
	return fired, exited, nil
}

func (vm *VM) signal() error {
	var err error
	if vm.pidfd >= 0 {
		err = unix.PidfdSendSignal(vm.pidfd, unix.SIGQUIT, nil, 0)
	} else {
		err = unix.Kill(vm.Target.PID, unix.SIGQUIT)
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.ESRCH):
		return fmt.Errorf("%w: process %d exited while attaching", ErrProcessGone, vm.Target.PID)
	case errors.Is(err, unix.EPERM):
		return fmt.Errorf("%w: cannot signal process %d (uid %d) as uid %d; %s", ErrPermission, vm.Target.PID, vm.Target.UID, os.Geteuid(), vm.Target.Remedy(procfs.CapKill))
	}
	return fmt.Errorf("attach: signal %d: %w", vm.Target.PID, err)
}

// frozenErr is ErrNoListener when the cgroup freezer holds the JVM (podman or docker pause): its
// threads sleep in /proc, not stopped, but cannot run to answer; nil otherwise, or when that cannot be
// read.
// Frozen is an ErrNoListener error when the cgroup freezer holds the JVM (podman or docker pause),
// nil otherwise. A request sent to such a JVM waits in its socket and runs when it is thawed, perhaps
// much later: check first where that would surprise (a heap dump, a JFR recording).
func (vm *VM) Frozen() error { return vm.frozenErr() }

func (vm *VM) frozenErr() error {
	if frozen, err := procfs.Default.Frozen(vm.Target.PID); err != nil || !frozen {
		return nil
	}
	return fmt.Errorf("%w: JVM %d is frozen by its cgroup's freezer (podman or docker pause) and cannot answer; thaw it (podman unpause)", ErrNoListener, vm.Target.PID)
}

func (vm *VM) stoppedErr(st procfs.Status) error {
	return fmt.Errorf("%w: JVM %d is %s (state %c) and cannot answer; resume it (kill -CONT %d) or detach the debugger", ErrNoListener, vm.Target.PID, st.StateName(), st.State, vm.Target.PID)
}
