package procfs

import (
	"errors"
	"time"

	"golang.org/x/sys/unix"
)

// Exited reports whether the process behind pidfd has exited (a zombie has: it runs no more). A pidfd
// polls readable from the moment its process exits.
func Exited(pidfd int) bool {
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return err == nil && n > 0
	}
}

// ExitStatusOf returns how the process behind pidfd (pid in fs) ended, once it has: from the pidfd
// itself (PIDFD_GET_INFO with PIDFD_INFO_EXIT, Linux 6.15+, after its parent reaped it), else from its
// /proc/<pid>/stat while it is a zombie. Known is false while it runs, and when neither tells (an older
// kernel whose parent already reaped it).
func (fs FS) ExitStatusOf(pidfd, pid int) ExitStatus {
	if !Exited(pidfd) {
		return ExitStatus{}
	}
	// The pidfd has the status once the parent reaped the process, /proc while it is a zombie: a
	// reap between the two looks leaves both empty (seen once under load: a SIGKILLed child reaped at
	// once by its parent). A few more looks, a millisecond apart, close that gap.
	for attempt := range 5 {
		if attempt > 0 {
			time.Sleep(time.Millisecond)
		}
		info := unix.PidfdInfo{Mask: unix.PIDFD_INFO_EXIT}
		if err := unix.IoctlPidfdInfo(pidfd, &info); err == nil && info.Mask&unix.PIDFD_INFO_EXIT != 0 {
			return FromWaitStatus(uint32(info.Exit_code))
		}
		if b, err := readFile(fs.Path(pid, "stat")); err == nil {
			if state, _, err := ParseStat(b); err == nil && state == 'Z' {
				if code, err := ParseStatExitCode(b); err == nil {
					return FromWaitStatus(code)
				}
			}
		}
	}
	return ExitStatus{}
}
