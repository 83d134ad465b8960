package attach

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/internal/procfs"
)

// Dial attaches to the HotSpot JVM with the given pid (as seen by the caller; for a JVM in a container
// that is its host pid). If the JVM's attach listener is not running yet it is started. ctx bounds
// the whole attach; without a deadline, opts.AttachTimeout (default 10 s) applies.
func Dial(ctx context.Context, pid int, opts *Options) (*VM, error) {
	vm := &VM{pidfd: -1, inotify: -1}
	if opts != nil {
		vm.opts = *opts
	}
	if vm.opts.AttachTimeout <= 0 {
		vm.opts.AttachTimeout = DefaultAttachTimeout
	}
	bounded := lazyDeadline{parent: ctx, by: time.Now().Add(vm.opts.AttachTimeout)}
	defer bounded.stop()

	// A pidfd taken before looking at the process pins its identity: signals sent through it cannot
	// reach a process that reused the pid.
	if fd, err := unix.PidfdOpen(pid, 0); err == nil {
		vm.pidfd = fd
	} else if errors.Is(err, unix.ESRCH) {
		return nil, fmt.Errorf("%w: %d", ErrProcessGone, pid)
	}
	t, err := Resolve(pid)
	if err != nil {
		if gerr := vm.exitErr(pid, "before it could be attached"); gerr != nil {
			err = gerr
		}
		vm.Close()
		return nil, err
	}
	vm.Target = t
	tmp, err := t.OpenTmp()
	if err != nil {
		if jerr := t.checkJVM(); jerr != nil { // not a JVM: that says more than its /tmp
			err = jerr
		}
	} else {
		defer func() { tmp.Close() }() // unless handed to the first connection below
		var ok bool
		ok, err = t.checkSocket(tmp)
		if errors.Is(err, errForeignSocket) {
			if t.removeStaleSocket(tmp, 0) {
				vm.logf("removed a stale socket of another user at %s", t.socketName())
			}
			ok, err = t.checkSocket(tmp) // removed by us or by another attacher, or still refused
		}
		if err == nil && !ok {
			err = vm.startListener(bounded.get(), tmp)
		}
	}
	if err != nil {
		if gerr := vm.Gone(); gerr != nil { // its root and socket go first when it is killed
			err = gerr
		}
		vm.Close()
		return nil, err
	}
	if t.Status.Stopped() {
		vm.Close()
		return nil, vm.stoppedErr(t.Status)
	}
	// The first connection uses this /tmp, opened and checked a moment ago, and the stale trigger files
	// are looked for while the JVM runs the first request (see tidy): a warm attach does neither twice.
	vm.tmp, tmp = tmp, nil
	vm.dialed = time.Now()
	return vm, nil
}

// lazyDeadline is parent bounded by the time by, made only when a wait needs it: a context with a
// deadline starts a timer, and setting one wakes the runtime's timer thread on the other CPU, a cost
// that a warm attach, which never waits, need not pay.
type lazyDeadline struct {
	parent context.Context
	by     time.Time
	ctx    context.Context
	cancel context.CancelFunc
}

func (l *lazyDeadline) get() context.Context {
	if l.ctx == nil {
		l.ctx, l.cancel = context.WithDeadline(l.parent, l.by)
	}
	return l.ctx
}

func (l *lazyDeadline) stop() {
	if l.cancel != nil {
		l.cancel()
	}
}

// freshTmp is how long after Dial the first connection may still use Dial's /tmp.
const freshTmp = time.Second

// tidy removes the trigger files that attachers killed while starting the listener left behind (see
// removeStaleTriggers), once per VM: after the first request is sent, while the JVM runs it, or at Close.
// tmp is Dial's, which tidy closes.
func (vm *VM) tidy(tmp *Dir) {
	if tmp == nil {
		return
	}
	for _, p := range vm.Target.removeStaleTriggers(tmp) {
		vm.logf("removed stale trigger file %s", p)
	}
	tmp.Close()
}

// takeTmp hands Dial's /tmp to the one caller that gets it (nil for the others).
func (vm *VM) takeTmp() *Dir {
	vm.mu.Lock()
	defer vm.mu.Unlock()
	tmp := vm.tmp
	vm.tmp = nil
	return tmp
}

// Close releases the process handle. It does not affect the JVM.
func (vm *VM) Close() error {
	vm.tidy(vm.takeTmp())
	vm.listenerMu.Lock() // not while a restart uses the descriptors
	defer vm.listenerMu.Unlock()
	for _, fd := range []*int{&vm.pidfd, &vm.inotify} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
	return nil
}

