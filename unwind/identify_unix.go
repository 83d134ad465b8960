//go:build unix

package unwind

import (
	"io/fs"
	"syscall"
)

// identify returns a file's identity: device, inode, size and modification time.
func identify(fi fs.FileInfo) (fileID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino), size: fi.Size(), mtime: fi.ModTime().UnixNano()}, true //nolint:unconvert // Dev and Ino differ in type between systems
}
