package rootfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/jvmkit/jvmkit/internal/procfs"
	"golang.org/x/sys/unix"
)

// Temp is a new file in a directory, written under a name nobody can guess and published under its
// final name by a rename, so that no reader ever sees half of it.
//
// While a Temp is open its writer holds an exclusive flock(2) on it: a process that dies (SIGKILL, the
// OOM killer) releases the lock with its descriptors, so a later writer in the same directory tells the
// temporary files of dead writers from those of live ones (RemoveStale) and removes the first kind only.
type Temp struct {
	File *os.File
	Name string // in the directory
	dfd  int    // the directory (not owned: the caller keeps it open)
	dir  string // the directory as people see it
}

// CreateTemp creates prefix<random>suffix in the directory dfd (shown to people as dir) with
// O_CREAT|O_EXCL|O_NOFOLLOW, mode perm (the umask may take bits away; Chmod restores them), open for
// reading and writing and locked. Nothing at the name is ever followed or reused.
func CreateTemp(dfd int, dir, prefix, suffix string, perm uint32) (*Temp, error) {
	for range 100 {
		name := prefix + RandomHex(8) + suffix
		fd, err := unix.Openat(dfd, name, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "create a temporary file in", Path: dir, Err: err}
		}
		if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
			// Someone cleaning stale files took it between our create and our lock: it is theirs to
			// remove. Leave it and take another name.
			unix.Close(fd)
			continue
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil || st.Nlink == 0 {
			unix.Close(fd) // removed by a cleaner before we locked it
			continue
		}
		return &Temp{File: os.NewFile(uintptr(fd), join(dir, name)), Name: name, dfd: dfd, dir: dir}, nil
	}
	return nil, fmt.Errorf("create a temporary file in %s: no unused name", dir)
}

// Publish syncs the file and renames it to name in the same directory, then closes it. With replace an
// existing entry at name (of any kind: a symbolic link is replaced, never followed) gives way; without,
// an existing entry makes Publish fail with an error wrapping fs.ErrExist (RENAME_NOREPLACE, or link(2)
// on file systems without it). On any error the temporary file is removed.
func (t *Temp) Publish(name string, replace bool) error {
	err := t.File.Sync()
	if err == nil {
		if replace {
			err = unix.Renameat(t.dfd, t.Name, t.dfd, name)
		} else {
			err = renameNoReplace(t.dfd, t.Name, name)
		}
	}
	if err != nil {
		t.Discard()
		if errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("%s: %w", join(t.dir, name), fs.ErrExist)
		}
		return &os.PathError{Op: "rename into place", Path: join(t.dir, name), Err: err}
	}
	t.File.Close()
	_ = unix.Fsync(t.dfd) // the rename itself; the data is synced already
	return nil
}

// Discard removes the temporary file and closes it.
func (t *Temp) Discard() {
	_ = unix.Unlinkat(t.dfd, t.Name, 0)
	t.File.Close()
}

func renameNoReplace(dfd int, from, to string) error {
	err := unix.Renameat2(dfd, from, dfd, to, unix.RENAME_NOREPLACE)
	if !errors.Is(err, unix.EINVAL) {
		return err
	}
	// A file system without RENAME_NOREPLACE: link(2) does not replace either.
	if err := unix.Linkat(dfd, from, dfd, to, 0); err != nil {
		return err
	}
	return unix.Unlinkat(dfd, from, 0)
}

// WriteFile makes dfd/name (shown as dir/name) hold data, owned by uid and gid (-1: the caller's) with
// mode perm: a Temp is written, synced and renamed over the name, so that a reader never sees half a
// file, and anything at the name (a symbolic link planted there included) is replaced, never followed.
// Temporary files of the same name left by writers that died are removed first.
func WriteFile(dfd int, dir, name string, data []byte, uid, gid int, perm uint32) error {
	return writeFile(dfd, dir, name, data, uid, gid, perm, true)
}

// WriteNewFile is WriteFile for a name that must not exist yet: when something is there already, nothing
// is changed and the error wraps fs.ErrExist (so that two writers racing for the name do not replace each
// other's file: the one that lost reads the winner's).
func WriteNewFile(dfd int, dir, name string, data []byte, uid, gid int, perm uint32) error {
	return writeFile(dfd, dir, name, data, uid, gid, perm, false)
}