// connect opens a connection to the listener and checks that the peer is the target process itself
// (SO_PEERCRED reports the listener's pid in our namespace), which defeats sockets planted by others.
// The first connection after Dial also returns Dial's /tmp, for the caller to tidy once its request is
// sent; the others return nil.
func (vm *VM) connect(ctx context.Context) (*conn, *Dir, error) {
	t := vm.Target
	// Opened again for each connection, as the JVM resolves /tmp each time it makes its socket; the
	// first connection takes Dial's, if Dial was a moment ago (the /tmp of a process can be mounted
	// over, and a descriptor kept would still name the old one).
	first := vm.takeTmp()
	if first != nil && time.Since(vm.dialed) > freshTmp {
		vm.tidy(first)
		first = nil
	}
	tmp := first
	if tmp == nil {
		var err error
		if tmp, err = t.OpenTmp(); err != nil {
			if gerr := vm.Gone(); gerr != nil {
				return nil, nil, gerr
			}
			return nil, nil, err
		}
	}
	c, err := vm.connectIn(ctx, tmp)
	switch {
	case first == nil:
		tmp.Close()
		return c, nil, err
	case err != nil:
		vm.tidy(first) // a busy or refusing listener is when killed attachers leave triggers behind
		return nil, nil, err
	}
	return c, first, nil
}

// connectIn connects to the listener's socket in tmp once it is checked.
func (vm *VM) connectIn(ctx context.Context, tmp *Dir) (*conn, error) {
	// Connecting is part of attaching: bounded by AttachTimeout even when the operation is not (a
	// listener wedged by another client fills its backlog and would make us retry for ever).
	bounded := lazyDeadline{parent: ctx, by: time.Now().Add(vm.opts.AttachTimeout)}
	defer bounded.stop()
	t := vm.Target
	refused, ok, err := t.checkSocketIno(tmp) // refused: the socket connecting tries, for restartListener
	if err != nil || !ok {
		if gerr := vm.Gone(); gerr != nil { // its root and socket go first when it is killed
			return nil, gerr
		}
		if err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: socket %s disappeared", ErrNoListener, t.socketName())
	}
	vm.mu.Lock()
	asOwner := vm.asOwner
	vm.mu.Unlock()
	backoff := 500 * time.Microsecond
	restarted := false
	for {
		var (
			c   *conn
			err error
		)
		if asOwner {
			c, err = dialAs(bounded.get(), tmp.fd, t.socketFile(), t.UID, t.GID)
		} else {
			c, err = dialUnix(tmp.Path() + "/" + t.socketFile())
		}
		switch {
		case err == nil:
			if err := checkPeer(c, t.PID); err != nil {
				c.Close()
				return nil, err
			}
			return c, nil
		case errors.Is(err, unix.EAGAIN):
			// The listener's backlog (5) is full: it serves one request at a time.
			if err := sleepCtx(bounded.get(), backoff); err != nil {
				return nil, fmt.Errorf("%w: JVM %d's attach listener is busy (backlog full): %w", ErrNoListener, t.PID, err)
			}
			backoff = min(backoff*2, 20*time.Millisecond)
		case errors.Is(err, unix.ECONNREFUSED):
			if gerr := vm.goneErr("before it could be asked"); gerr != nil {
				return nil, gerr
			}
			if !restarted {
				// A socket of the JVM's user that nobody listens on: left by a process that had this
				// pid and was killed after the JVM started (another container's JVM with the same pid
				// in a shared /tmp).
				restarted = true
				if err := vm.restartListener(bounded.get(), tmp, refused); err != nil {
					return nil, err
				}
				continue
			}
			return nil, fmt.Errorf("%w: nobody listens on %s (stale socket of a killed JVM?)", ErrNoListener, t.socketName())
		case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
			return nil, fmt.Errorf("%w: connect %s as uid %d: %w; %s", ErrPermission, t.socketName(), os.Geteuid(), err, t.Remedy(procfs.CapDacOverride))
		default:
			return nil, fmt.Errorf("attach: connect %s: %w", t.socketName(), err)
		}
	}
}

