//go:build !linux

package agent

import "io/fs"

const openConfigFlags = 0

func fileOwner(fs.FileInfo) (int, bool) { return 0, false }
