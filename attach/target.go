package attach

import (
	"strconv"

	"github.com/jvmkit/jvmkit/internal/procfs"
)

// Target is a process as seen from the caller: its host pid and what attaching needs to know about it.
type Target struct {
	PID   int // pid in the caller's pid namespace (the host pid when the caller runs on the host)
	NSPID int // pid in the target's own pid namespace: the name of its socket and trigger files
	UID   int // effective uid
	GID   int // effective gid
	// Root and Cwd reach the target's mount namespace without setns: /proc/<pid>/root, /proc/<pid>/cwd.
	Root string
	Cwd  string
	// Status is the /proc/<pid>/status snapshot taken when the target was resolved.
	Status procfs.Status
}

// TmpDir is the target's /tmp, the attach rendezvous directory (HotSpot hard-codes /tmp on Linux, not
// java.io.tmpdir), as a path the caller can use.
func (t *Target) TmpDir() string { return t.Root + "/tmp" }

// SocketPath is where the target's attach listener socket lives.
func (t *Target) SocketPath() string { return t.TmpDir() + "/.java_pid" + strconv.Itoa(t.NSPID) }
