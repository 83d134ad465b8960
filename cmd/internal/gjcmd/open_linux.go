package gjcmd

import "golang.org/x/sys/unix"

// openNonblock opens files that might be FIFOs without waiting for a writer.
const openNonblock = unix.O_NONBLOCK | unix.O_NOCTTY
