//go:build !linux

package agent

import "os"

const openConfigFlags = 0

// ownerAndPerm returns the file's permission bits; its owner is not known here (-1).
func ownerAndPerm(f *os.File) (uid int, perm uint32, err error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, 0, err
	}
	return -1, uint32(fi.Mode().Perm()), nil
}
