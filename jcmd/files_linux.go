package jcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/attach"
	"github.com/jvmkit/jvmkit/internal/procfs"
	"github.com/jvmkit/jvmkit/internal/rootfs"
)

// JVMCwd returns the JVM's working directory as the JVM itself sees it, inside its mount namespace and
// root: the directory relative file names given to diagnostic commands are resolved against.
//
// It reads the links /proc/<pid>/root and /proc/<pid>/cwd. The kernel (d_path) writes each as a path
// from the caller's root when it reaches it, and otherwise from the top of the mount tree the directory
// belongs to: for a JVM in another mount namespace, such as a container after pivot_root, or unshare -m
// with a private tmpfs on /tmp, the cwd link is already the JVM's own view ("/tmp/work", which does not
// exist on the host), and root reads "/". For a JVM in a chroot, root reads as the chroot directory and
// is stripped from the front of cwd. The result is then
// checked: resolved inside the JVM's root with openat2(RESOLVE_IN_ROOT, no symlinks), it must name the
// very directory (device and inode) that is the JVM's cwd. When it does not, there is no path the JVM
// could use either, and JVMCwd fails with ErrUnreachable: a deleted cwd, a cwd hidden under a mount made
// after the JVM entered it, a cwd outside the JVM's root.
//
// Alternatives not taken: the user.dir system property (attach operation "properties") is what JFR uses,
// but it costs a round trip to the JVM and is only the directory at startup; hsperfdata does not carry it.
// Walking ".." from /proc/<pid>/cwd and scanning each parent for the child's inode is slower and still
// stops at the caller's root, like d_path.
//
// ctx is checked before any work; the links are read without blocking.
func JVMCwd(ctx context.Context, t *attach.Target) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	var cwdSt unix.Stat_t
	if err := unix.Stat(t.Cwd, &cwdSt); err != nil {
		return "", targetErr(t.PID, "working directory", err)
	}
	if cwdSt.Nlink == 0 {
		return "", fmt.Errorf("jcmd: working directory of process %d: %w: it was deleted; give the command an absolute file name", t.PID, ErrUnreachable)
	}
	root, err := os.Readlink(t.Root)
	if err != nil {
		return "", targetErr(t.PID, "root directory", err)
	}
	cwd, err := os.Readlink(t.Cwd)
	if err != nil {
		return "", targetErr(t.PID, "working directory", err)
	}
	rel, ok := underRoot(cwd, root)
	if !ok {
		return "", fmt.Errorf("jcmd: working directory %q of process %d: %w %q; give the command an absolute file name", cwd, t.PID, ErrUnreachable, root)
	}
	st, err := statInRoot(t, rel, unix.RESOLVE_NO_SYMLINKS)
	if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, unix.ENOTDIR) && !errors.Is(err, unix.ELOOP) {
		return "", err
	}
	if err != nil || st.Dev != cwdSt.Dev || st.Ino != cwdSt.Ino {
		return "", fmt.Errorf("jcmd: working directory of process %d: %w: %s does not lead to it inside the JVM (a mount covers it?); give the command an absolute file name", t.PID, ErrUnreachable, rel)
	}
	return rel, nil
}

// underRoot returns cwd relative to root, both as read from the /proc links.
func underRoot(cwd, root string) (string, bool) {
	switch {
	case !strings.HasPrefix(cwd, "/") || !strings.HasPrefix(root, "/"):
		return "", false // "(unreachable)", anon_inode:..., which no open can follow
	case root == "/":
		return cwd, true
	case cwd == root:
		return "/", true
	case strings.HasPrefix(cwd, root+"/"):
		return cwd[len(root):], true
	}
	return "", false
}

// statInRoot stats path resolved inside the target's root.
func statInRoot(t *attach.Target, path string, resolve uint64) (unix.Stat_t, error) {
	var st unix.Stat_t
	fd, err := openInRoot(t, path, unix.O_PATH, resolve)
	if err != nil {
		return st, err
	}
	defer unix.Close(fd)
	if err := unix.Fstat(fd, &st); err != nil {
		return st, fmt.Errorf("jcmd: stat %s in process %d: %w", path, t.PID, err)
	}
	return st, nil
}

