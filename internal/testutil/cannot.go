package testutil

import (
	"debug/elf"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
)

// SkipJDK skips a test, or the rest of it, for something this JDK cannot do: a fact about the JDK, such as a
// build without USDT probes or a command added in a later release. Unlike [Skipf] it skips with CI set too (it
// is not a missing prerequisite), and `make test`'s summary lists it with its reason, which starts with the
// JDK's name and version.
func SkipJDK(t testing.TB, jdk JDK, format string, args ...any) {
	t.Helper()
	t.Skipf("%s %s: %s", jdk.Name(), jdk.Version, fmt.Sprintf(format, args...))
}

// Libjvm returns the host path of the JDK's libjvm.so (the server VM).
func (j JDK) Libjvm() string { return filepath.Join(j.Home, "lib", "server", "libjvm.so") }

var probesOf sync.Map // libjvm path -> probesResult

type probesResult struct {
	n   uint64
	err error
}

// Probes returns the size of the stapsdt notes in the JDK's libjvm.so (0: no USDT probes), read with
// debug/elf, independently of package usdt. Debian's JDK 11 (bullseye) is built without --enable-dtrace and
// has none.
func (j JDK) Probes() (uint64, error) {
	path := j.Libjvm()
	if r, ok := probesOf.Load(path); ok {
		return r.(probesResult).n, r.(probesResult).err
	}
	var r probesResult
	f, err := elf.Open(path)
	if err != nil {
		r.err = fmt.Errorf("read %s: %w", path, err)
	} else {
		if s := f.Section(".note.stapsdt"); s != nil {
			r.n = s.Size
		}
		f.Close()
	}
	probesOf.Store(path, r)
	return r.n, r.err
}

// SkipWithoutProbes skips the test ([SkipJDK]) when the JDK's libjvm.so has no USDT probes, and fails it when
// the library cannot be read.
func SkipWithoutProbes(t testing.TB, jdk JDK) {
	t.Helper()
	n, err := jdk.Probes()
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		SkipJDK(t, jdk, "this build's libjvm.so has no USDT probes (no .note.stapsdt: built without --enable-dtrace)")
	}
}
