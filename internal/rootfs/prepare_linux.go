package rootfs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/jvmkit/jvmkit/internal/procfs"
	"golang.org/x/sys/unix"
)

// Prepare makes the file p safe for the process to write in mode, before it is asked to; p is absolute
// as the process sees it, or relative to its working directory. perm is the mode of a file Prepare
// creates for it (owned by its UID and GID).
//
// Every directory on the way, and every symbolic link, is resolved the way the kernel resolves it for
// the process (absolute links and ".." inside its root, relative names from its working directory), one
// component at a time, and each entry is checked: the directory holding it must be owned by a trusted
// user, and must either be writable by nobody else or be sticky with the entry owned by a trusted user
// (in a sticky directory only the owner of an entry, the directory's owner and root can remove or rename
// it). What passes cannot be changed by anyone else between Prepare and the write, so there is no window
// to race. A path that does not pass is refused with ErrUnsafe and a message naming the entry and its
// owner.
//
// The final name is then prepared as mode says (see Mode). Prepare never follows a symbolic link at the
// final name and never writes into an existing file; a regular file of a trusted user that nobody else
// can replace is kept for the process to truncate (Follow) or append to (Append).
//
// In a directory that others can write (/tmp), the runs that prepare the same name are serialised: a
// lock on .jvmkit-<name>.lock beside it (see Lock) is taken before the name is looked at, waiting while
// ctx allows (at most nameLockWait), and held until Close. Without it two runs for one name, each
// putting a file of its own there, would each find its file replaced by the other's, and a process
// that had opened the first would write into a file no longer at the name.
func (pr *Process) Prepare(ctx context.Context, p string, mode Mode, perm uint32) (*Prepared, error) {
	wk, err := pr.startWalk(p)
	if err != nil {
		return nil, err
	}
	defer wk.close()
	dirPart, name := path.Split(p)
	if name == "." || name == "" && mode == PrivateDir {
		dirPart, name = p, ""
	}
	if name == "" && mode != PrivateDir || name == ".." {
		return nil, fmt.Errorf("%s: not a file name", pr.show(joinPath(wk.startPath, p)))
	}
	d, err := wk.walk(wk.start, wk.startPath, dirPart)
	if err != nil {
		return nil, err
	}
	out := &Prepared{Dir: d.path, Name: name, Path: joinPath(d.path, name), Mode: mode, dfd: d.fd, pr: pr}
	if err := out.prepareFinal(ctx, wk, d, perm); err != nil {
		out.Close()
		return nil, err
	}
	return out, nil
}

// Prepared is a path made safe for another process's write by Process.Prepare.
type Prepared struct {
	Path string // as the process sees it, after symbolic links ("." based when its cwd has no path)
	Dir  string // the directory holding it (Path itself for PrivateDir)
	Name string // "" for PrivateDir
	Mode Mode
	// Replaced is set when Prepare put a new file where something was (Note says what, when it matters).
	Replaced bool
	// Note says what Prepare changed that a person should know ("... was a symbolic link owned by uid
	// 65534 (-> "/etc/passwd"); replaced it ..."); empty when it changed nothing worth telling.
	Note string

	dfd    int      // Dir, O_PATH
	file   *os.File // the file Prepare made or kept at the name, open read-write; nil when none
	kept   bool     // file was at the name before (see keep)
	before unix.Stat_t
	pr     *Process
	lock   *os.File // the name's lock (lockName), held until Close
	lockAt string   // its name in Dir
}

// HostPath is where the caller finds Path (under the process's root).
func (p *Prepared) HostPath() string { return p.pr.show(p.Path) }

// File is the file Prepare made (or, for Append, kept) at the name, for reading back what the process
// wrote; nil when Prepare had nothing to make (Exclusive, Private, and a Follow or Append path in a
// directory that only trusted users can write).
func (p *Prepared) File() *os.File { return p.file }

