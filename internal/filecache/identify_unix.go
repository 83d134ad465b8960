//go:build unix

package filecache

import (
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

func identify(f *os.File, fi fs.FileInfo) (ID, bool) {
	var st unix.Stat_t
	if unix.Fstat(int(f.Fd()), &st) != nil {
		return ID{}, false
	}
	//nolint:unconvert // Dev and Ino differ in type between systems
	return ID{Dev: uint64(st.Dev), Ino: uint64(st.Ino), Size: fi.Size(), Mtime: fi.ModTime().UnixNano()}, true
}
