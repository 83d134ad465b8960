package attach

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/jvmkit/jvmkit/internal/procfs"
)

// Target is a process as seen from the caller: its host pid and what attaching needs to know about it.
type Target struct {
	PID   int // pid in the caller's pid namespace (the host pid when the caller runs on the host)
	NSPID int // pid in the target's own pid namespace: the name of its socket and trigger files
	UID   int // effective uid
	GID   int // effective gid
	// Root and Cwd reach the target's mount namespace without setns: /proc/<pid>/root, /proc/<pid>/cwd.
	// Cwd may be used as a path (the kernel jumps to the very directory); a path below Root may not: an
	// absolute symbolic link met under it resolves against the caller's root. OpenTmp opens the target's
	// /tmp as the target resolves it.
	Root string
	Cwd  string
	// Status is the /proc/<pid>/status snapshot taken when the target was resolved.
	Status procfs.Status
}

// tmpName is the target's /tmp, the attach rendezvous directory (HotSpot hard-codes /tmp on Linux, not
// java.io.tmpdir), for messages only (see Root).
func (t *Target) tmpName() string { return t.Root + "/tmp" }

func (t *Target) socketFile() string { return ".java_pid" + strconv.Itoa(t.NSPID) }

// socketName is where the target's attach listener socket lives, for messages only.
func (t *Target) socketName() string { return t.tmpName() + "/" + t.socketFile() }

// Dir is a directory of the target's, held open (Target.OpenTmp): names below Path are looked up in
// that very directory, whatever is renamed, linked or mounted at its name later. Close releases it.
type Dir struct {
	fd   int
	name string
}

// Path reaches the directory through the caller's descriptor: /proc/self/fd/<fd>, a link the kernel
// follows to exactly that directory. It is valid in the calling process only, until Close; it fits in
// a unix socket address.
func (d *Dir) Path() string { return "/proc/self/fd/" + strconv.Itoa(d.fd) }

// String names the directory for messages: /proc/<pid>/root/tmp.
func (d *Dir) String() string { return d.name }

// Shown turns a path below Path into its name for messages, below String.
func (d *Dir) Shown(path string) string {
	if rest, ok := strings.CutPrefix(path, d.Path()); ok && (rest == "" || rest[0] == '/') {
		return d.name + rest
	}
	return path
}

// ShownErr is err with the paths below Path in its message said as below String (as Shown does);
// errors.Is and errors.As see err itself.
func (d *Dir) ShownErr(err error) error {
	if err == nil {
		return nil
	}
	return &shownError{err: err, from: d.Path(), to: d.name}
}

type shownError struct {
	err      error
	from, to string
}

func (e *shownError) Error() string {
	s := e.err.Error()
	var b strings.Builder
	for {
		i := strings.Index(s, e.from)
		if i < 0 {
			break
		}
		b.WriteString(s[:i])
		s = s[i+len(e.from):]
		if s != "" && s[0] >= '0' && s[0] <= '9' { // another descriptor's number that starts alike
			b.WriteString(e.from)
			continue
		}
		b.WriteString(e.to)
	}
	b.WriteString(s)
	return b.String()
}

func (e *shownError) Unwrap() error { return e.err }

// Remedy ends a refusal of an operation on the target that needs all of caps: what this process lacks
// as root, or to run as root or as the JVM's user (procfs.Remedy).
func (t *Target) Remedy(caps ...procfs.Capability) string {
	return procfs.Remedy(fmt.Sprintf("the JVM's user (uid %d)", t.UID), caps...)
}

// RemedyAny is Remedy for an operation that any one of caps allows (CAP_DAC_READ_SEARCH or
// CAP_DAC_OVERRIDE for reading another user's file).
func (t *Target) RemedyAny(caps ...procfs.Capability) string {
	if h := procfs.RootWithoutAny(caps...); h != "" {
		return h
	}
	return t.Remedy()
}