// Close releases the handles and the name's lock; the files stay.
func (p *Prepared) Close() {
	if p.lock != nil {
		Unlock(p.dfd, p.lockAt, p.lock)
		p.lock = nil
	}
	if p.file != nil {
		p.file.Close()
		p.file = nil
	}
	if p.dfd >= 0 {
		unix.Close(p.dfd)
		p.dfd = -1
	}
}

// Written checks, after the write, that the name still holds the file Prepare made, and (Follow, Fresh)
// that the process wrote into it: a new file is empty, and no file these writers write is. For
// Exclusive it checks that the name holds a regular file of a trusted user (what the process created).
// It returns nil where Prepare made nothing: there, only trusted users can have changed the name.
func (p *Prepared) Written() error {
	full := p.HostPath()
	if p.file == nil {
		if p.Mode != Exclusive {
			return nil
		}
		var st unix.Stat_t
		if err := unix.Fstatat(p.dfd, p.Name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return fmt.Errorf("check %s: %w", full, err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG || !p.pr.trusts(st.Uid) {
			return fmt.Errorf("%s is %s owned by uid %d, not the file the JVM was to create", full, Kind(st.Mode), st.Uid)
		}
		return nil
	}
	if err := p.Still(); err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(p.file.Fd()), &st); err != nil {
		return fmt.Errorf("check %s: %w", full, err)
	}
	if p.Mode != Append && st.Size == 0 {
		return fmt.Errorf("%s: %w", full, ErrNotWritten)
	}
	if p.kept && p.Mode != Append && st.Size == p.before.Size && st.Mtim == p.before.Mtim && st.Ctim == p.before.Ctim {
		return fmt.Errorf("%s: %w", full, ErrNotWritten) // a kept file that the process did not touch
	}
	return nil
}

// Discard removes the file Prepare made for a write that did not happen (the process reported that
// its command failed), so that nothing is left behind: only when the name was free before Prepare, still
// holds that file and it is still empty. A file put where something was (Replaced), or kept, stays:
// another run may have made the empty file it replaced for a process that writes it later, and a name
// left free in a directory others can write is one they can plant a link at. It reports whether it
// removed the file.
func (p *Prepared) Discard() bool {
	if p.file == nil || p.kept || p.Replaced || p.Mode == Append {
		return false
	}
	var st, now unix.Stat_t
	if unix.Fstat(int(p.file.Fd()), &st) != nil || st.Size != 0 ||
		unix.Fstatat(p.dfd, p.Name, &now, unix.AT_SYMLINK_NOFOLLOW) != nil || now.Dev != st.Dev || now.Ino != st.Ino {
		return false
	}
	return unix.Unlinkat(p.dfd, p.Name, 0) == nil
}

// Result opens what the process wrote at the name: the file Prepare made, when the process wrote into
// it, or the regular file with one link of the process's user (or root) that the process renamed over
// it (writers that publish with a rename, as jvmkit's own agent does). Nobody else can have put that
// file there: the name held a file of the process's user in a directory where only that user and root
// may replace it. Anything else is an error; ErrNotWritten when nothing was written.
func (p *Prepared) Result() (*os.File, error) {
	if p.file == nil {
		return nil, fmt.Errorf("%s: nothing was prepared to read back", p.HostPath())
	}
	if err := p.Written(); err == nil {
		return p.file, nil
	} else if errors.Is(err, ErrNotWritten) {
		return nil, err
	}
	fd, err := unix.Openat(p.dfd, p.Name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.HostPath(), ErrNotWritten)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 1 ||
		int(st.Uid) != p.pr.UID && st.Uid != 0 || st.Size == 0 {
		unix.Close(fd)
		return nil, fmt.Errorf("%s is not the file the JVM was to write (%s owned by uid %d); the write may have gone elsewhere", p.HostPath(), Kind(st.Mode), st.Uid)
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), p.HostPath()), nil
}

