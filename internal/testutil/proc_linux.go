package testutil

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/internal/procfs"
)

// SigQuitState reports whether process pid catches or ignores SIGQUIT, from SigCgt and SigIgn in
// /proc/<pid>/status. A JVM catches it unless it runs with -Xrs; a process that neither catches nor ignores
// it (nor blocks it) is killed by it.
func SigQuitState(pid int) (caught, ignored bool, err error) {
	st, err := readStatus(pid)
	if err != nil {
		return false, false, err
	}
	return st.Catches(int(unix.SIGQUIT)), st.Ignores(int(unix.SIGQUIT)), nil
}

func readStatus(pid int) (procfs.Status, error) {
	st, err := procfs.Default.Status(pid)
	if err != nil {
		return procfs.Status{}, fmt.Errorf("read status of %d: %w", pid, err)
	}
	return st, nil
}

// processStartTime returns when pid started, in clock ticks after boot: with the pid, it identifies a process.
func processStartTime(pid int) (uint64, error) {
	return procfs.Default.StartTime(pid)
}

func processGone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ESRCH)
}

// holdsSocket reports whether process pid has a unix socket open that was bound to path (as the process sees
// paths). HotSpot binds its attach socket to "<path>.tmp" and renames it, and /proc/<pid>/net/unix keeps
// the name given to bind, so both names are looked for.
func holdsSocket(pid int, path string) (bool, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/unix", pid))
	if err != nil {
		if processGone(err) {
			return false, nil
		}
		return false, fmt.Errorf("list unix sockets of %d: %w", pid, err)
	}
	want := make(map[string]bool)
	for _, p := range []string{path, path + ".tmp"} {
		for _, ino := range parseUnixSockets(data, p) {
			want[fmt.Sprintf("socket:[%d]", ino)] = true
		}
	}
	if len(want) == 0 {
		return false, nil
	}
	fdDir := fmt.Sprintf("/proc/%d/fd", pid)
	fds, err := os.ReadDir(fdDir)
	if err != nil {
		if processGone(err) {
			return false, nil
		}
		return false, fmt.Errorf("list fds of %d: %w", pid, err)
	}
	for _, fd := range fds {
		if link, err := os.Readlink(fdDir + "/" + fd.Name()); err == nil && want[link] {
			return true, nil
		}
	}
	return false, nil
}

func statID(path string) (fileID, error) {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return fileID{}, &fs.PathError{Op: "lstat", Path: path, Err: err}
	}
	return fileID{path: path, dev: st.Dev, ino: st.Ino}, nil
}

// pidfdWait waits up to d for the process behind a pidfd to exit; a pidfd polls readable once it has (for a
// thread-group leader: once every thread has, so a zombie counts as exited).
func pidfdWait(fd int, d time.Duration) (exited bool, err error) {
	deadline := time.Now().Add(d)
	for {
		ms := int(time.Until(deadline).Milliseconds())
		if ms < 0 {
			ms = 0
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, ms)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("poll pidfd: %w", err)
		}
		return n > 0 && fds[0].Revents&(unix.POLLIN|unix.POLLHUP|unix.POLLERR) != 0, nil
	}
}

// StopProcess sends SIGSTOP to pid and waits until every thread is stopped (state T in its stat). The
// returned func, also registered as a cleanup, sends SIGCONT: the JVM is never left stopped.
func StopProcess(t testing.TB, pid int) (cont func()) {
	t.Helper()
	cont = func() { _ = unix.Kill(pid, unix.SIGCONT) }
	t.Cleanup(cont)
	if err := unix.Kill(pid, unix.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		all := len(tasks) > 0
		for _, task := range tasks {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
			s := string(b)
			if i := strings.LastIndexByte(s, ')'); i < 0 || i+2 >= len(s) || s[i+2] != 'T' {
				all = false
			}
		}
		if all {
			return cont
		}
	}
	cont()
	t.Fatalf("process %d did not stop", pid)
	return cont
}
