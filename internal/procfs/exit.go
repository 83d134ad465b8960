package procfs

import (
	"encoding/binary"
	"fmt"
	"strconv"
)

// ExitStatus is how a process ended, as wait(2) would tell its parent.
type ExitStatus struct {
	Known  bool // false: the process is gone, but how it ended was not seen
	Code   int  // its exit status, when Signal is 0
	Signal int  // the signal that killed it
	Core   bool // it dumped core
}

// FromWaitStatus decodes the kernel's task exit_code (the wait status: exit status << 8, or the signal
// with 0x80 for a core dump).
func FromWaitStatus(ws uint32) ExitStatus {
	if sig := int(ws & 0x7f); sig != 0 {
		return ExitStatus{Known: true, Signal: sig, Core: ws&0x80 != 0}
	}
	return ExitStatus{Known: true, Code: int(ws>>8) & 0xff}
}

func (s ExitStatus) String() string {
	switch {
	case !s.Known:
		return "exited"
	case s.Signal != 0:
		name := "signal " + strconv.Itoa(s.Signal)
		if s.Signal < len(signalNames) && signalNames[s.Signal] != "" {
			name = "SIG" + signalNames[s.Signal]
		}
		core := ""
		if s.Core {
			core = ", core dumped"
		}
		return fmt.Sprintf("was killed by %s%s", name, core)
	}
	return fmt.Sprintf("exited with status %d", s.Code)
}

// signalNames are Linux's signal numbers (the same on amd64 and arm64).
var signalNames = [...]string{1: "HUP", 2: "INT", 3: "QUIT", 4: "ILL", 5: "TRAP", 6: "ABRT", 7: "BUS", 8: "FPE",
	9: "KILL", 10: "USR1", 11: "SEGV", 12: "USR2", 13: "PIPE", 14: "ALRM", 15: "TERM", 16: "STKFLT", 17: "CHLD",
	18: "CONT", 19: "STOP", 20: "TSTP", 21: "TTIN", 22: "TTOU", 23: "URG", 24: "XCPU", 25: "XFSZ", 26: "VTALRM",
	27: "PROF", 28: "WINCH", 29: "IO", 30: "PWR", 31: "SYS"}

// ProcExit is an exit event of the kernel's process connector (linux/cn_proc.h): a thread's exit.
type ProcExit struct {
	PID, TGID int
	ExitCode  uint32 // the wait status (see FromWaitStatus)
}

// Constants of linux/connector.h and linux/cn_proc.h.
const (
	cnIdxProc       = 1
	cnValProc       = 1
	procEventExit   = 0x80000000
	nlmsgHdrLen     = 16
	cnMsgHdrLen     = 20
	procEventHdrLen = 16 // what, cpu, timestamp_ns
)

// ParseProcEvents returns the exit events in a datagram read from a process connector socket (netlink
// messages, each a cn_msg carrying a proc_event). Other events and anything malformed are skipped.
func ParseProcEvents(b []byte) []ProcExit {
	var out []ProcExit
	le := binary.LittleEndian // the connector's structs are in host order; jvmkit's platforms are little-endian
	for len(b) >= nlmsgHdrLen {
		n := int(le.Uint32(b))
		if n < nlmsgHdrLen || n > len(b) {
			break
		}
		msg := b[nlmsgHdrLen:n]
		if len(msg) >= cnMsgHdrLen && le.Uint32(msg) == cnIdxProc && le.Uint32(msg[4:]) == cnValProc {
			l := int(le.Uint16(msg[16:]))
			ev := msg[cnMsgHdrLen:]
			if l <= len(ev) && l >= procEventHdrLen+16 && le.Uint32(ev) == procEventExit {
				d := ev[procEventHdrLen:]
				out = append(out, ProcExit{PID: int(int32(le.Uint32(d))), TGID: int(int32(le.Uint32(d[4:]))), ExitCode: le.Uint32(d[8:])})
			}
		}
		n = (n + 3) &^ 3 // NLMSG_ALIGN
		if n > len(b) {
			break
		}
		b = b[n:]
	}
	return out
}

// ParseStatExitCode returns field 52 of /proc/<pid>/stat (exit_code, Linux 3.5+): the wait status of a
// zombie, 0 for a running process.
func ParseStatExitCode(b []byte) (uint32, error) {
	v, err := statNumber(b, 52, "exit_code", 32)
	return uint32(v), err
}
