package cliutil

import (
	"errors"
	"strings"

	"github.com/jvmkit/jvmkit/internal/procfs"
	"golang.org/x/sys/unix"
)

// deployCaps are the capabilities docs/deploy.md's table asks for, one command or another.
var deployCaps = []procfs.Capability{procfs.CapSysPtrace, procfs.CapKill, procfs.CapDacOverride, procfs.CapDacReadSearch,
	procfs.CapChown, procfs.CapFowner, procfs.CapPerfmon, procfs.CapSysAdmin}

// CapsNote is, for the kernel's refusal (EPERM, EACCES) whose message names no capability, the
// capabilities of docs/deploy.md's table that this process lacks as root (a container's root lacks
// most): the refusal was likely one of them. "" otherwise, and for jvmkit's own refusals (a planted
// file, a socket the JVM did not make), which no capability lifts.
func CapsNote(err error) string {
	var errno unix.Errno
	if !errors.As(err, &errno) || errno != unix.EPERM && errno != unix.EACCES || strings.Contains(err.Error(), "CAP_") {
		return ""
	}
	h := procfs.RootWithout(deployCaps...)
	if h == "" {
		return ""
	}
	return h + "; docs/deploy.md lists what each command needs"
}