func writeFile(dfd int, dir, name string, data []byte, uid, gid int, perm uint32, replace bool) error {
	prefix := "." + name + "."
	RemoveStale(dfd, prefix, ".tmp")
	t, err := CreateTemp(dfd, dir, prefix, ".tmp", perm)
	if err != nil {
		return err
	}
	err = func() error {
		if _, err := t.File.Write(data); err != nil {
			return err
		}
		if uid >= 0 || gid >= 0 {
			if err := t.File.Chown(uid, gid); err != nil {
				return procfs.Explain(err, procfs.CapChown)
			}
		}
		// The umask may have taken bits away.
		return procfs.Explain(t.File.Chmod(fs.FileMode(perm)), procfs.CapFowner)
	}()
	if err != nil {
		t.Discard()
		return fmt.Errorf("write %s: %w", join(dir, name), err)
	}
	return t.Publish(name, replace)
}

// RemoveStale removes the temporary files prefix*suffix in the directory dfd that a Temp of a writer
// that has died left behind: regular files owned by one of owners (none: the caller's effective uid)
// whose lock is free. It returns the names removed. Files of live writers, of other users and of any
// other kind are left alone.
func RemoveStale(dfd int, prefix, suffix string, owners ...int) []string {
	if len(owners) == 0 {
		owners = []int{os.Geteuid()}
	}
	names, err := ReadDirNames(dfd)
	if err != nil {
		return nil
	}
	var removed []string
	for _, n := range names {
		if !strings.HasPrefix(n, prefix) || !strings.HasSuffix(n, suffix) || len(n) <= len(prefix)+len(suffix) {
			continue
		}
		if removeIfStale(dfd, n, owners) {
			removed = append(removed, n)
		}
	}
	return removed
}

func removeIfStale(dfd int, name string, owners []int) bool {
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var st, now unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || !slices.Contains(owners, int(st.Uid)) {
		return false
	}
	if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) != nil {
		return false // its writer is alive
	}
	// Still the same file under that name (names are random: nobody reuses it).
	if unix.Fstatat(dfd, name, &now, unix.AT_SYMLINK_NOFOLLOW) != nil || now.Dev != st.Dev || now.Ino != st.Ino {
		return false
	}
	return unix.Unlinkat(dfd, name, 0) == nil
}

// ReadDirNames lists the names in the directory dfd (an O_PATH handle will do).
func ReadDirNames(dfd int) ([]string, error) {
	fd, err := unix.Openat(dfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), ".")
	defer f.Close()
	return f.Readdirnames(-1)
}

func join(dir, name string) string {
	if strings.HasSuffix(dir, "/") {
		return dir + name
	}
	return dir + "/" + name
}

// CheckFinal looks at the name a file is to be published under in the directory dfd (shown as dir):
// nothing there (false) and a regular file (true) pass; a symbolic link fails with ErrSymlink, anything
// else with ErrNotRegular.
func CheckFinal(dfd int, dir, name string) (bool, error) {
	var st unix.Stat_t
	err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	switch {
	case errors.Is(err, unix.ENOENT):
		return false, nil
	case err != nil:
		return false, &os.PathError{Op: "stat", Path: join(dir, name), Err: err}
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return true, fmt.Errorf("%s: %w", join(dir, name), ErrSymlink)
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return true, fmt.Errorf("%s is %s: %w", join(dir, name), Kind(st.Mode), ErrNotRegular)
	}
	return true, nil
}

// ReadStable reads a whole text file that its writer has finished, from offset 0: it is read again
// when its size or modification time changed while it was read (another writer at work), and a last
// line without its end is an error.
func ReadStable(f *os.File) ([]byte, error) {
	for range 3 {
		var a, b unix.Stat_t
		if err := unix.Fstat(int(f.Fd()), &a); err != nil {
			return nil, err
		}
		data := make([]byte, a.Size)
		if _, err := f.ReadAt(data, 0); err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		if err := unix.Fstat(int(f.Fd()), &b); err != nil {
			return nil, err
		}
		if a.Size != b.Size || a.Mtim != b.Mtim {
			continue
		}
		if len(data) > 0 && data[len(data)-1] != '\n' {
			return nil, fmt.Errorf("incomplete: %d bytes without a final line end", len(data))
		}
		return data, nil
	}
	return nil, errors.New("it kept changing while it was read (another writer is at work)")
}

