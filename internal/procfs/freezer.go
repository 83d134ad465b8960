package procfs

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// cgroupRoot is where the cgroup file systems are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// Frozen reports whether the cgroup freezer holds pid (podman pause, docker pause, a frozen systemd
// unit): its threads cannot run until the cgroup is thawed, although /proc shows them sleeping (state S
// or D), not stopped. It reads the unified hierarchy's cgroup.events ("frozen 1"; under /sys/fs/cgroup,
// or /sys/fs/cgroup/unified on hybrid hosts) and the v1 freezer controller's freezer.state ("FROZEN").
// A cgroup it cannot find (another cgroup namespace, no cgroup file system) is not frozen.
func (fs FS) Frozen(pid int) (bool, error) {
	b, err := readFile(fs.Path(pid, "cgroup"))
	if err != nil {
		return false, err
	}
	unified, freezer := ParseFreezerPaths(b)
	if unified != "" && unified != "/" { // the root cgroup cannot be frozen
		for _, mnt := range []string{cgroupRoot, filepath.Join(cgroupRoot, "unified")} {
			if ev, err := os.ReadFile(filepath.Join(mnt, unified, "cgroup.events")); err == nil && ParseFrozen(ev) {
				return true, nil
			}
		}
	}
	if freezer != "" && freezer != "/" {
		st, err := os.ReadFile(filepath.Join(cgroupRoot, "freezer", freezer, "freezer.state"))
		if s := strings.TrimSpace(string(st)); err == nil && (s == "FROZEN" || s == "FREEZING") {
			return true, nil
		}
	}
	return false, nil
}

// ParseFreezerPaths returns, from the text of /proc/<pid>/cgroup, the path in the unified hierarchy
// ("0::/path") and the path in a v1 hierarchy of the freezer controller ("7:freezer:/path"), each ""
// when absent or not a clean absolute path (a cgroup outside the reader's cgroup namespace shows as
// "/../.."; it cannot be read there).
func ParseFreezerPaths(b []byte) (unified, freezer string) {
	for l := range cgroupLines(b) {
		if filepath.Clean(l.path) != l.path || strings.Contains(l.path, "/..") {
			continue
		}
		switch {
		case l.unified():
			unified = l.path
		case slices.Contains(strings.Split(l.controllers, ","), "freezer"):
			freezer = l.path
		}
	}
	return unified, freezer
}

// ParseFrozen reads the "frozen" field of a cgroup v2 cgroup.events file ("populated 1\nfrozen 1\n"):
// whether the cgroup is frozen, by its own cgroup.freeze or an ancestor's.
func ParseFrozen(events []byte) bool {
	for line := range bytes.SplitSeq(events, []byte("\n")) {
		if k, v, ok := bytes.Cut(bytes.TrimSpace(line), []byte(" ")); ok && string(k) == "frozen" {
			return string(bytes.TrimSpace(v)) == "1"
		}
	}
	return false
}

// Held says why process pid cannot run now, or "" when nothing holds it: stopped by a signal or a
// tracer (state T or t), or frozen by its cgroup's freezer. A process that cannot be read is not held
// (the caller finds out otherwise).
func (fs FS) Held(pid int) string {
	if st, err := fs.Status(pid); err == nil && st.Stopped() {
		if st.State == 't' {
			return "held by a debugger (state t, tracing stop): detach the debugger"
		}
		return fmt.Sprintf("stopped (state T): resume it (kill -CONT %d) or detach the debugger", pid)
	}
	if frozen, err := fs.Frozen(pid); err == nil && frozen {
		return "frozen by its cgroup's freezer (podman or docker pause): thaw it (podman or docker unpause)"
	}
	return ""
}
