package procfs

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// ParseCmdline splits the NUL-separated text of /proc/<pid>/cmdline.
func ParseCmdline(b []byte) []string {
	b = bytes.TrimRight(b, "\x00")
	if len(b) == 0 {
		return nil
	}
	return strings.Split(string(b), "\x00")
}

// ParseStatStartTime returns field 22 (starttime, clock ticks since boot) of /proc/<pid>/stat. The
// command name in field 2 may contain spaces and parentheses, so fields are counted after the last ')'.
func ParseStatStartTime(b []byte) (uint64, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("%w: stat has no command name", ErrMalformed)
	}
	fields := bytes.Fields(b[i+1:])
	// fields[0] is field 3 (state); starttime is field 22.
	const idx = 22 - 3
	if len(fields) <= idx {
		return 0, fmt.Errorf("%w: stat has %d fields", ErrMalformed, len(fields)+2)
	}
	v, err := strconv.ParseUint(string(fields[idx]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: stat starttime: %w", ErrMalformed, err)
	}
	return v, nil
}
