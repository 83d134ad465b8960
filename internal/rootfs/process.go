package rootfs

import (
	"encoding/hex"
	"errors"
	"path/filepath"
	"slices"
	"strings"

	"github.com/jvmkit/jvmkit/internal/procerr"
)

// Process is a process whose files are reached from the caller's side: its root and working directory
// (the /proc/<pid>/root and /proc/<pid>/cwd links) and the ids it writes files with.
type Process struct {
	Root    string // /proc/<pid>/root ("/" for the caller's own world)
	Cwd     string // /proc/<pid>/cwd
	CwdPath string // the working directory as the process sees it, for messages; "" when it has none
	UID     int    // effective uid and gid, as the caller sees them
	GID     int
	Groups  []int // supplementary groups, as the caller sees them (MayCreate)
	// Trusted are users trusted besides root and UID: for a process in a user namespace, the host uid
	// of that namespace's root, which owns the container anyway.
	Trusted []int
	// SameRoot is set when the process's root is the caller's: its paths are shown as they are.
	SameRoot bool
}

func (pr *Process) trusts(uid uint32) bool {
	return uid == 0 || int(uid) == pr.UID || slices.Contains(pr.Trusted, int(uid))
}

// show is where the caller finds p, a path as the process sees it (relative: to its working directory).
func (pr *Process) show(p string) string {
	if !strings.HasPrefix(p, "/") {
		if pr.CwdPath != "" {
			p = strings.TrimSuffix(pr.CwdPath, "/") + "/" + p
		} else {
			return pr.Cwd + "/" + p
		}
	}
	p = filepath.Clean(p) // ".." cannot climb out of the root
	if pr.Root == "/" || pr.SameRoot {
		return p
	}
	return pr.Root + p
}

// ErrUnsafe is wrapped by the errors of Prepare for a path that a user other than the process and root
// could redirect: a directory on the way that such a user owns or may write in without the sticky bit,
// or an entry such a user owns in a sticky directory. It also wraps fs.ErrPermission.
var ErrUnsafe error = &Unsafe

// Unsafe is ErrUnsafe's value (see procerr.Error).
var Unsafe = procerr.Error{Msg: "permission denied: another user could redirect the write", Permission: true}

// ErrCannotCreate is wrapped by MayCreate's refusals: the user may not create files in the directory
// (it is read-only, or another user's, or another directory is mounted there). It wraps ErrUnsafe,
// which the callers test for, with a message that says what is wrong.
var ErrCannotCreate error = &procerr.Error{Msg: "permission denied: that user cannot create files there", Err: &Unsafe}

// Mode says how a process opens a file it writes, which decides what Prepare must make sure of.
type Mode int

const (
	// Follow: the process opens the name and writes into whatever it finds there, following symbolic
	// links (fopen "w", O_CREAT|O_TRUNC): JDK 17's Compiler.perfmap, JFR.dump filename=, GC.heap_dump
	// -overwrite. In a sticky directory that others can write in (/tmp), Prepare puts a new empty file
	// of the process's at the name: nobody but the process and root can then remove or replace it. A
	// regular file of the process's user already there, not empty and with one link, in such a
	// directory of a trusted user, is kept instead: nobody else can replace it either, and a command
	// that fails before writing leaves it as it was. In a directory that others can write in without
	// the sticky bit, Prepare refuses.
	Follow Mode = iota
	// Append is Follow for a process that appends (a log): the process's own file at the name, with one
	// link, is kept.
	Append
	// Fresh is Follow with a new file always, also where only trusted users can write: what the
	// process wrote can be read back from the file Prepare made (Prepared.File), whatever happens to
	// the name later.
	Fresh
	// Exclusive: the process creates the name with O_CREAT|O_EXCL, which fails rather than follow
	// anything at the final name (GC.heap_dump, Thread.dump_to_file): only the directories on the way
	// are checked.
	Exclusive
	// FollowOrDir is Follow where the name may also be a directory that the process creates a name of
	// its own choosing in (JFR's filename=), which must then be one that only trusted users can write.
	FollowOrDir
	// Private: the process removes, renames or creates names of its own choosing in the directory (log
	// rotation, generated names, CDS archives written after an unlink): the directory must be one that
	// only trusted users can write.
	Private
	// PrivateDir is Private for a path that is itself the directory (JFR.configure repositorypath=).
	PrivateDir
)

// ErrNotRegular is returned for a file that had to be a regular file and is a FIFO, device, socket,
// directory or symbolic link.
var ErrNotRegular error = &NotRegular

// NotRegular is ErrNotRegular's value (see procerr.Error).
var NotRegular = procerr.Error{Msg: "not a regular file"}

// RandomHex returns n random bytes in hex, for names nobody can guess.
func RandomHex(n int) string {
	b := make([]byte, n)
	randomBytes(b)
	return hex.EncodeToString(b)
}

// ErrSymlink is returned for a symbolic link where a file is to be written, which is never written
// through. It wraps ErrNotRegular.
var ErrSymlink error = &Symlink

// Symlink is ErrSymlink's value (see procerr.Error).
var Symlink = procerr.Error{Msg: "refusing to use a symbolic link (not a regular file)", Err: &NotRegular}

// ErrNotWritten: the process said it wrote a file, but the file Prepare made for it is still empty.
var ErrNotWritten = errors.New("the JVM did not write it: the file prepared for it is still empty")
