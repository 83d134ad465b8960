//go:build unix

package filecache

import (
	"io/fs"
	"syscall"
)

func identify(fi fs.FileInfo) (ID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ID{}, false
	}
	//nolint:unconvert // Dev and Ino differ in type between systems
	return ID{Dev: uint64(st.Dev), Ino: uint64(st.Ino), Size: fi.Size(), Mtime: fi.ModTime().UnixNano()}, true
}