// WriteOutput writes the file path (a path of the caller's own, such as a tool's -o) with write, as
// WriteFile does: the data goes into a temporary file beside it, renamed over path once complete, so
// that an interrupted tool leaves no half file and a symbolic link planted at path is never followed
// (refused with ErrSymlink, like a FIFO or device with ErrNotRegular); links to its directory are
// followed only as OpenOutputDir says. An existing regular file at path
// is replaced by a new one of the caller's, mode perm.
func WriteOutput(path string, perm uint32, write func(io.Writer) error) error {
	dfd, dir, name, err := openOutput(path)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	prefix := "." + name + "."
	RemoveStale(dfd, prefix, ".tmp")
	t, err := CreateTemp(dfd, dir, prefix, ".tmp", perm)
	if err != nil {
		return err
	}
	if err := write(t.File); err != nil {
		t.Discard()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := t.File.Chmod(fs.FileMode(perm)); err != nil {
		t.Discard()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return t.Publish(name, true)
}

// CheckOutput checks, before a long task, that WriteOutput could write path when the task is done: its
// directory is there, can be written and is reached as WriteOutput reaches it, and nothing but a regular
// file sits at the name. It creates nothing.
func CheckOutput(path string) error {
	dfd, dir, _, err := openOutput(path)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	var sfs unix.Statfs_t
	if unix.Fstatfs(dfd, &sfs) == nil {
		if kind := pseudoFS(uint32(sfs.Type)); kind != "" { // before read-only: /sys often is both
			return fmt.Errorf("write %s: directory %s is in %s, where no file can be created", path, dir, kind)
		}
		if sfs.Flags&unix.ST_RDONLY != 0 {
			return fmt.Errorf("write %s: directory %s: %w", path, dir, unix.EROFS)
		}
	}
	// The caller's own rights, on the directory opened (faccessat2; where the kernel or a seccomp
	// profile refuses the call, the write itself will tell).
	if err := unix.Faccessat2(dfd, "", unix.W_OK, unix.AT_EACCESS|unix.AT_EMPTY_PATH); errors.Is(err, unix.EACCES) || errors.Is(err, unix.EROFS) {
		return fmt.Errorf("write %s: directory %s: %w", path, dir, err)
	}
	return nil
}

// openOutput opens the directory of path for WriteOutput and checks what is at its name.
func openOutput(path string) (dfd int, dir, name string, err error) {
	dir, name = filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	if name == "" || name == "." || name == ".." {
		return -1, "", "", fmt.Errorf("write %s: not a file name", path)
	}
	dfd, err = OpenOutputDir(dir, unix.O_PATH)
	if err != nil {
		return -1, "", "", fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := CheckFinal(dfd, dir, name); err != nil {
		unix.Close(dfd)
		return -1, "", "", fmt.Errorf("write %w", err)
	}
	return dfd, dir, name, nil
}

// RemoveSame removes path if it still is the file fi describes (a file of the caller's, as it created
// it), reaching its directory as WriteOutput does and the name without following a link: a name
// someone replaced since, or a directory swapped for a link on the way, is left alone.
func RemoveSame(path string, fi fs.FileInfo) error {
	dfd, _, name, err := openOutput(path)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	fd, err := unix.Openat(dfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	now, err := f.Stat()
	f.Close()
	if err != nil {
		return err
	}
	if !os.SameFile(now, fi) {
		return fmt.Errorf("remove %s: it is not the file created there any more", path)
	}
	return unix.Unlinkat(dfd, name, 0)
}

// pseudoFS names the kernel's file systems whose directories take no new regular file (the type of
// statfs), "" for others.
func pseudoFS(magic uint32) string {
	switch magic {
	case unix.PROC_SUPER_MAGIC:
		return "/proc"
	case unix.SYSFS_MAGIC:
		return "sysfs"
	case unix.CGROUP_SUPER_MAGIC, unix.CGROUP2_SUPER_MAGIC:
		return "a cgroup file system"
	case unix.DEBUGFS_MAGIC, unix.TRACEFS_MAGIC:
		return "debugfs or tracefs"
	case unix.BPF_FS_MAGIC:
		return "the BPF file system"
	}
	return ""
}