// Still checks that the name still holds the file Prepare made, for a process that writes it later.
func (p *Prepared) Still() error {
	if p.file == nil {
		return nil
	}
	var st, now unix.Stat_t
	if err := unix.Fstat(int(p.file.Fd()), &st); err != nil {
		return fmt.Errorf("check %s: %w", p.HostPath(), err)
	}
	if err := unix.Fstatat(p.dfd, p.Name, &now, unix.AT_SYMLINK_NOFOLLOW); err != nil || now.Dev != st.Dev || now.Ino != st.Ino {
		return fmt.Errorf("%s no longer holds the file prepared for the JVM (replaced since?); the JVM may write elsewhere", p.HostPath())
	}
	return nil
}

// Remove removes the name if it still holds the file Prepare made, or one that the process renamed over
// it (see Result), and reports whether it did.
func (p *Prepared) Remove() bool {
	if p.file == nil {
		return false
	}
	if f, err := p.Result(); err == nil && f != p.file {
		defer f.Close()
		var st, now unix.Stat_t
		if unix.Fstat(int(f.Fd()), &st) != nil || unix.Fstatat(p.dfd, p.Name, &now, unix.AT_SYMLINK_NOFOLLOW) != nil ||
			now.Dev != st.Dev || now.Ino != st.Ino {
			return false
		}
		return unix.Unlinkat(p.dfd, p.Name, 0) == nil
	}
	var st, now unix.Stat_t
	if unix.Fstat(int(p.file.Fd()), &st) != nil || unix.Fstatat(p.dfd, p.Name, &now, unix.AT_SYMLINK_NOFOLLOW) != nil ||
		now.Dev != st.Dev || now.Ino != st.Ino {
		return false
	}
	return unix.Unlinkat(p.dfd, p.Name, 0) == nil
}

