//go:build !linux

package gjcmd

// openNonblock is 0 where O_NONBLOCK is not known.
const openNonblock = 0
