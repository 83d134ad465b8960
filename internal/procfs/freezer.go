package procfs

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
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
	b, err := os.ReadFile(fs.Path(pid, "cgroup"))
	if err != nil {
		return false, err
	}
	unified, freezer := ParseFreezerPaths(b)
	if unified != "" && unified != "/" { // the root cgroup cannot be frozen
		for _, mnt := range []string{cgroupRoot, filepath.Join(cgroupRoot, "unified")} {
			if ev, err := readCgroupFile(filepath.Join(mnt, unified, "cgroup.events")); err == nil && ParseFrozen(ev) {
				return true, nil
			}
		}
	}
	if freezer != "" && freezer != "/" {
		st, err := readCgroupFile(filepath.Join(cgroupRoot, "freezer", freezer, "freezer.state"))
		if s := strings.TrimSpace(string(st)); err == nil && (s == "FROZEN" || s == "FREEZING") {
			return true, nil
		}
	}
	return false, nil
}

// readCgroupFile reads a small file of the cgroup file system; a missing one is fs.ErrNotExist.
func readCgroupFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return b, err
}

// ParseFreezerPaths returns, from the text of /proc/<pid>/cgroup, the path in the unified hierarchy
// ("0::/path") and the path in a v1 hierarchy of the freezer controller ("7:freezer:/path"), each ""
// when absent or not a clean absolute path (a cgroup outside the reader's cgroup namespace shows as
// "/../.."; it cannot be read there).
func ParseFreezerPaths(b []byte) (unified, freezer string) {
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		parts := bytes.SplitN(bytes.TrimSpace(line), []byte(":"), 3)
		if len(parts) != 3 {
			continue
		}
		p := string(parts[2])
		if !strings.HasPrefix(p, "/") || filepath.Clean(p) != p || strings.Contains(p, "/..") {
			continue
		}
		switch {
		case string(parts[0]) == "0" && len(parts[1]) == 0:
			unified = p
		case hasController(string(parts[1]), "freezer"):
			freezer = p
		}
	}
	return unified, freezer
}

func hasController(list, name string) bool {
	for c := range strings.SplitSeq(list, ",") {
		if c == name {
			return true
		}
	}
	return false
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
