package attach

import (
	"errors"
	"io"
	"os"
	"path"
	"strings"

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
	f, err := rootfs.OpenRegular(t.Root, path.Join(path.Dir(path.Dir(exe)), "release"), "release")
	if err != nil {
		return 0 // missing, or a FIFO or device, which would block or never end
	}
	defer f.Close()
	var buf [4096]byte
	n, err := io.ReadFull(f, buf[:])
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return 0
	}
	return ReleaseFeature(buf[:n])
}
