package gjcmd

import "golang.org/x/sys/unix"

// openNonblock opens files that might be FIFOs without waiting for a writer.
const openNonblock = unix.O_NONBLOCK | unix.O_NOCTTY

// sameFile reports whether paths a and b name one file (no link followed), and its owner.
func sameFile(a, b string) (uid int, same bool) {
	var sa, sb unix.Stat_t
	if unix.Lstat(a, &sa) != nil || unix.Lstat(b, &sb) != nil || sa.Dev != sb.Dev || sa.Ino != sb.Ino {
		return 0, false
	}
	return int(sa.Uid), true
}
