//go:build !linux

package gjcmd

// openNonblock is 0 where O_NONBLOCK is not known.
const openNonblock = 0

// sameFile is false where copies are not made.
func sameFile(_, _ string) (int, bool) { return 0, false }
