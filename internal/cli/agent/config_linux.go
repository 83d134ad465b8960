package agent

import (
	"os"

	"golang.org/x/sys/unix"
)

// openConfigFlags: a FIFO does not block the open, a terminal does not become the agent's.
const openConfigFlags = unix.O_NONBLOCK | unix.O_NOCTTY

func fileOwner(f *os.File) (int, bool) {
	var st unix.Stat_t
	if unix.Fstat(int(f.Fd()), &st) != nil {
		return 0, false
	}
	return int(st.Uid), true
}
