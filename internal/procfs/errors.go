package procfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/jvmkit/jvmkit/internal/procerr"
)

// Wrap names the error of reading what (a file under /proc/<pid>, "memory map", "status") of process
// pid the way every package reports it: procerr.ErrProcessGone for a process that is gone,
// procerr.ErrPermission with what to do for one the caller may not read, else the error with its
// operation. nil stays nil.
func Wrap(pid int, what string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist), isNoProcess(err):
		return fmt.Errorf("%w: %d", procerr.ErrProcessGone, pid)
	case errors.Is(err, fs.ErrPermission):
		// Reading another process's memory, maps or root is a ptrace check: its own uid (and gid), or
		// CAP_SYS_PTRACE, which a container's root lacks by default.
		return fmt.Errorf("%w: cannot read the %s of process %d as uid %d; %s", procerr.ErrPermission, what, pid, os.Geteuid(),
			Remedy("the process's user", CapSysPtrace))
	}
	return fmt.Errorf("read the %s of process %d: %w", what, pid, err)
}

// GoneErr is procerr.ErrProcessGone saying how process pid ended (its exit status or signal, read
// while it is a zombie), for a check about the process that failed because it was ending (its maps
// read empty, its root no longer opens); nil while it runs. A process still in its exit (PF_EXITING:
// a SIGKILLed JVM's memory and root are gone before it is a zombie) is waited for up to 200 ms, to say
// how it ended. By pid alone, so it can be fooled by a pid reused since: ask a pidfd (ExitStatusOf)
// where one is held.
func (fs FS) GoneErr(pid int) error {
	deadline := time.Now().Add(200 * time.Millisecond)
	for {
		b, err := readFile(fs.Path(pid, "stat"))
		if err != nil {
			if errors.Is(err, os.ErrNotExist) || isNoProcess(err) {
				return fmt.Errorf("%w: process %d exited", procerr.ErrProcessGone, pid)
			}
			return nil
		}
		state, _, err := ParseStat(b)
		if err != nil {
			return nil
		}
		switch state {
		case 'Z':
			if code, err := ParseStatExitCode(b); err == nil {
				return fmt.Errorf("%w: process %d %s", procerr.ErrProcessGone, pid, FromWaitStatus(code))
			}
			return fmt.Errorf("%w: process %d exited", procerr.ErrProcessGone, pid)
		case 'X':
			return fmt.Errorf("%w: process %d exited", procerr.ErrProcessGone, pid)
		}
		if flags, err := ParseStatFlags(b); err != nil || flags&pfExiting == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: process %d is exiting", procerr.ErrProcessGone, pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