// openInRoot opens path inside the target's root (rootfs.Open: absolute symbolic links and ".." stay
// inside that root, as they do for the JVM).
func openInRoot(t *attach.Target, path string, flags int, resolve uint64) (int, error) {
	fd, err := rootfs.Open(t.Root, path, flags, resolve)
	if err != nil {
		return -1, inRootErr(t, err)
	}
	return fd, nil
}

// inRootErr maps an error of rootfs to the attach package's sentinels.
func inRootErr(t *attach.Target, err error) error {
	var pe *os.PathError
	switch {
	case errors.Is(err, errors.ErrUnsupported):
		return fmt.Errorf("jcmd: process %d: %w: %w", t.PID, attach.ErrNotSupported, err)
	case errors.As(err, &pe) && pe.Path == t.Root:
		return targetErr(t.PID, "root directory", pe.Err)
	}
	return fmt.Errorf("jcmd: process %d: %w", t.PID, err)
}

// OpenInJVM opens, read-only, the regular file at path (absolute, as the JVM sees it) inside the JVM's
// root. Symbolic links are followed as the JVM would follow them: an absolute link or ".." never leaves
// the JVM's root (openat2 RESOLVE_IN_ROOT), and /proc magic links are refused. Opening
// HostPath(t, path) instead would resolve an absolute link inside the container against the caller's
// root: a container could make a root-run tool read any host file.
//
// The file is opened non-blocking, so that a FIFO planted under the name cannot hang the caller, and
// anything but a regular file is refused with ErrNotRegular.
//
// It is for a file the JVM wrote, by the name the JVM wrote it at: one the JVM's user can replace (with a
// link to a file that only root can read) before the caller opens it. So the file must belong to the
// JVM's user and have one link; anything else is refused with an error wrapping attach.ErrPermission.
func OpenInJVM(t *attach.Target, path string) (*os.File, error) {
	f, err := rootfs.OpenRegular(t.Root, path, HostPath(t, path))
	if err != nil {
		return nil, inRootErr(t, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return nil, fmt.Errorf("jcmd: %s: %w", HostPath(t, path), err)
	}
	if int(st.Uid) != t.UID || st.Nlink != 1 {
		f.Close()
		return nil, fmt.Errorf("%w: %s is owned by uid %d with %d links: not a file that JVM %d (uid %d) wrote; not reading it",
			attach.ErrPermission, HostPath(t, path), st.Uid, st.Nlink, t.PID, t.UID)
	}
	return f, nil
}

// copyChunk is how much CopyOut copies between checks of its context.
const copyChunk = 16 << 20

// CopyOut copies the file at path (as the JVM sees it, opened with OpenInJVM) to dst and returns the
// final path and the number of bytes copied. dst is a directory, where the copy keeps the file's base
// name, or a file name.
//
// The copy is written to a new temporary file (O_EXCL) in the destination directory, synced, then renamed
// into place, so the destination never holds a partial file; on any error, cancellation of ctx included,
// the temporary file is removed. CopyOut refuses, without writing anything, when dst or the final name is
// a symbolic link (ErrSymlink) or something other than a regular file, and when the final name exists and
// overwrite is false (an error wrapping fs.ErrExist; the check is atomic, with RENAME_NOREPLACE).
//
// The copy belongs to the caller (its euid; the group the kernel gives new files in that directory), not
// to the JVM's user. It keeps the source's permission bits without execute bits: heap dumps are 0600
// (they contain every secret in the heap: passwords, keys, session tokens) and stay 0600; JFR recordings
// are 0644.
func CopyOut(ctx context.Context, t *attach.Target, path, dst string, overwrite bool) (string, int64, error) {
	src, err := OpenInJVM(t, path)
	if err != nil {
		return "", 0, err
	}
	defer src.Close()
	var srcSt unix.Stat_t
	if err := unix.Fstat(int(src.Fd()), &srcSt); err != nil {
		return "", 0, fmt.Errorf("jcmd: copy %s: %w", path, err)
	}

	dirFd, dir, name, err := openCopyDest(dst, path, overwrite, &srcSt, true)
	if errors.Is(err, errSameFile) {
		// The JVM wrote the caller's own file where the copy would go (--copy-to . in the JVM's working
		// directory): it is there already.
		return filepath.Join(dir, name), srcSt.Size, nil
	}
	if err != nil {
		return "", 0, err
	}
	defer unix.Close(dirFd)
	final := filepath.Join(dir, name)
	// A copy killed half-way (SIGKILL) leaves its temporary file; the next copy here removes it.
	rootfs.RemoveStale(dirFd, copyTempPrefix, ".tmp")
	tmp, err := rootfs.CreateTemp(dirFd, dir, copyTempPrefix, ".tmp", 0o600)
	if err != nil {
		return "", 0, fmt.Errorf("jcmd: copy: %w", err)
	}
	n, err := copyCtx(ctx, tmp.File, src)
	if err == nil {
		err = tmp.File.Chmod(fs.FileMode(srcSt.Mode & 0o666))
	}
	if err != nil {
		tmp.Discard()
		return "", 0, fmt.Errorf("jcmd: copy %s to %s: %w", path, final, err)
	}
	if err := tmp.Publish(name, overwrite); err != nil {
		if errors.Is(err, fs.ErrExist) && !overwrite {
			return "", 0, fmt.Errorf("jcmd: copy to %s: %w (not overwriting it)", final, fs.ErrExist)
		}
		return "", 0, fmt.Errorf("jcmd: copy %s to %s: %w", path, final, err)
	}
	return final, n, nil
}

// CheckCopyDest checks, before a command has the JVM write a file, what CopyOut will check of dst, so
// that a copy that cannot be made is refused before the JVM does the work: a link or something other
// than a regular file at dst, a directory that is not the caller's to copy into, an existing file when
// overwrite is false. In a directory dst the copy's name is the written file's: written names it (a path
// whose base name it is; see Client.CheckCopyNames), or, empty, the directory alone is checked.
func CheckCopyDest(dst, written string, overwrite bool) error {
	path := written
	if path == "" {
		path = "file"
	}
	dirFd, _, _, err := openCopyDest(dst, path, overwrite, nil, written != "")
	if err == nil {
		unix.Close(dirFd)
	}
	return err
}

// errSameFile: the destination is the source itself, a file of the caller's (see openCopyDest).
var errSameFile = errors.New("the destination is the file itself")

// openCopyDest opens the directory a copy of path to dst goes into, after the checks CopyOut makes.
// Without src (a check before the file exists) a directory dst is checked as a directory only, unless
// named (path is the name the file will have); with src, the final name too, and a final name that is
// src itself, a file of the caller's with one link, gives errSameFile (with dir and name) instead of an
// existing-file refusal: the JVM wrote the caller's file where the copy would go, and nothing is
// written. Another user's is refused as an existing file, saying it is the JVM's.
func openCopyDest(dst, path string, overwrite bool, src *unix.Stat_t, named bool) (dirFd int, dir, name string, err error) {
	dir, name, dirIsDst, err := copyDestination(dst, path)
	if err != nil {
		return -1, "", "", err
	}
	// Links on the way are followed only as the kernel's fs.protected_symlinks would (rootfs.OpenOutputDir):
	// never another user's in /tmp.
	dirFd, err = rootfs.OpenOutputDir(dir, unix.O_RDONLY)
	if err == nil && dirIsDst {
		// dst was checked not to be a symlink: the directory opened must be what is at the name now, no
		// link (a swap between the two looks would show as another inode).
		var st, fst unix.Stat_t
		if lerr := unix.Lstat(dir, &st); lerr != nil || st.Mode&unix.S_IFMT == unix.S_IFLNK ||
			unix.Fstat(dirFd, &fst) != nil || fst.Dev != st.Dev || fst.Ino != st.Ino {
			unix.Close(dirFd)
			dirFd, err = -1, unix.ELOOP
		}
	}
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			err = ErrSymlink
		}
		return -1, "", "", fmt.Errorf("jcmd: copy to %s: %w", dir, err)
	}
	fail := func(err error) (int, string, string, error) {
		unix.Close(dirFd)
		return -1, "", "", err
	}
	if err := checkCopyDir(dirFd, dir); err != nil {
		return fail(err)
	}
	if dirIsDst && src == nil && !named {
		return dirFd, dir, name, nil
	}
	exists, err := rootfs.CheckFinal(dirFd, dir, name)
	if err != nil {
		return fail(fmt.Errorf("jcmd: copy to %w", err))
	}
	var st unix.Stat_t
	if exists && src != nil && unix.Fstatat(dirFd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil &&
		st.Dev == src.Dev && st.Ino == src.Ino && st.Nlink == 1 {
		if int(st.Uid) == os.Geteuid() {
			unix.Close(dirFd)
			return -1, dir, name, errSameFile
		}
		if !overwrite {
			// Another user's file is not the caller's copy, which CopyOut promises (a heap dump's reader
			// must be the caller alone).
			return fail(fmt.Errorf("jcmd: copy to %s: %w: it is the very file the JVM wrote, owned by uid %d, not a copy of yours; choose another directory, or overwrite it with your copy",
				filepath.Join(dir, name), fs.ErrExist, st.Uid))
		}
	}
	if exists && !overwrite {
		return fail(fmt.Errorf("jcmd: copy to %s: %w (not overwriting it)", filepath.Join(dir, name), fs.ErrExist))
	}
	return dirFd, dir, name, nil
}

