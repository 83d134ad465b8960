package rootfs

import (
	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/internal/procfs"
)

// NewProcess describes process pid of the caller's /proc: its root and working directory links, the ids
// it writes with (and its supplementary groups, which decide where it may create files), and, when it is in a user namespace of its own, that namespace's root as a trusted
// user. cwdPath is its working directory as it sees it ("" when unknown).
func NewProcess(pid, uid, gid int, groups []int, cwdPath string) *Process {
	pr := &Process{
		Root: procfs.Default.Path(pid, "root"), Cwd: procfs.Default.Path(pid, "cwd"), CwdPath: cwdPath,
		UID: uid, GID: gid, Groups: groups,
	}
	if root, ok := procfs.Default.NamespaceRoot(pid); ok && root != 0 && root != uid {
		pr.Trusted = []int{root}
	}
	var a, b unix.Stat_t
	pr.SameRoot = unix.Stat(pr.Root, &a) == nil && unix.Stat("/", &b) == nil && a.Dev == b.Dev && a.Ino == b.Ino
	return pr
}
