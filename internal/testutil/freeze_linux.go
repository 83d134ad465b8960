package testutil

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jvmkit/jvmkit/internal/procfs"
)

// Freeze puts process pid, which the test started, into a cgroup of its own and freezes it with the
// cgroup freezer, as podman pause does: the unified hierarchy's cgroup.freeze where /sys/fs/cgroup is
// cgroup v2, else the v1 freezer controller's freezer.state. It returns once the kernel says the cgroup
// is frozen; the returned function (also run at the test's end) thaws it and puts the process back in
// the cgroup it came from.
func Freeze(t testing.TB, pid int) (thaw func()) {
	t.Helper()
	MustHaveRoot(t)
	type hier struct{ root, freeze, on, off, state, frozen string }
	var h hier
	switch {
	case exists("/sys/fs/cgroup/cgroup.controllers"):
		h = hier{"/sys/fs/cgroup", "cgroup.freeze", "1", "0", "cgroup.events", "frozen 1"}
	case exists("/sys/fs/cgroup/freezer/freezer.state") || exists("/sys/fs/cgroup/freezer/cgroup.procs"):
		h = hier{"/sys/fs/cgroup/freezer", "freezer.state", "FROZEN", "THAWED", "freezer.state", "FROZEN"}
	default:
		Skipf(t, "test needs the cgroup freezer (cgroup v2 at /sys/fs/cgroup, or v1's freezer controller)")
	}
	from, err := cgroupOf(pid, h.root == "/sys/fs/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(h.root, fmt.Sprintf("jvmkit-test-%d-%d", os.Getpid(), pid))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatalf("testutil: freeze: %v", err)
	}
	write := func(path, v string) error { return os.WriteFile(path, []byte(v), 0o644) }
	if err := write(filepath.Join(dir, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
		_ = os.Remove(dir)
		t.Fatalf("testutil: freeze: move %d: %v", pid, err)
	}
	done := false
	thaw = func() {
		if done {
			return
		}
		done = true
		_ = write(filepath.Join(dir, h.freeze), h.off)
		_ = write(filepath.Join(h.root, from, "cgroup.procs"), strconv.Itoa(pid))
		for deadline := time.Now().Add(5 * time.Second); os.Remove(dir) != nil && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond) // rmdir waits for the cgroup to empty
		}
	}
	t.Cleanup(thaw)
	if err := write(filepath.Join(dir, h.freeze), h.on); err != nil {
		t.Fatalf("testutil: freeze %d: %v", pid, err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		b, _ := os.ReadFile(filepath.Join(dir, h.state))
		if strings.Contains(string(b), h.frozen) {
			return thaw
		}
		if time.Now().After(deadline) {
			t.Fatalf("testutil: freeze %d: not frozen within 10s (%s: %q)", pid, h.state, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

// cgroupOf is pid's cgroup in the unified hierarchy (unified) or in the v1 freezer's.
func cgroupOf(pid int, unified bool) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return "", err
	}
	u, f := procfs.ParseFreezerPaths(b)
	if !unified {
		u = f
	}
	if u == "" {
		return "", fmt.Errorf("testutil: no cgroup of %d in %q", pid, b)
	}
	return u, nil
}