// checkCopyDir refuses a destination directory that another user owns, or that every user may write
// without the sticky bit: that user could read the copy (a heap dump holds every secret of the JVM) or
// replace it after it was reported.
func checkCopyDir(dirFd int, dir string) error {
	var st unix.Stat_t
	if err := unix.Fstat(dirFd, &st); err != nil {
		return fmt.Errorf("jcmd: copy to %s: %w", dir, err)
	}
	switch {
	case st.Uid != 0 && int(st.Uid) != os.Geteuid():
		return fmt.Errorf("%w: jcmd: copy to %s: the directory belongs to uid %d, who could read or replace the copy; choose a directory of your own", attach.ErrPermission, dir, st.Uid)
	case st.Mode&0o002 != 0 && st.Mode&unix.S_ISVTX == 0:
		return fmt.Errorf("%w: jcmd: copy to %s: every user may write the directory (mode %#o) and it is not sticky: anyone could replace the copy; choose a directory of your own", attach.ErrPermission, dir, st.Mode&0o7777)
	}
	return nil
}

// copyTempPrefix names CopyOut's temporary files: not derived from the final name, which may be as long
// as NAME_MAX already.
const copyTempPrefix = ".jvmkit-copy-"

// copyDestination splits dst into the directory to write in and the final name; dirIsDst reports that dst
// itself is that directory. A trailing slash demands a directory but is stripped before looking at dst:
// with it, the kernel would follow a symbolic link.
func copyDestination(dst, path string) (dir, name string, dirIsDst bool, err error) {
	base := filepath.Base(path)
	if base == "/" || base == "." || base == ".." || strings.HasSuffix(path, "/") {
		return "", "", false, fmt.Errorf("jcmd: copy %s: not a file name", path)
	}
	wantDir := strings.HasSuffix(dst, "/")
	dst = filepath.Clean(dst)
	st, err := os.Lstat(dst)
	switch {
	case errors.Is(err, fs.ErrNotExist) && !wantDir:
		return filepath.Dir(dst), filepath.Base(dst), false, nil
	case err != nil:
		return "", "", false, fmt.Errorf("jcmd: copy to %s: %w", dst, err)
	case st.Mode()&fs.ModeSymlink != 0:
		return "", "", false, fmt.Errorf("jcmd: copy to %s: %w", dst, ErrSymlink)
	case st.IsDir():
		return dst, base, true, nil
	case st.Mode().IsRegular() && !wantDir:
		return filepath.Dir(dst), filepath.Base(dst), false, nil
	case wantDir:
		return "", "", false, fmt.Errorf("jcmd: copy to %s/: %w", dst, unix.ENOTDIR)
	}
	return "", "", false, fmt.Errorf("jcmd: copy to %s: %w", dst, ErrNotRegular)
}

// copyCtx copies src to dst in chunks (each one copy_file_range or sendfile where the kernel can), checking
// ctx between them.
func copyCtx(ctx context.Context, dst, src *os.File) (int64, error) {
	var n int64
	for {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		m, err := io.CopyN(dst, src, copyChunk)
		n += m
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// targetErr maps errors from /proc/<pid>/... to the attach package's sentinels.
func targetErr(pid int, what string, err error) error {
	return fmt.Errorf("jcmd: %w", procfs.Wrap(pid, what, err))
}
