//go:build linux

package faults_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jvmkit/jvmkit/internal/testutil"
)

func TestMain(m *testing.M) { testutil.Main(m) }

// result is one run of a tool.
type result struct {
	args           []string
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return strings.Join(r.args, " ") + " -> exit " + strconv.Itoa(r.code) + "\nstdout:\n" + r.stdout + "stderr:\n" + r.stderr
}

// tool runs one of the project's commands ("gjcmd", "gjmaps", "jvmkit") and waits up to a minute.
func tool(t *testing.T, name string, args ...string) result {
	t.Helper()
	bin := testutil.BuildTool(t, "cmd/"+name)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var o, e bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	r := result{args: append([]string{name}, args...), stdout: o.String(), stderr: e.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("%s %q: %v", name, args, err)
	}
	return r
}

// unprotect turns off the kernel's protections against links and files planted in sticky directories
// (fs.protected_*; Documentation/admin-guide/sysctl/fs.rst) for the test and restores them: with them
// on, the kernel itself refuses some of the attacks, and the test would prove nothing about our code.
func unprotect(t *testing.T) {
	t.Helper()
	testutil.MustHaveRoot(t)
	for _, name := range []string{"protected_symlinks", "protected_hardlinks", "protected_regular", "protected_fifos"} {
		path := filepath.Join("/proc/sys/fs", name)
		old, err := os.ReadFile(path)
		if err != nil {
			testutil.Skipf(t, "read %s: %v", path, err)
		}
		if strings.TrimSpace(string(old)) == "0" {
			continue
		}
		if err := os.WriteFile(path, []byte("0"), 0o644); err != nil {
			t.Fatalf("set %s=0: %v", path, err)
		}
		t.Cleanup(func() {
			if err := os.WriteFile(path, old, 0o644); err != nil {
				t.Errorf("restore %s: %v", path, err)
			}
		})
	}
}
