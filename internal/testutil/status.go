package testutil

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// procStatus holds the fields of /proc/<pid>/status the harness needs (see proc_pid_status(5)).
type procStatus struct {
	State  byte   // R, S, D, Z, ...
	PPid   int    // parent pid, in the reader's pid namespace
	NSpid  []int  // pid in each pid namespace, outermost (the reader's) first
	Uid    [4]int // real, effective, saved, filesystem
	Gid    [4]int
	Groups []int
	SigBlk uint64 // blocked by the main thread
	SigIgn uint64 // ignored (process-wide)
	SigCgt uint64 // caught (process-wide)
}

// sigBit is the bit of signal sig in the masks of /proc/<pid>/status.
func sigBit(sig int) uint64 { return 1 << (sig - 1) }

// parseStatus parses the text of /proc/<pid>/status. Unknown lines are ignored; malformed known lines are
// errors.
func parseStatus(data []byte) (procStatus, error) {
	var st procStatus
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		value = strings.TrimSpace(value)
		var err error
		switch key {
		case "State":
			if value == "" {
				err = fmt.Errorf("empty")
			} else {
				st.State = value[0]
			}
		case "PPid":
			st.PPid, err = strconv.Atoi(value)
		case "NSpid":
			st.NSpid, err = parseInts(value)
		case "Uid":
			err = parseIDs(value, &st.Uid)
		case "Gid":
			err = parseIDs(value, &st.Gid)
		case "Groups":
			st.Groups, err = parseInts(value)
		case "SigBlk":
			st.SigBlk, err = strconv.ParseUint(value, 16, 64)
		case "SigIgn":
			st.SigIgn, err = strconv.ParseUint(value, 16, 64)
		case "SigCgt":
			st.SigCgt, err = strconv.ParseUint(value, 16, 64)
		}
		if err != nil {
			return procStatus{}, fmt.Errorf("parse status line %q: %w", sc.Text(), err)
		}
	}
	if err := sc.Err(); err != nil {
		return procStatus{}, fmt.Errorf("parse status: %w", err)
	}
	return st, nil
}

func parseInts(s string) ([]int, error) {
	fields := strings.Fields(s)
	out := make([]int, 0, len(fields))
	for _, f := range fields {
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

func parseIDs(s string, ids *[4]int) error {
	vals, err := parseInts(s)
	if err != nil {
		return err
	}
	if len(vals) != len(ids) {
		return fmt.Errorf("want %d ids, got %d", len(ids), len(vals))
	}
	copy(ids[:], vals)
	return nil
}

// parseStat returns the state and the start time (clock ticks after boot) from the text of /proc/<pid>/stat.
// The command name is in parentheses and may itself contain spaces and parentheses, so the fields are counted
// from the last ')'.
func parseStat(data []byte) (state byte, start uint64, err error) {
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("parse stat: no command name in %q", data)
	}
	fields := strings.Fields(string(data[i+1:]))
	// fields[0] is field 3 (state); starttime is field 22.
	const startField = 22 - 3
	if len(fields) <= startField || len(fields[0]) != 1 {
		return 0, 0, fmt.Errorf("parse stat: too few fields in %q", data)
	}
	start, err = strconv.ParseUint(fields[startField], 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("parse stat: start time: %w", err)
	}
	return fields[0][0], start, nil
}

// parseUnixSockets returns the inodes of the sockets bound to path in the text of /proc/<pid>/net/unix:
//
//	Num       RefCount Protocol Flags    Type St Inode Path
//	0000000000000000: 00000002 00000000 00010000 0001 01 41623 /tmp/.java_pid2304
func parseUnixSockets(data []byte, path string) []uint64 {
	var inodes []uint64
	for line := range strings.Lines(string(data)) {
		fields := strings.Fields(line)
		if len(fields) < 8 || strings.Join(fields[7:], " ") != path {
			continue
		}
		if ino, err := strconv.ParseUint(fields[6], 10, 64); err == nil {
			inodes = append(inodes, ino)
		}
	}
	return inodes
}

// parseHsperfdata returns the path, as the process sees it, of the hsperfdata file mapped in the text of
// /proc/<pid>/maps, or "" when nspid has none mapped (-XX:-UsePerfData).
func parseHsperfdata(data []byte, nspid int) string {
	suffix := "/" + strconv.Itoa(nspid)
	for line := range strings.Lines(string(data)) {
		fields := strings.Fields(line)
		if len(fields) < 6 {
			continue
		}
		path := strings.Join(fields[5:], " ")
		if dir, ok := strings.CutSuffix(path, suffix); ok && strings.HasPrefix(dir[strings.LastIndexByte(dir, '/')+1:], "hsperfdata_") {
			return path
		}
	}
	return ""
}
