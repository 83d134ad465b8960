package rootfs

import (
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// randomBytes fills b from the kernel's random source: getrandom(2), or /dev/urandom where the kernel has
// no such call. Not crypto/rand: it links Go's FIPS module, whose initialization every tool using this
// package paid at start (gjcmd's start is measured against jattach's). It panics only when neither source
// gives bytes, when a name nobody can guess cannot be made.
func randomBytes(b []byte) {
	for len(b) > 0 {
		n, err := unix.Getrandom(b, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n <= 0 {
			f, ferr := os.Open("/dev/urandom")
			if ferr == nil {
				_, ferr = io.ReadFull(f, b)
				_ = f.Close()
			}
			if ferr != nil {
				panic("rootfs: no random bytes: " + errors.Join(err, ferr).Error())
			}
			return
		}
		b = b[n:]
	}
}
