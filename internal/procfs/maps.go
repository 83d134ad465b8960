package procfs

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// MapsContain scans the text of /proc/<pid>/maps and returns, for each needle, whether some mapped
// path ends with it ("/libjvm.so" matches ".../server/libjvm.so"). It stops reading once every
// needle was found, so a match costs only the lines up to it.
func MapsContain(r io.Reader, needles ...string) ([]bool, error) {
	found := make([]bool, len(needles))
	left := len(needles)
	br := bufio.NewReaderSize(r, 64<<10)
	for left > 0 {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			line = bytes.TrimRight(line, "\n")
			if i := bytes.IndexByte(line, '/'); i >= 0 {
				path := bytes.TrimSuffix(line[i:], []byte(" (deleted)"))
				for j, n := range needles {
					if !found[j] && bytes.HasSuffix(path, []byte(n)) {
						found[j] = true
						left--
					}
				}
			}
		}
		switch {
		case err == nil:
		case errors.Is(err, bufio.ErrBufferFull):
			// A path longer than the buffer: skip the rest of that line.
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			if errors.Is(err, io.EOF) {
				return found, nil
			}
			if err != nil {
				return found, err
			}
		case errors.Is(err, io.EOF):
			return found, nil
		default:
			return found, err
		}
	}
	return found, nil
}
