package agent

import (
	"os"

	"golang.org/x/sys/unix"
)

// openConfigFlags: a FIFO does not block the open, a terminal does not become the agent's.
const openConfigFlags = unix.O_NONBLOCK | unix.O_NOCTTY

// ownerAndPerm returns the file's owner and permission bits.
func ownerAndPerm(f *os.File) (uid int, perm uint32, err error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return 0, 0, err
	}
	return int(st.Uid), st.Mode & 0o777, nil
}
