package testutil

import (
	"os"
	"os/exec"
	"testing"
)

// Skipf skips the test with the formatted reason. When the environment variable CI is non-empty it fails the
// test with the same reason instead: CI machines are provisioned to run every test, so a missing prerequisite
// there is a bug in the setup, not a reason to pass silently.
func Skipf(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("CI is set, not skipping: "+format, args...)
	}
	t.Skipf(format, args...)
}

// SkipInShort skips the test in -short mode (make check: the edit loop), also with CI set: -short asks for
// the tests that need no JVM, no root and no external tool. what names the test's need.
func SkipInShort(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("-short: test needs %s", what)
	}
}

// MustHaveRoot skips the test unless it runs with effective uid 0.
func MustHaveRoot(t testing.TB) {
	t.Helper()
	SkipInShort(t, "root")
	if euid := os.Geteuid(); euid != 0 {
		Skipf(t, "test needs root (euid is %d)", euid)
	}
}

// MustHaveTool skips the test unless the named executable is found in PATH, and returns its path.
func MustHaveTool(t testing.TB, name string) string {
	t.Helper()
	SkipInShort(t, name)
	path, err := exec.LookPath(name)
	if err != nil {
		Skipf(t, "test needs %s: %v", name, err)
	}
	return path
}

// MustHaveJava skips the test unless a JDK 17 with java, javac and jcmd is found (see [JDKs]).
func MustHaveJava(t testing.TB) {
	t.Helper()
	jdk17(t)
}
