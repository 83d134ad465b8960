//go:build !linux

package testutil

import (
	"context"
	"errors"
	"os/exec"
	"testing"
)

// errNotSupported: the harness drives Linux facilities (procfs, pidfds, namespaces).
var errNotSupported = errors.New("testutil: not supported on this platform")

// StartJVM skips the test: live JVM tests need Linux.
func StartJVM(t testing.TB, jdk JDK, opts JVMOptions) *JVM {
	t.Helper()
	Skipf(t, "live JVM tests need Linux")
	return nil
}

// Alive reports false: see StartJVM.
func (j *JVM) Alive() bool { return false }

// Stop does nothing: see StartJVM.
func (j *JVM) Stop() {}

func (j *JVM) forceStop() string { return "" }

// StartProcess skips the test: see StartJVM.
func StartProcess(t testing.TB, name string, args ...string) *exec.Cmd {
	t.Helper()
	Skipf(t, "process tests need Linux")
	return nil
}

// SigQuitState is not supported outside Linux.
func SigQuitState(pid int) (caught, ignored bool, err error) {
	return false, false, errNotSupported
}

func processStartTime(pid int) (uint64, error) { return 0, errNotSupported }

// ForEachContainerJDK skips the test: containers need Linux.
func ForEachContainerJDK(t *testing.T, f func(t *testing.T, kind ContainerKind, jdk JDK)) {
	t.Helper()
	Skipf(t, "containers need Linux")
}

// Command returns nil: see StartJVM.
func (j *JVM) Command(ctx context.Context, name string, args ...string) *exec.Cmd { return nil }

// HostPath returns "": see StartJVM.
func (j *JVM) HostPath(path string) string { return "" }

func processGone(err error) bool { return false }