// restartListener replaces a stale socket in tmp, inode ino, that connecting was refused on: it is
// removed if it still refuses connections and the listener is started (HotSpot starts it again when it
// finds its socket gone). Operations that find the socket stale at once restart it once: the others find
// another inode there and try it.
func (vm *VM) restartListener(ctx context.Context, tmp *Dir, ino uint64) error {
	t := vm.Target
	vm.listenerMu.Lock()
	defer vm.listenerMu.Unlock()
	if now := t.socketIno(tmp); now != ino && now != 0 {
		return nil // replaced meanwhile
	}
	if !t.removeStaleSocket(tmp, ino) && t.socketIno(tmp) != 0 {
		return fmt.Errorf("%w: nobody listens on %s (stale socket of a killed JVM?) and it cannot be removed", ErrNoListener, t.socketName())
	}
	vm.logf("nobody listened on %s (inode %d): removed; starting the listener", t.socketName(), ino)
	if err := vm.startListener(ctx, tmp); err != nil {
		return fmt.Errorf("%s was a stale socket (nobody listened on it): %w", t.socketName(), err)
	}
	return nil
}

// dialUnix connects without blocking; a full backlog returns EAGAIN at once (AF_UNIX semantics) so
// that the caller's backoff, not the kernel, decides how long to wait.
func dialUnix(path string) (*conn, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	if err := unix.Connect(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return newConn(fd), nil
}

// dialAs connects to the socket name in the directory dirfd from a thread whose effective uid/gid are
// the target's, for JVMs that accept only their own user (JDK 8). Credentials in Linux are per thread;
// Go's Setuid family changes all threads, so the raw system calls run on a locked thread that is never
// unlocked, which makes the runtime discard that thread afterwards. The rest of the process keeps its
// credentials.
func dialAs(ctx context.Context, dirfd int, name string, uid, gid int) (*conn, error) {
	// The thread may connect after we have given up on it (ctx): through a copy of dirfd that it closes,
	// never through a number that may name another file by then.
	dfd, err := unix.FcntlInt(uintptr(dirfd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("attach: dup: %w", err)
	}
	path := "/proc/self/fd/" + strconv.Itoa(dfd) + "/" + name
	type result struct {
		fd  int
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with this goroutine
		defer unix.Close(dfd)
		fd, err := func() (int, error) {
			if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, ^uintptr(0), uintptr(gid), ^uintptr(0)); e != 0 {
				return -1, fmt.Errorf("setresgid: %w", e)
			}
			if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, ^uintptr(0), uintptr(uid), ^uintptr(0)); e != 0 {
				return -1, fmt.Errorf("setresuid: %w", e)
			}
			fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
			if err != nil {
				return -1, err
			}
			if err := unix.Connect(fd, &unix.SockaddrUnix{Name: path}); err != nil {
				unix.Close(fd)
				return -1, err
			}
			return fd, nil
		}()
		ch <- result{fd, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			return nil, r.err
		}
		return newConn(r.fd), nil
	case <-ctx.Done():
		go func() {
			if r := <-ch; r.err == nil {
				unix.Close(r.fd)
			}
		}()
		return nil, ctx.Err()
	}
}

// conn is a connection to an attach listener: the raw non-blocking socket, waited on with ppoll together
// with the JVM's pidfd (its exit ends a wait at once). Not an *os.File served by the runtime's poller:
// that poller (an epoll instance, an eventfd, a thread to wait in it) and the timers of its deadlines
// are start-up work for a warm gjcmd, which waits once if at all (docs/benchmarks.md).
type conn struct {
	fd int // the socket; -1 once closed (under mu, against abort)

	mu sync.Mutex
}

func newConn(fd int) *conn { return &conn{fd: fd} }

// connName is how errors name the socket, as os.File did.
const connName = "attach"

// Close closes the socket (once).
func (c *conn) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fd >= 0 {
		unix.Close(c.fd)
		c.fd = -1
	}
}

// abort shuts the socket down both ways, from another goroutine: a wait on it ends at once (a
// cancellation). Unlike closing, this never reaches a descriptor that the number names later.
func (c *conn) abort() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fd >= 0 {
		_ = unix.Shutdown(c.fd, unix.SHUT_RDWR)
	}
}

// CloseWrite shuts down the sending side: the JVM reads the request up to there.
func (c *conn) CloseWrite() error { return unix.Shutdown(c.fd, unix.SHUT_WR) }

// readNow reads what the socket holds now, without waiting: EAGAIN when it holds nothing yet, io.EOF at
// the end of the reply.
func (c *conn) readNow(p []byte) (int, error) {
	n, err := ignoringEINTR(func() (int, error) { return unix.Read(c.fd, p) })
	switch {
	case err != nil:
		return 0, &os.PathError{Op: "read", Path: connName, Err: err}
	case n == 0 && len(p) > 0:
		return 0, io.EOF
	}
	return n, nil
}

