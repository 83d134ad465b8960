package hotspot

import (
	"errors"

	"golang.org/x/sys/unix"
)

func processAlive(pid int) bool {
	return pid > 0 && !errors.Is(unix.Kill(pid, 0), unix.ESRCH)
}