func (p *Prepared) prepareFinal(ctx context.Context, wk *walker, d dir, perm uint32) error {
	pr := p.pr
	switch p.Mode {
	case Exclusive:
		return p.jvmCreates(d)
	case Private:
		return pr.private(d)
	case PrivateDir, FollowOrDir:
		if p.Name == "" {
			return pr.private(d)
		}
		sub, err := wk.walk(d.fd, d.path, p.Name)
		if err == nil {
			defer unix.Close(sub.fd)
			p.Dir, p.Name, p.Path = sub.path, "", sub.path
			return pr.private(sub)
		}
		var pe *os.PathError
		notDir := errors.As(err, &pe) && (errors.Is(pe.Err, unix.ENOENT) || errors.Is(pe.Err, unix.ENOTDIR))
		switch {
		case p.Mode == PrivateDir && notDir:
			if errors.Is(pe.Err, unix.ENOENT) {
				return pr.private(d) // the JVM creates it here
			}
			return nil // a file: the JVM fails on it
		case p.Mode == PrivateDir:
			return err
		case !notDir && !errors.Is(err, ErrUnsafe):
			return err
		}
		// Not a directory, or a name another user put there: a file, made safe as for Follow.
	}
	shown := pr.show(d.path)
	if err := pr.ownNameIn(d, p.Name); err != nil {
		return err
	}
	shared := d.st.Mode&0o022 != 0
	if !shared && p.Mode != Fresh {
		return p.jvmCreates(d) // nobody but trusted users can put anything at the name
	}
	if p.Mode == FollowOrDir {
		p.Mode = Follow
	}
	if p.Mode != Fresh { // a Fresh name is the caller's own choice, not shared
		if err := p.lockName(ctx, d); err != nil {
			return err
		}
	}
	var st unix.Stat_t
	err := unix.Fstatat(d.fd, p.Name, &st, unix.AT_SYMLINK_NOFOLLOW)
	exists := err == nil
	if err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("stat %s: %w", p.HostPath(), err)
	}
	if exists && st.Mode&unix.S_IFMT == unix.S_IFDIR {
		if pr.trusts(st.Uid) {
			return nil // the JVM fails on a directory that nobody else can swap for a link
		}
		return fmt.Errorf("%w: %s is a directory owned by uid %d, who could swap it for a link; have it removed",
			ErrUnsafe, p.HostPath(), st.Uid)
	}
	if p.Mode == Append && exists && st.Mode&unix.S_IFMT == unix.S_IFREG && int(st.Uid) == pr.UID && st.Nlink == 1 &&
		p.keep(d, st) {
		return nil // the process's own file, which it appends to (nobody else can replace it here)
	}
	if p.Mode == Follow && exists && st.Mode&unix.S_IFMT == unix.S_IFREG && int(st.Uid) == pr.UID && st.Nlink == 1 &&
		st.Size > 0 && d.st.Mode&unix.S_ISVTX != 0 && pr.trusts(d.st.Uid) && p.keep(d, st) {
		// The process's user's own file, with content, in a sticky directory of a trusted user: nobody
		// else can rename or remove it before the process opens it, and the process can write it. Kept,
		// it is still there if the command fails before writing (the process truncates it only when it
		// writes); replaced by an empty file, it would be lost. An empty file may be another run's, made
		// a moment ago for the same name: it is replaced, so that each run has its own (see Discard).
		return nil
	}
	suspicious := exists && (st.Mode&unix.S_IFMT != unix.S_IFREG || !pr.trusts(st.Uid) || st.Nlink > 1)
	what := ""
	if exists {
		what = fmt.Sprintf("%s owned by uid %d%s", Kind(st.Mode), st.Uid, describe(d.fd, p.Name, st))
	}
	// The new file is the process's: only where its own user could have made it (see MayCreate).
	if err := pr.mayCreate(d); err != nil {
		return err
	}
	RemoveStale(d.fd, prepPrefix, ".tmp")
	t, err := CreateTemp(d.fd, shown, prepPrefix, ".tmp", perm)
	if err != nil {
		return err
	}
	if err := pr.give(t.File, perm); err != nil {
		t.Discard()
		return fmt.Errorf("prepare %s for uid %d: %w", p.HostPath(), pr.UID, err)
	}
	// A rename replaces whatever is at the name in one step: there is no moment without a file of the
	// process's there, in which someone could plant a link.
	if err := unix.Renameat(d.fd, t.Name, d.fd, p.Name); err != nil {
		t.Discard()
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
			remedy := "run as root or have it removed"
			if h := procfs.RootWithout(procfs.CapFowner); h != "" {
				remedy = h + ", or have it removed"
			}
			return fmt.Errorf("%w: %s is %s in sticky %s, which only its owner or root can replace; %s",
				ErrUnsafe, p.HostPath(), what, shown, remedy)
		}
		return fmt.Errorf("prepare %s: %w", p.HostPath(), err)
	}
	if p.Mode != Fresh {
		// No temporary file any more: a cleaner must not take it for a dead writer's. A Fresh file
		// stays locked while it is ours, so that one left by a killed caller under a name of its
		// own choosing can be told from one in use (RemoveStale with the process's uid).
		_ = unix.Flock(int(t.File.Fd()), unix.LOCK_UN)
	}
	p.file = t.File
	p.Replaced = exists
	if suspicious {
		p.Note = fmt.Sprintf("%s was %s; replaced it with a new empty file owned by uid %d before the JVM wrote it", p.HostPath(), what, pr.UID)
	}
	return nil
}

// nameLockWait bounds the wait for another run that prepared the same name (see Prepare).
const nameLockWait = 60 * time.Second

// lockName takes the lock that serialises the runs preparing the same name in d (see Prepare). The lock
// file is the process's user's (Lock): where that user may not create one, or the file system refuses
// it, the name goes unlocked, as it does when the lock's name would be too long.
func (p *Prepared) lockName(ctx context.Context, d dir) error {
	name := ".jvmkit-" + p.Name + ".lock"
	if len(name)+22 > 255 || p.pr.mayCreate(d) != nil { // Lock's temporary name is 22 bytes longer
		return nil
	}
	wait, cancel := context.WithTimeout(ctx, nameLockWait)
	defer cancel()
	f, err := Lock(wait, d.fd, p.pr.show(d.path), name, p.pr.UID, p.pr.GID)
	switch {
	case err == nil:
		p.lock, p.lockAt = f, name
		return nil
	case ctx.Err() != nil:
		return err
	case wait.Err() != nil:
		return fmt.Errorf("%s: another run has held it for %v (its JVM may still be writing it): %w", p.HostPath(), nameLockWait, err)
	}
	return nil // unlocked, as where the lock cannot be made
}

