package procfs

import (
	"errors"

	"golang.org/x/sys/unix"
)

// Alive tells whether process pid runs: it exists and has not exited. A zombie has exited (kill(pid, 0)
// would call it alive). The system's /proc asks a pidfd, which polls readable from the moment its
// process exits; without pidfds (Linux < 5.3, or pid a thread rather than a process), and for a fixture
// tree, the state in <root>/<pid>/stat. Like every question by pid it can be fooled by a reused pid;
// hold a pidfd (WatchExit) where the identity matters.
func (fs FS) Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if fs.root == Default.root {
		fd, err := unix.PidfdOpen(pid, 0)
		if err == nil {
			defer unix.Close(fd)
			return !Exited(fd)
		}
		if errors.Is(err, unix.ESRCH) {
			return false
		}
	}
	return fs.aliveByStat(pid)
}

func isNoProcess(err error) bool { return errors.Is(err, unix.ESRCH) }
