package testutil

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

var (
	toolsMu sync.Mutex
	tools   = map[string]string{} // module-relative package -> binary in the work directory
)

// BuildTool builds one of the project's commands, such as "cmd/jvmkit" (a path from the module root),
// once per test binary, static (CGO_ENABLED=0), into the per-binary work directory that Main removes,
// and returns the binary's path; for tests that run the real program, to signal it or to time it.
func BuildTool(t testing.TB, pkg string) string {
	t.Helper()
	toolsMu.Lock()
	defer toolsMu.Unlock()
	if bin, ok := tools[pkg]; ok {
		return bin
	}
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("testutil: build tool: no caller information")
	}
	root := filepath.Join(filepath.Dir(file), "..", "..")
	bin := filepath.Join(newRunDir(t, "tool-*"), filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, "./"+pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("testutil: go build ./%s: %v\n%s", pkg, err, out)
	}
	tools[pkg] = bin
	return bin
}

// SyncBuffer is a bytes.Buffer that a command writes while the test reads it.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// RunTool runs the binary of pkg (built once by [BuildTool]) with args and returns what it printed and its
// exit status; a binary that cannot be started fails the test.
func RunTool(t testing.TB, pkg string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	cmd := exec.Command(BuildTool(t, pkg), args...)
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode() // -1 if a signal ended it
	default:
		t.Fatalf("testutil: %s: %v", pkg, err)
	}
	return o.String(), e.String(), code
}