// keep takes the file st at the name as the one the process will write (Append, and Follow where
// nobody else can replace it), and reports whether it could: the name may have changed since st.
func (p *Prepared) keep(d dir, st unix.Stat_t) bool {
	fd, err := unix.Openat(d.fd, p.Name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	var now unix.Stat_t
	if unix.Fstat(fd, &now) != nil || now.Dev != st.Dev || now.Ino != st.Ino {
		unix.Close(fd)
		return false
	}
	p.file, p.kept, p.before = os.NewFile(uintptr(fd), p.HostPath()), true, now
	return true
}

// jvmCreates refuses a name that the process is to create itself (nothing is there) in a directory
// where its user may not create files: it would fail, and say so only in its own output. Where only an
// access control list could allow it, the process is left to try.
func (p *Prepared) jvmCreates(d dir) error {
	var st unix.Stat_t
	err := unix.Fstatat(d.fd, p.Name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if !errors.Is(err, unix.ENOENT) {
		return nil // there: the process opens it (Follow), or fails on it (Exclusive)
	}
	if err := p.pr.mayCreate(d); err != nil && !errors.Is(err, errACL) {
		return err
	}
	return nil
}

// private refuses a directory that anyone but trusted users can change: the process is to create,
// rename or remove names of its own choosing in it.
func (pr *Process) private(d dir) error {
	if pr.trusts(d.st.Uid) && d.st.Mode&0o022 == 0 {
		return nil
	}
	return fmt.Errorf("%w: the JVM creates, renames or removes names of its own choosing in %s, which %s; use a directory that only root and uid %d can write",
		ErrUnsafe, pr.show(d.path), whoCanWrite(d.st), pr.UID)
}

// prepPrefix names the temporary files Prepare renames into place.
const prepPrefix = ".jvmkit-prep-"

// give hands a file Prepare made to the process.
func (pr *Process) give(f *os.File, perm uint32) error {
	if os.Geteuid() != pr.UID {
		if err := f.Chown(pr.UID, pr.GID); err != nil {
			return procfs.Explain(err, procfs.CapChown)
		}
	}
	return procfs.Explain(f.Chmod(fs.FileMode(perm)), procfs.CapFowner)
}

// describe adds what makes an entry suspicious, for messages: where a symbolic link points, how many
// names a hard-linked file has.
func describe(dfd int, name string, st unix.Stat_t) string {
	switch {
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		buf := make([]byte, unix.PathMax)
		if n, err := unix.Readlinkat(dfd, name, buf); err == nil {
			return " (-> " + strconv.Quote(string(buf[:n])) + ")"
		}
	case st.Mode&unix.S_IFMT == unix.S_IFREG && st.Nlink > 1:
		return fmt.Sprintf(" with %d hard links", st.Nlink)
	}
	return ""
}

// whoCanWrite explains which users can change a directory.
func whoCanWrite(st unix.Stat_t) string {
	switch {
	case st.Mode&0o002 != 0:
		return fmt.Sprintf("every user can write (mode %#o)", st.Mode&0o7777)
	case st.Mode&0o020 != 0:
		return fmt.Sprintf("group %d can write (mode %#o)", st.Gid, st.Mode&0o7777)
	}
	return fmt.Sprintf("uid %d owns", st.Uid)
}

// dir is a directory reached by the walker.
type dir struct {
	fd   int
	st   unix.Stat_t
	path string // as the process sees it
}

// ownNameIn refuses a directory where another user could put something at name before the process
// does: one owned by an untrusted user, or one that others can write in without the sticky bit (in a
// sticky one only a name's owner can replace it).
func (pr *Process) ownNameIn(d dir, name string) error {
	if !pr.trusts(d.st.Uid) {
		return fmt.Errorf("%w: %s is owned by uid %d, who could put a link at %s; use a directory that only root and uid %d can write",
			ErrUnsafe, pr.show(d.path), d.st.Uid, name, pr.UID)
	}
	if d.st.Mode&0o022 != 0 && d.st.Mode&unix.S_ISVTX == 0 {
		return fmt.Errorf("%w: %s can be written by other users (mode %#o) and is not sticky: anyone could put a link at %s; use a directory that only root and uid %d can write",
			ErrUnsafe, pr.show(d.path), d.st.Mode&0o7777, name, pr.UID)
	}
	return nil
}

// startWalk opens the process's root, and its working directory when p is relative: where a walk of p
// starts (walker.start, startPath). close releases them.
func (pr *Process) startWalk(p string) (*walker, error) {
	rootFd, err := unix.Open(pr.Root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: pr.Root, Err: err}
	}
	wk := &walker{root: rootFd, start: rootFd, startPath: "/", show: pr.show, rule: pr.checkEntry}
	if !strings.HasPrefix(p, "/") {
		cwdFd, err := unix.Open(pr.Cwd, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			unix.Close(rootFd)
			return nil, &os.PathError{Op: "open", Path: pr.Cwd, Err: err}
		}
		wk.start, wk.startPath = cwdFd, pr.CwdPath
		if wk.startPath == "" {
			wk.startPath = "."
		}
	}
	return wk, nil
}

func (wk *walker) close() {
	if wk.start != wk.root {
		unix.Close(wk.start)
	}
	unix.Close(wk.root)
}

// walker resolves paths one component at a time from its root, following symbolic links by their text
// inside that root, and asks rule about every entry on the way before it is used.
type walker struct {
	root      int
	start     int    // where the walk of the path starts: root, or the working directory
	startPath string // start as the process sees it
	show      func(string) string
	// rule refuses entry name (stat st, not followed) of directory d when it must not be used.
	rule func(d dir, name string, st unix.Stat_t) error
	// kernelLinks: /proc's symbolic links are followed by the kernel, not by their text (which is another
	// process's view: /proc/<pid>/root, /proc/<pid>/cwd).
	kernelLinks bool
}

// maxLinks is the kernel's limit on symbolic links in one lookup (MAXSYMLINKS).
const maxLinks = 40

// walk resolves the directory p from start (the root or the working directory) and returns it open
// (O_PATH); the caller closes it. Every entry on the way is put to the walker's rule (Prepare's: see
// Prepare; OpenOutputDir's: protected_symlinks).
func (wk *walker) walk(start int, startPath, p string) (dir, error) {
	cur, err := openDir(start, ".")
	if err != nil {
		return dir{}, err
	}
	cur.path = startPath
	var rootSt unix.Stat_t
	if err := unix.Fstat(wk.root, &rootSt); err != nil {
		unix.Close(cur.fd)
		return dir{}, err
	}
	queue := strings.Split(p, "/")
	links := 0
	fail := func(err error) (dir, error) {
		unix.Close(cur.fd)
		return dir{}, err
	}
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if cur.st.Dev == rootSt.Dev && cur.st.Ino == rootSt.Ino {
				continue // ".." of the root is the root, as for the process
			}
			next, err := openDir(cur.fd, "..")
			if err != nil {
				return fail(fmt.Errorf("open %s/..: %w", wk.show(cur.path), err))
			}
			unix.Close(cur.fd)
			next.path = parentPath(cur.path)
			cur = next
			continue
		}
		entry := joinPath(cur.path, c)
		var st unix.Stat_t
		if err := unix.Fstatat(cur.fd, c, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return fail(&os.PathError{Op: "stat", Path: wk.show(entry), Err: err})
		}
		if err := wk.rule(cur, c, st); err != nil {
			return fail(err)
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFLNK:
			if wk.kernelLinks {
				var fs unix.Statfs_t
				if unix.Fstatfs(cur.fd, &fs) == nil && fs.Type == unix.PROC_SUPER_MAGIC {
					next, err := openFollowed(cur.fd, c)
					if err != nil {
						return fail(&os.PathError{Op: "open", Path: wk.show(entry), Err: err})
					}
					unix.Close(cur.fd)
					next.path = entry
					cur = next
					continue
				}
			}
			if links++; links > maxLinks {
				return fail(&os.PathError{Op: "resolve", Path: wk.show(entry), Err: unix.ELOOP})
			}
			buf := make([]byte, unix.PathMax)
			n, err := unix.Readlinkat(cur.fd, c, buf)
			if err != nil {
				return fail(&os.PathError{Op: "readlink", Path: wk.show(entry), Err: err})
			}
			target := string(buf[:n])
			if strings.HasPrefix(target, "/") {
				next, err := openDir(wk.root, ".")
				if err != nil {
					return fail(err)
				}
				unix.Close(cur.fd)
				next.path = "/"
				cur = next
			}
			queue = append(strings.Split(target, "/"), queue...)
		case unix.S_IFDIR:
			next, err := openDir(cur.fd, c)
			if err != nil {
				return fail(&os.PathError{Op: "open", Path: wk.show(entry), Err: err})
			}
			if next.st.Dev != st.Dev || next.st.Ino != st.Ino {
				// Changed between the two looks (fstatat and openat both cross a mount point, so they
				// agree otherwise): only a trusted user can have done it, but what was checked is not
				// what was opened.
				unix.Close(next.fd)
				return fail(fmt.Errorf("%s changed while it was checked; try again", wk.show(entry)))
			}
			unix.Close(cur.fd)
			next.path = entry
			cur = next
		default:
			return fail(&os.PathError{Op: "resolve", Path: wk.show(entry), Err: unix.ENOTDIR})
		}
	}
	return cur, nil
}

