package procfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

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
		return fmt.Errorf("%w: cannot read the %s of process %d as uid %d; run as root or as the process's user",
			procerr.ErrPermission, what, pid, os.Geteuid())
	}
	return fmt.Errorf("read the %s of process %d: %w", what, pid, err)
}
