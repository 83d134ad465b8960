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

// ParseStat returns the state letter (field 3, as in [Status.State]) and the start time (field 22,
// clock ticks since boot) of /proc/<pid>/stat. The command name in field 2 may contain spaces and
// parentheses, so fields are counted after the last ')'.
func ParseStat(b []byte) (state byte, start uint64, err error) {
	fields, err := statFields(b)
	if err != nil {
		return 0, 0, err
	}
	// fields[0] is field 3 (state); starttime is field 22.
	const idx = 22 - 3
	if len(fields) <= idx {
		return 0, 0, fmt.Errorf("%w: stat has %d fields", ErrMalformed, len(fields)+2)
	}
	if len(fields[0]) != 1 {
		return 0, 0, fmt.Errorf("%w: stat state %q", ErrMalformed, fields[0])
	}
	start, err = strconv.ParseUint(string(fields[idx]), 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("%w: stat starttime: %w", ErrMalformed, err)
	}
	return fields[0][0], start, nil
}

// ParseStatFlags returns field 9 of /proc/<pid>/stat, the task's flags (PF_* of linux/sched.h).
func ParseStatFlags(b []byte) (uint64, error) { return statNumber(b, 9, "flags", 64) }

// statNumber parses field (numbered as in proc(5)) of /proc/<pid>/stat, an unsigned number of bits
// bits named what.
func statNumber(b []byte, field int, what string, bits int) (uint64, error) {
	fields, err := statFields(b)
	if err != nil {
		return 0, err
	}
	idx := field - 3
	if len(fields) <= idx {
		return 0, fmt.Errorf("%w: stat has %d fields, no %s", ErrMalformed, len(fields)+2, what)
	}
	v, err := strconv.ParseUint(string(fields[idx]), 10, bits)
	if err != nil {
		return 0, fmt.Errorf("%w: stat %s: %w", ErrMalformed, what, err)
	}
	return v, nil
}

// pfExiting is PF_EXITING: the task is in do_exit (a SIGKILLed process has it from the start of its
// end, while its memory and files are released and before it is a zombie).
const pfExiting = 0x4

// statFields splits /proc/<pid>/stat after the command name: fields[0] is field 3.
func statFields(b []byte) ([][]byte, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil, fmt.Errorf("%w: stat has no command name", ErrMalformed)
	}
	return bytes.Fields(b[i+1:]), nil
}

// ParseStatStartTime returns the start time from /proc/<pid>/stat (see [ParseStat]): with the pid it
// identifies a process across pid reuse.
func ParseStatStartTime(b []byte) (uint64, error) {
	_, start, err := ParseStat(b)
	return start, err
}

// ParseChildren parses /proc/<pid>/task/<tid>/children: the pids of the children of that thread,
// separated by spaces.
func ParseChildren(b []byte) ([]int, error) {
	pids, err := parseInts(b, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: children: %w", ErrMalformed, err)
	}
	return pids, nil
}
