package hsperf

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// openNoFollow opens path for reading without following a symlink in the last two components: a user
// could plant one in their own hsperfdata directory, or put one in place of that directory between
// Find and a read, to make a root reader open another file (a terminal of theirs, which would become
// the reader's controlling terminal without O_NOCTTY). It does not block on a FIFO.
func openNoFollow(path string) (*os.File, error) {
	dir, name := filepath.Split(path)
	dfd, err := unix.Open(filepath.Clean(dir), unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		return nil, fmt.Errorf("open %s: %s is not a directory (a symbolic link?)", path, filepath.Clean(dir))
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(dfd)
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) {
		return nil, fmt.Errorf("open %s: is a symbolic link", path)
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// Find returns the path of the hsperfdata file of a JVM whose pid inside its own namespace is
// nspid, under the directory tmp (e.g. "/proc/1234/root/tmp"), preferring hsperfdata_*
// directories and files owned by uid (uid < 0: no preference). Stale files of dead JVMs can share
// the pid, so among equals the most recently modified wins. It returns an error wrapping
// fs.ErrNotExist when there is none. Neither the directory nor the file may be a symlink: only
// regular files in real directories count.
func Find(tmp string, nspid int, uid int) (string, error) {
	if nspid <= 0 {
		return "", fmt.Errorf("hsperf: find: invalid pid %d", nspid)
	}
	dirs, err := os.ReadDir(tmp)
	if err != nil {
		return "", fmt.Errorf("hsperf: find pid %d: %w", nspid, err)
	}
	name := strconv.Itoa(nspid)
	var (
		best      string
		bestScore int
		bestMtime unix.Timespec
	)
	for _, de := range dirs {
		// DirEntry types come from lstat semantics: a symlink to a directory is not IsDir.
		if !strings.HasPrefix(de.Name(), "hsperfdata_") || !de.IsDir() {
			continue
		}
		dir := filepath.Join(tmp, de.Name())
		p := filepath.Join(dir, name)
		var ds, st unix.Stat_t
		if unix.Lstat(dir, &ds) != nil || unix.Lstat(p, &st) != nil {
			continue
		}
		if ds.Mode&unix.S_IFMT != unix.S_IFDIR || st.Mode&unix.S_IFMT != unix.S_IFREG {
			continue
		}
		score := 0
		if uid >= 0 && int64(st.Uid) == int64(uid) {
			score += 2
		}
		if uid >= 0 && int64(ds.Uid) == int64(uid) {
			score++
		}
		if best == "" || score > bestScore || score == bestScore && newer(st.Mtim, bestMtime) {
			best, bestScore, bestMtime = p, score, st.Mtim
		}
	}
	if best == "" {
		return "", fmt.Errorf("hsperf: no hsperfdata file for pid %d under %s: %w", nspid, tmp, fs.ErrNotExist)
	}
	return best, nil
}

func newer(a, b unix.Timespec) bool {
	return a.Sec > b.Sec || a.Sec == b.Sec && a.Nsec > b.Nsec
}
