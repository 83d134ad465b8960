package procfs

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// Status is the subset of /proc/<pid>/status that jvmkit needs.
type Status struct {
	Name  string
	State byte // R, S, D, T (stopped), t (tracing stop), Z, X, I ...
	TGID  int
	PPID  int
	// NSpid lists the pid in every pid namespace the process belongs to, outermost first.
	NSpid []int
	// UID and GID hold real, effective, saved and filesystem ids.
	UID, GID [4]int
	// Groups lists the supplementary group ids (empty, not nil, when the line is empty).
	Groups []int
	SigBlk uint64 // blocked by the thread whose status this is (the main thread for /proc/<pid>)
	SigIgn uint64
	SigCgt uint64
	// RSS is the resident set size in bytes (VmRSS); 0 for kernel threads and zombies.
	RSS int64
	// CapEff is the effective capability set (bit n: capability n, CAP_SYS_PTRACE is 19); HasCapEff says
	// whether the line was there.
	CapEff    uint64
	HasCapEff bool
	// Umask is the file mode creation mask (Linux 4.7 and later); HasUmask says whether the line was
	// there.
	Umask    uint32
	HasUmask bool
	// hasSig records whether the Sig* lines were present (they always are on Linux).
	hasSig bool
}

// ErrMalformed is wrapped by parse errors.
var ErrMalformed = errors.New("malformed proc file")

// ParseStatus parses the text of /proc/<pid>/status.
func ParseStatus(b []byte) (Status, error) {
	var s Status
	seenPid := false
	for len(b) > 0 {
		var line []byte
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			line, b = b, nil
		}
		k, v, ok := bytes.Cut(line, []byte{':'})
		if !ok {
			continue
		}
		v = bytes.TrimSpace(v)
		var err error
		switch string(k) {
		case "Name":
			s.Name = string(v)
		case "State":
			if len(v) == 0 {
				return s, fmt.Errorf("%w: empty State", ErrMalformed)
			}
			s.State = v[0]
		case "Tgid":
			s.TGID, err = strconv.Atoi(string(v))
			seenPid = err == nil
		case "PPid":
			s.PPID, err = strconv.Atoi(string(v))
		case "NSpid":
			s.NSpid, err = parseInts(v, 0)
		case "Uid":
			err = parseIDs(v, &s.UID)
		case "Gid":
			err = parseIDs(v, &s.GID)
		case "Groups":
			s.Groups, err = parseInts(v, 0)
		case "SigBlk":
			s.SigBlk, err = strconv.ParseUint(string(v), 16, 64)
		case "SigIgn":
			s.SigIgn, err = strconv.ParseUint(string(v), 16, 64)
		case "VmRSS":
			kb, _ := bytes.CutSuffix(v, []byte(" kB"))
			s.RSS, err = strconv.ParseInt(string(bytes.TrimSpace(kb)), 10, 64)
			s.RSS <<= 10
		case "SigCgt":
			s.SigCgt, err = strconv.ParseUint(string(v), 16, 64)
			s.hasSig = err == nil
		case "CapEff":
			s.CapEff, err = strconv.ParseUint(string(v), 16, 64)
			s.HasCapEff = err == nil
		case "Umask":
			var m uint64
			m, err = strconv.ParseUint(string(v), 8, 12)
			s.Umask, s.HasUmask = uint32(m), err == nil
		}
		if err != nil {
			return s, fmt.Errorf("%w: status field %s: %w", ErrMalformed, k, err)
		}
	}
	if !seenPid {
		return s, fmt.Errorf("%w: status has no Tgid", ErrMalformed)
	}
	if len(s.NSpid) == 0 {
		s.NSpid = []int{s.TGID}
	}
	return s, nil
}

func parseInts(v []byte, max int) ([]int, error) {
	fields := bytes.Fields(v)
	if max > 0 && len(fields) > max {
		return nil, errors.New("too many fields")
	}
	out := make([]int, 0, len(fields))
	for _, f := range fields {
		n, err := strconv.Atoi(string(f))
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// parseIDs reads the four ids of a Uid or Gid line. Fewer are malformed rather than zero-filled: a
// missing effective id would otherwise read as root.
func parseIDs(v []byte, dst *[4]int) error {
	ids, err := parseInts(v, len(dst))
	if err != nil {
		return err
	}
	if len(ids) != len(dst) {
		return fmt.Errorf("want %d ids, got %d", len(dst), len(ids))
	}
	copy(dst[:], ids)
	return nil
}

// NSPID is the pid of the process in its own (innermost) pid namespace.
func (s Status) NSPID() int { return s.NSpid[len(s.NSpid)-1] }

// EUID is the effective uid.
func (s Status) EUID() int { return s.UID[1] }

// EGID is the effective gid.
func (s Status) EGID() int { return s.GID[1] }

// Catches reports whether the process has a handler installed for signal sig (1-based number).
func (s Status) Catches(sig int) bool { return sig > 0 && sig <= 64 && s.SigCgt&(1<<(sig-1)) != 0 }

// Ignores reports whether the process ignores signal sig.
func (s Status) Ignores(sig int) bool { return sig > 0 && sig <= 64 && s.SigIgn&(1<<(sig-1)) != 0 }

// Blocks reports whether the thread whose status this is blocks signal sig (see SigBlk).
func (s Status) Blocks(sig int) bool { return sig > 0 && sig <= 64 && s.SigBlk&(1<<(sig-1)) != 0 }

// Stopped reports whether the process is stopped by a signal or a tracer (it cannot run until resumed).
func (s Status) Stopped() bool { return s.State == 'T' || s.State == 't' }

// Dead reports whether the process has exited (zombie or dead).
func (s Status) Dead() bool { return s.State == 'Z' || s.State == 'X' }

// StateName spells out the State letter as ps(1) does.
func (s Status) StateName() string {
	switch s.State {
	case 'R':
		return "running"
	case 'S':
		return "sleeping"
	case 'D':
		return "disk sleep"
	case 'T':
		return "stopped"
	case 't':
		return "tracing stop"
	case 'Z':
		return "zombie"
	case 'X':
		return "dead"
	case 'I':
		return "idle"
	}
	return "state " + strconv.QuoteRune(rune(s.State))
}
