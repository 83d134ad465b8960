package jvmti

import (
	"embed"
	"errors"
	"fmt"
	"runtime"

	"github.com/jvmkit/jvmkit/attach"
)

// The agent libraries built by `make agent` (jvmti/agent/build.sh), one per agent and architecture:
// amd64 with gcc, arm64 with Debian's gcc-aarch64-linux-gnu. Each binary carries them all and loads the
// ones for its own GOARCH.
//
//go:embed agent/libjvmkit-*-linux-*.so
var libs embed.FS

// ErrNotSupported: not on this OS, or no library for this architecture (attach.ErrNotSupported).
var ErrNotSupported = attach.ErrNotSupported

// ErrNoExec is returned when the JVM's /tmp is mounted noexec: a JVMTI agent cannot be loaded from there.
var ErrNoExec = errors.New("jvmti: the JVM's /tmp is mounted noexec")

// Library returns jvmkit's agent library name ("perfmap", "heapsample") for this architecture, and its
// file name.
func Library(name string) ([]byte, string, error) {
	file := "libjvmkit-" + name + "-linux-" + runtime.GOARCH + ".so"
	lib, err := libs.ReadFile("agent/" + file)
	if err != nil {
		return nil, "", fmt.Errorf("jvmti: %w: this build has no %s agent for linux/%s (jvmti/agent/%s was not built); run `make agent` on linux/%s and rebuild",
			ErrNotSupported, name, runtime.GOARCH, file, runtime.GOARCH)
	}
	return lib, file, nil
}
