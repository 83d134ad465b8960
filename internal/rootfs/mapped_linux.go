package rootfs

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/internal/procfs"
)

// OpenMapped opens the file behind mapping m of process pid (a pid of proc): the mapping's path under
// /proc/<pid>/root when the file there is the mapped one, else /proc/<pid>/map_files/<start>-<end>. The
// returned file's Name is the path it was opened by, valid for reopening while the process maps the
// file. Errors wrap os.ErrNotExist when the process or mapping is gone and os.ErrPermission when only
// map_files could reach the file and the caller may not follow it.
func OpenMapped(proc procfs.FS, pid int, m procfs.Mapping) (*os.File, error) {
	if m.Inode == 0 || len(m.Path) == 0 || m.Path[0] != '/' {
		return nil, fmt.Errorf("open mapping %#x-%#x of %d: not a file mapping (%q)", m.Start, m.End, pid, m.Path)
	}
	var rootErr error
	if !m.Deleted {
		// The maps path is the kernel's d_path, which has no symbolic links: one met now was put there
		// since, and the file is then reached through map_files, never through the link.
		root := proc.Path(pid, "root")
		name := root + m.Path
		fd, err := Open(root, m.Path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY, unix.RESOLVE_NO_SYMLINKS)
		if err == nil {
			var f *os.File
			if f, err = mappedFile(fd, name, m); err == nil {
				return f, nil
			}
		}
		rootErr = err
	}
	// map_files is the kernel's own link to the mapping's file (a magic link, which Open refuses): only
	// its kind is checked, since kernels have differed in which of an overlayfs file's two inodes maps
	// and map_files show.
	name := proc.Path(pid, "map_files", fmt.Sprintf("%x-%x", m.Start, m.End))
	fd, err := unix.Open(name, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err == nil {
		var f *os.File
		if f, err = mappedFile(fd, name, procfs.Mapping{}); err == nil {
			return f, nil
		}
	} else {
		err = &os.PathError{Op: "open", Path: name, Err: err}
	}
	if errors.Is(err, os.ErrPermission) {
		err = fmt.Errorf("%w (%s)", err, mapFilesRemedy())
	}
	if rootErr == nil {
		return nil, fmt.Errorf("open %s (deleted) mapped by %d: %w", m.Path, pid, err)
	}
	rootMsg := rootErr.Error()
	if errors.Is(rootErr, os.ErrPermission) {
		// The root is a ptrace check: the process's own uid, or CAP_SYS_PTRACE.
		rootMsg += " (" + procfs.Remedy("the process's user", procfs.CapSysPtrace) + ")"
	}
	// Only map_files' error is wrapped: it alone says whether the mapping is gone or out of reach.
	return nil, fmt.Errorf("open %s mapped by %d: through its root: %s; through map_files: %w", m.Path, pid, rootMsg, err)
}

// mapFilesRemedy says what following /proc/PID/map_files needs that this process lacks: the kernel asks
// CAP_CHECKPOINT_RESTORE or CAP_SYS_ADMIN of every caller, whoever owns the process, and the directory
// is the process's, mode 0500.
func mapFilesRemedy() string {
	if h := procfs.RootWithoutAny(procfs.CapCheckpointRestore, procfs.CapSysAdmin); h != "" {
		return h
	}
	if h := procfs.RootWithout(procfs.CapDacOverride); h != "" {
		return h
	}
	return "following map_files needs CAP_CHECKPOINT_RESTORE or CAP_SYS_ADMIN, and CAP_DAC_OVERRIDE: run as root"
}

// mappedFile keeps fd, opened non-blocking, only if it is a regular file with m's device and inode (any,
// when m.Inode is 0).
func mappedFile(fd int, name string, m procfs.Mapping) (*os.File, error) {
	var st unix.Stat_t
	f, err := regularFile(fd, name, &st)
	if err != nil {
		return nil, err
	}
	if m.Inode != 0 && (st.Ino != m.Inode || unix.Major(st.Dev) != m.DevMajor || unix.Minor(st.Dev) != m.DevMinor) {
		f.Close()
		return nil, fmt.Errorf("%s is not the mapped file (device %d:%d inode %d, mapped %d:%d inode %d)",
			name, unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino, m.DevMajor, m.DevMinor, m.Inode)
	}
	return f, nil
}