// checkEntry, the process's walker rule, decides whether entry name of directory d can be changed by
// trusted users only.
func (pr *Process) checkEntry(d dir, name string, st unix.Stat_t) error {
	entry := pr.show(joinPath(d.path, name))
	if !pr.trusts(d.st.Uid) {
		return fmt.Errorf("%w: %s is in %s, which uid %d owns and could redirect; use a path that only root and uid %d can change",
			ErrUnsafe, entry, pr.show(d.path), d.st.Uid, pr.UID)
	}
	if d.st.Mode&0o022 == 0 {
		return nil
	}
	if d.st.Mode&unix.S_ISVTX == 0 {
		return fmt.Errorf("%w: %s is in %s, which %s and is not sticky: anyone could replace it; use a path that only root and uid %d can change",
			ErrUnsafe, entry, pr.show(d.path), whoCanWrite(d.st), pr.UID)
	}
	if !pr.trusts(st.Uid) {
		return fmt.Errorf("%w: %s is %s owned by uid %d in sticky %s; use a path that only root and uid %d can change",
			ErrUnsafe, entry, Kind(st.Mode), st.Uid, pr.show(d.path), pr.UID)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK && st.Nlink > 1 {
		// A hard link to a trusted user's symbolic link, made by anyone who may create entries here.
		return fmt.Errorf("%w: %s is a symbolic link with %d hard links in sticky %s; use a path that only root and uid %d can change",
			ErrUnsafe, entry, st.Nlink, pr.show(d.path), pr.UID)
	}
	return nil
}

func openDir(at int, name string) (dir, error) {
	return openDirFlags(at, name, unix.O_NOFOLLOW)
}

// openFollowed opens the directory a kernel link (in /proc) leads to.
func openFollowed(at int, name string) (dir, error) {
	return openDirFlags(at, name, 0)
}

func openDirFlags(at int, name string, flags int) (dir, error) {
	fd, err := unix.Openat(at, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC|flags, 0)
	if err != nil {
		return dir{}, err
	}
	d := dir{fd: fd}
	if err := unix.Fstat(fd, &d.st); err != nil {
		unix.Close(fd)
		return dir{}, err
	}
	return d, nil
}

func joinPath(dir, name string) string {
	switch {
	case name == "":
		return dir
	case dir == ".":
		return name
	}
	return strings.TrimSuffix(dir, "/") + "/" + name
}

func parentPath(p string) string {
	if !strings.HasPrefix(p, "/") {
		return p + "/.."
	}
	return path.Dir(p)
}
