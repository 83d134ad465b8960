//go:build !unix

package unwind

import "io/fs"

// identify has no file identity to give here: nothing is shared.
func identify(fs.FileInfo) (fileID, bool) { return fileID{}, false }
