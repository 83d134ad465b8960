package agent

import (
	"io/fs"
	"syscall"

	"golang.org/x/sys/unix"
)

// openConfigFlags: a FIFO does not block the open, a terminal does not become the agent's.
const openConfigFlags = unix.O_NONBLOCK | unix.O_NOCTTY

func fileOwner(fi fs.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
