package attach

import (
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
	buf := make([]byte, 1024) // JAVA_VERSION is within the first 110 bytes in the JDKs 11 to 25 we know
	n, err := rootfs.ReadHead(t.Root, path.Join(path.Dir(path.Dir(exe)), "release"), buf)
	if err != nil {
		return 0 // missing, or a FIFO or device, which would block or never end
	}
	return ReleaseFeature(buf[:n])
}
