package procfs

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
)

// FS reads processes from a proc mount.
type FS struct {
	root string
}

// Default is the system's /proc.
var Default = FS{root: "/proc"}

// New returns an FS rooted at dir (a real proc mount or a fixture tree).
func New(dir string) FS { return FS{root: dir} }

// Path joins elements under the directory of pid: Path(12, "root", "tmp") is /proc/12/root/tmp.
func (fs FS) Path(pid int, elem ...string) string {
	return filepath.Join(append([]string{fs.root, strconv.Itoa(pid)}, elem...)...)
}

// Status reads and parses /proc/<pid>/status.
func (fs FS) Status(pid int) (Status, error) {
	b, err := readFile(fs.Path(pid, "status"))
	if err != nil {
		return Status{}, err
	}
	return ParseStatus(b)
}

// MapsContain reports which of the needles are path suffixes of mappings of pid.
func (fs FS) MapsContain(pid int, needles ...string) ([]bool, error) {
	f, err := os.Open(fs.Path(pid, "maps"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return MapsContain(f, needles...)
}

// Cmdline returns the argument vector of pid (empty for kernel threads).
func (fs FS) Cmdline(pid int) ([]string, error) {
	b, err := readFile(fs.Path(pid, "cmdline"))
	if err != nil {
		return nil, err
	}
	return ParseCmdline(b), nil
}

// StartTime returns the start time of pid in clock ticks since boot; with the pid it identifies a
// process across pid reuse.
func (fs FS) StartTime(pid int) (uint64, error) {
	b, err := readFile(fs.Path(pid, "stat"))
	if err != nil {
		return 0, err
	}
	return ParseStatStartTime(b)
}

// Stat returns the state letter and the start time of pid (see [ParseStat]).
func (fs FS) Stat(pid int) (state byte, start uint64, err error) {
	b, err := readFile(fs.Path(pid, "stat"))
	if err != nil {
		return 0, 0, err
	}
	return ParseStat(b)
}

// Children returns the children of pid, reliably only for a single-threaded process: it reads
// /proc/<pid>/task/<pid>/children, which lists the children of the main thread alone and exists only
// with CONFIG_PROC_CHILDREN (part of CONFIG_CHECKPOINT_RESTORE). Without it, the PPid of every process
// is read.
func (fs FS) Children(pid int) ([]int, error) {
	b, err := readFile(fs.Path(pid, "task", strconv.Itoa(pid), "children"))
	if err == nil {
		return ParseChildren(b)
	}
	if _, err := os.Stat(fs.Path(pid)); err != nil {
		return nil, err
	}
	pids, err := fs.Pids()
	if err != nil {
		return nil, err
	}
	var kids []int
	for _, p := range pids {
		if st, err := fs.Status(p); err == nil && st.PPID == pid {
			kids = append(kids, p)
		}
	}
	return kids, nil
}

// Pids lists the processes (not threads) visible in the proc mount.
func (fs FS) Pids() ([]int, error) {
	d, err := os.Open(fs.root)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	pids := make([]int, 0, len(names))
	for _, n := range names {
		if pid, err := strconv.Atoi(n); err == nil && pid > 0 {
			pids = append(pids, pid)
		}
	}
	sort.Ints(pids)
	return pids, nil
}

// Environ returns the environment of pid as "KEY=value" strings, as it was when the process
// started (a process that changes its environment later does not change this file). Reading another
// user's needs the same access as ptrace.
func (fs FS) Environ(pid int) ([]string, error) {
	b, err := readFile(fs.Path(pid, "environ"))
	if err != nil {
		return nil, err
	}
	return ParseCmdline(b), nil
}

// Cgroup returns the cgroup path of pid (see ParseCgroup).
func (fs FS) Cgroup(pid int) (string, error) {
	b, err := readFile(fs.Path(pid, "cgroup"))
	if err != nil {
		return "", err
	}
	return ParseCgroup(b), nil
}

// NamespaceRoot returns the uid, as the caller sees it, of root in the user namespace of pid: ok is
// false when pid is in the caller's own user namespace (or uid_map cannot be read). In a container with
// its own user namespace, that uid owns the container's files and its processes anyway.
func (fs FS) NamespaceRoot(pid int) (uid int, ok bool) {
	self, err1 := os.Readlink(filepath.Join(fs.root, "self", "ns", "user"))
	other, err2 := os.Readlink(fs.Path(pid, "ns", "user"))
	if err1 != nil || err2 != nil || self == other {
		return 0, false
	}
	b, err := readFile(fs.Path(pid, "uid_map"))
	if err != nil {
		return 0, false
	}
	return ParseUIDMapRoot(b)
}

// aliveByStat tells whether pid exists and is neither a zombie nor dead, by its stat file.
func (fs FS) aliveByStat(pid int) bool {
	state, _, err := fs.Stat(pid)
	return err == nil && state != 'Z' && state != 'X'
}
