package attach

import (
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/internal/procfs"
	"github.com/jvmkit/jvmkit/internal/rootfs"
)

// releaseFeature guesses the target's JDK feature release from the `release` file of the Java home its
// executable is in (<home>/bin/java), read inside the target's root: 0 when it cannot tell (an
// executable replaced since it started, a runtime without the file). It costs a readlink and a small
// read, where asking the JVM would cost a round trip; it is only a hint for the protocol (see
// ExecuteTo), since the file is the JVM user's to write.
func (t *Target) releaseFeature() int {
	exe, err := os.Readlink(procfs.Default.Path(t.PID, "exe"))
	if err != nil || !path.IsAbs(exe) || strings.HasSuffix(exe, " (deleted)") {
		return 0
	}
	fd, err := rootfs.Open(t.Root, path.Join(path.Dir(path.Dir(exe)), "release"), unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return 0
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return 0 // a FIFO or device would block or never end
	}
	var buf [4096]byte
	n, err := unix.Pread(fd, buf[:], 0)
	if err != nil {
		return 0
	}
	return ReleaseFeature(buf[:n])
}
