package procfs

import (
	"bytes"
	"strconv"
)

// ParseUIDMapRoot returns the outside uid that uid 0 of a /proc/<pid>/uid_map maps to (lines "inside
// outside count", user_namespaces(7)); ok is false when no line maps uid 0.
func ParseUIDMapRoot(b []byte) (uid int, ok bool) {
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		f := bytes.Fields(line)
		if len(f) != 3 {
			continue
		}
		in, err1 := strconv.ParseUint(string(f[0]), 10, 32)
		out, err2 := strconv.ParseUint(string(f[1]), 10, 32)
		n, err3 := strconv.ParseUint(string(f[2]), 10, 32)
		if err1 != nil || err2 != nil || err3 != nil || n == 0 {
			continue
		}
		if in == 0 {
			return int(out), true
		}
	}
	return 0, false
}