// write sends p whole; when the socket's buffer is full (a protocol 2 request can be larger than it) it
// waits for room until ctx ends: unlike a read it does not watch the JVM, as before this conn (a stopped
// JVM holds a request that big until the deadline, without one for ever). An error is an *os.PathError
// with the errno (EPIPE, ECONNRESET: the JVM closed), or ctx's.
func (c *conn) write(ctx context.Context, p []byte) error {
	for len(p) > 0 {
		n, err := ignoringEINTR(func() (int, error) { return unix.Write(c.fd, p) })
		if n > 0 {
			p = p[n:]
			continue
		}
		if err == nil {
			err = io.ErrShortWrite
		}
		if !errors.Is(err, unix.EAGAIN) {
			return &os.PathError{Op: "write", Path: connName, Err: err}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if _, err := c.wait(ctx, unix.POLLOUT, -1, watchInterval); err != nil {
			return err
		}
	}
	return nil
}

// wait waits until the socket has events (POLLIN, POLLOUT), is shut down or closed by the JVM, the
// process of pidfd (-1: none) exits (exited), ctx's deadline comes or d passes, whichever is first. A
// cancelled ctx ends it through abort. Other than exited, it does not say which: the caller looks.
func (c *conn) wait(ctx context.Context, events int16, pidfd int, d time.Duration) (exited bool, err error) {
	if dl, ok := ctx.Deadline(); ok {
		d = min(d, time.Until(dl))
	}
	d = max(d, 100*time.Microsecond) // a deadline just passed: ctx says so in a moment, not spin here
	fds := []unix.PollFd{{Fd: int32(c.fd), Events: events}, {Fd: int32(pidfd), Events: unix.POLLIN}}
	if pidfd < 0 {
		fds = fds[:1]
	}
	ts := unix.NsecToTimespec(int64(d))
	if _, err := unix.Ppoll(fds, &ts, nil); err != nil && !errors.Is(err, unix.EINTR) {
		return false, fmt.Errorf("attach: poll: %w", err)
	}
	return len(fds) > 1 && fds[1].Revents != 0, nil
}

// ignoringEINTR retries f while a signal interrupts it (Go's handlers restart most calls, not all).
func ignoringEINTR(f func() (int, error)) (int, error) {
	for {
		n, err := f()
		if !errors.Is(err, unix.EINTR) {
			return n, err
		}
	}
}

func checkPeer(c *conn, pid int) error {
	cred, err := unix.GetsockoptUcred(c.fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return fmt.Errorf("attach: SO_PEERCRED: %w", err)
	}
	if int(cred.Pid) != pid {
		return fmt.Errorf("%w: the attach socket is served by pid %d (uid %d), not by JVM %d; refusing it (planted socket?)", ErrPermission, cred.Pid, cred.Uid, pid)
	}
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// watchInterval is how often a blocked read checks that the JVM is still alive and running.
const watchInterval = time.Second

// maxErrorOutput bounds the output kept for a *JVMError.
const maxErrorOutput = 1 << 20

// roundTrip sends one request and copies the reply's output to w. With probe set, a reply of
// StatusBadVersion gives errBadVersion (the caller retries in protocol 1).
func (vm *VM) roundTrip(ctx context.Context, req []byte, w io.Writer, probe bool) error {
	c, tmp, err := vm.connect(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	defer func() { vm.tidy(tmp) }() // if not done below
	stop := context.AfterFunc(ctx, c.abort)
	defer stop()

	if err := ctx.Err(); err != nil { // abort may not have run yet: nothing is sent after a cancellation
		return err
	}
	status, rest, err := 0, []byte(nil), error(nil)
	if werr := c.write(ctx, req); werr != nil {
		// The JVM closes at once on requests it rejects; the reply, if any, tells more.
		if status, rest, err = vm.readStatus(ctx, c); err != nil {
			// A JVM that drops a peer of another user may do so before the request is written: in a
			// user namespace that does not map root (rootless containers, unshare -U), root is the
			// overflow uid there, which the JVM does not accept.
			if (errors.Is(werr, unix.EPIPE) || isReset(werr)) && ctx.Err() == nil && vm.goneErr("before it could be asked") == nil && vm.tryAsOwner() {
				vm.logf("connection closed as uid %d; retrying with the JVM's credentials (uid %d)", os.Geteuid(), vm.Target.UID)
				return vm.roundTrip(ctx, req, w, probe)
			}
			return vm.ioErr(ctx, "send request", werr)
		}
	} else {
		_ = c.CloseWrite()
		vm.tidy(tmp) // while the JVM runs the request
		tmp = nil
		status, rest, err = vm.readStatus(ctx, c)
		// A JVM that stopped answering (frozen, stopped, past the deadline) with the whole request in hand
		// runs it once it runs again; not a protocol probe, which a JDK before 24 refuses.
		err = abandoned(err, !probe)
	}
	if err != nil {
		// A JVM killed with the connection open closes it a moment before its pidfd tells that it
		// exited (its threads close the descriptors, then the last one reports the exit): wait for
		// that moment a little, on this path only.
		if errors.Is(err, ErrNoReply) || isEOF(err) {
			vm.waitExit(100 * time.Millisecond)
		}
		if gerr := vm.goneErr("before it replied"); gerr != nil {
			return gerr
		}
		if errors.Is(err, ErrNoReply) && vm.tryAsOwner() {
			vm.logf("no reply as uid %d; retrying with the JVM's credentials (uid %d)", os.Geteuid(), vm.Target.UID)
			return vm.roundTrip(ctx, req, w, probe)
		}
		return err
	}
	switch {
	case probe && status == StatusBadVersion:
		return errBadVersion
	case status != 0:
		lb := &limitedBuffer{max: maxErrorOutput}
		if err := vm.drain(ctx, c, rest, lb); err != nil {
			return err
		}
		return &JVMError{Code: status, Message: lb.String()}
	}
	err = abandoned(vm.drain(ctx, c, rest, w), false)
	if errors.Is(err, ErrNoListener) && !errors.Is(err, ErrAbandoned) {
		// The JVM stopped answering in the middle of its reply, which it began once the command had run
		// (or, streaming, while it runs).
		err = fmt.Errorf("%w; its reply was cut short: the output may be incomplete", err)
	}
	if ctx.Err() == nil {
		// A JVM that dies while it replies closes the connection as if it had finished.
		if gerr := vm.goneErr("while it replied; its output may be incomplete"); gerr != nil {
			return gerr
		}
	}
	return err
}

// abandoned marks an error that came after the JVM had the whole request, which it goes on with: a
// cancellation, and with held an ErrNoListener (a JVM that stopped answering before its reply began).
func abandoned(err error, held bool) error {
	if (errors.Is(err, context.Canceled) || held && errors.Is(err, ErrNoListener)) && !errors.Is(err, ErrAbandoned) {
		return fmt.Errorf("%w: %w", ErrAbandoned, err)
	}
	return err
}

// waitExit waits up to d for the JVM to exit.
func (vm *VM) waitExit(d time.Duration) {
	if vm.pidfd < 0 {
		return
	}
	_, _, _ = waitEvent(-1, vm.pidfd, d)
}

// goneErr says that the JVM has exited and how, as far as the kernel tells (exit status, or the signal
// that killed it); nil while it runs.
func (vm *VM) goneErr(when string) error {
	t := vm.Target
	if vm.pidfd < 0 {
		if _, err := t.current(); err != nil {
			return err
		}
		return nil
	}
	return vm.exitErr(t.PID, when)
}

// Gone is ErrProcessGone saying that the JVM has exited and how (exit status, or the signal that killed
// it), asked of the pidfd held since Dial; nil while it runs. For an error about the JVM's files or
// memory that may come from its end.
func (vm *VM) Gone() error {
	if err := vm.goneErr(""); err != nil {
		return err
	}
	// The pidfd polls readable once every thread has exited; a SIGKILLed JVM's memory and root go
	// before, while its threads are still in their exit.
	err := procfs.Default.GoneErr(vm.Target.PID)
	if err != nil && vm.pidfd >= 0 {
		vm.waitExit(time.Second)
		if gerr := vm.goneErr(""); gerr != nil {
			return gerr
		}
	}
	return err
}

// exitErr is goneErr for process pid, by the pidfd alone.
func (vm *VM) exitErr(pid int, when string) error {
	if vm.pidfd < 0 || !procfs.Exited(vm.pidfd) {
		return nil
	}
	return fmt.Errorf("%w: process %d %s", ErrProcessGone, pid, strings.TrimSpace(procfs.Default.ExitStatusOf(vm.pidfd, pid).String()+" "+when))
}

// limitedBuffer keeps the first max bytes written to it and discards the rest.
type limitedBuffer struct {
	bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// tryAsOwner switches to connecting with the target's credentials, once, when that can help: we are
// root and the JVM is not (a JDK 8 JVM silently drops connections whose peer is not its own user).
func (vm *VM) tryAsOwner() bool {
	vm.mu.Lock()
	defer vm.mu.Unlock()
	if vm.asOwner || os.Geteuid() != 0 || vm.Target.UID == 0 {
		return false
	}
	vm.asOwner = true
	return true
}
