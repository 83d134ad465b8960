package procfs

import (
	"encoding/binary"
	"errors"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// ExitWatcher tells when a process (not our child) exits and, where the kernel says so, how: the exit
// status or the signal that killed it.
//
// Liveness comes from a pidfd. The status comes from the kernel's process connector (netlink, needs
// CAP_NET_ADMIN and the initial network namespace), whose exit event the kernel sends before the pidfd
// becomes readable; without it, from /proc/<pid>/stat's exit_code while the process is a zombie, which
// its parent usually reaps first: then the status is unknown.
type ExitWatcher struct {
	fs     FS
	pid    int
	done   chan struct{}
	stop   chan struct{}
	once   sync.Once
	mu     sync.Mutex
	status ExitStatus
}

// WatchExit starts watching process pid. An error means that it cannot be watched (no pidfd: Linux
// < 5.3) or is gone already (os.ErrNotExist).
func (fs FS) WatchExit(pid int) (*ExitWatcher, error) { return fs.watchExit(pid, true) }

// WatchExitOnly is WatchExit for a watcher that needs no exit status: it does not subscribe to the
// process connector, whose every exit event on the machine would wake it. Status is known only when
// the process was still a zombie when its exit was seen.
func (fs FS) WatchExitOnly(pid int) (*ExitWatcher, error) { return fs.watchExit(pid, false) }

func (fs FS) watchExit(pid int, status bool) (*ExitWatcher, error) {
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		if errors.Is(err, unix.ESRCH) {
			return nil, os.ErrNotExist
		}
		return nil, err
	}
	w := &ExitWatcher{fs: fs, pid: pid, done: make(chan struct{}), stop: make(chan struct{})}
	nl := -1
	if status {
		nl = openProcConnector()
	}
	go w.run(pidfd, nl)
	return w, nil
}

// Exited is closed when the process has exited.
func (w *ExitWatcher) Exited() <-chan struct{} { return w.done }

// Status returns how the process ended; Known is false before Exited is closed, or when it was not seen.
func (w *ExitWatcher) Status() ExitStatus {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.status
}

// Close stops watching.
func (w *ExitWatcher) Close() { w.once.Do(func() { close(w.stop) }) }

func (w *ExitWatcher) run(pidfd, nl int) {
	defer unix.Close(pidfd)
	if nl >= 0 {
		defer unix.Close(nl)
	}
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}, {Fd: int32(nl), Events: unix.POLLIN}}
	if nl < 0 {
		fds = fds[:1]
	}
	var leader, last *ProcExit
	buf := make([]byte, 64<<10)
	drain := func() {
		for {
			n, _, err := unix.Recvfrom(nl, buf, unix.MSG_DONTWAIT)
			if err != nil || n <= 0 {
				return // EAGAIN; ENOBUFS (events lost) leaves what was seen
			}
			for _, e := range ParseProcEvents(buf[:n]) {
				if e.TGID != w.pid {
					continue
				}
				if e.PID == w.pid {
					leader = &e
				}
				last = &e
			}
		}
	}
	for {
		n, err := unix.Poll(fds, 200)
		select {
		case <-w.stop:
			return
		default:
		}
		if err != nil && !errors.Is(err, unix.EINTR) {
			return
		}
		if n <= 0 {
			continue
		}
		if nl >= 0 {
			drain()
		}
		if fds[0].Revents == 0 {
			continue
		}
		var st ExitStatus
		// The group's status is the same on every thread that did not exit earlier by itself: the
		// leader's if it was seen, else the last thread's.
		switch {
		case leader != nil:
			st = FromWaitStatus(leader.ExitCode)
		case last != nil:
			st = FromWaitStatus(last.ExitCode)
		default:
			// The connector's event can be missed (a subscription that took effect after the exit, lost
			// events): the pidfd itself tells (Linux 6.15+), else the zombie.
			st = w.fs.ExitStatusOf(pidfd, w.pid)
		}
		w.mu.Lock()
		w.status = st
		w.mu.Unlock()
		close(w.done)
		return
	}
}

// openProcConnector subscribes to the kernel's process events; -1 when it cannot.
func openProcConnector() int {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_CONNECTOR)
	if err != nil {
		return -1
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: cnIdxProc}); err != nil {
		unix.Close(fd)
		return -1
	}
	// nlmsghdr, cn_msg{id{CN_IDX_PROC, CN_VAL_PROC}, seq, ack, len 4, flags}, PROC_CN_MCAST_LISTEN.
	const procCnMcastListen = 1
	le := binary.LittleEndian
	msg := make([]byte, nlmsgHdrLen+cnMsgHdrLen+4)
	le.PutUint32(msg[0:], uint32(len(msg)))
	le.PutUint16(msg[4:], unix.NLMSG_DONE)
	c := msg[nlmsgHdrLen:]
	le.PutUint32(c[0:], cnIdxProc)
	le.PutUint32(c[4:], cnValProc)
	le.PutUint16(c[16:], 4)
	le.PutUint32(c[cnMsgHdrLen:], procCnMcastListen)
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return -1
	}
	return fd
}
