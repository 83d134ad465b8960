package procfs

import (
	"encoding/binary"
	"testing"
)

// procExitMsg builds a netlink datagram carrying one PROC_EVENT_EXIT, as the kernel sends it.
func procExitMsg(pid, tgid int, code uint32) []byte {
	le := binary.LittleEndian
	b := make([]byte, nlmsgHdrLen+cnMsgHdrLen+procEventHdrLen+24)
	le.PutUint32(b, uint32(len(b)))
	c := b[nlmsgHdrLen:]
	le.PutUint32(c, cnIdxProc)
	le.PutUint32(c[4:], cnValProc)
	le.PutUint16(c[16:], procEventHdrLen+24)
	ev := c[cnMsgHdrLen:]
	le.PutUint32(ev, procEventExit)
	d := ev[procEventHdrLen:]
	le.PutUint32(d, uint32(pid))
	le.PutUint32(d[4:], uint32(tgid))
	le.PutUint32(d[8:], code)
	le.PutUint32(d[12:], 17)
	return b
}

func TestParseProcEvents(t *testing.T) {
	b := append(procExitMsg(11, 10, 9), procExitMsg(10, 10, 3<<8)...)
	got := ParseProcEvents(b)
	if len(got) != 2 || got[0] != (ProcExit{PID: 11, TGID: 10, ExitCode: 9}) || got[1].ExitCode != 3<<8 {
		t.Fatalf("ParseProcEvents = %+v", got)
	}
	if s := FromWaitStatus(got[0].ExitCode).String(); s != "was killed by SIGKILL" {
		t.Errorf("status 9: %q", s)
	}
	if s := FromWaitStatus(got[1].ExitCode).String(); s != "exited with status 3" {
		t.Errorf("status 3<<8: %q", s)
	}
	if s := FromWaitStatus(0x80 | 11).String(); s != "was killed by SIGSEGV, core dumped" {
		t.Errorf("status 0x8b: %q", s)
	}
	if s := (ExitStatus{}).String(); s != "exited" {
		t.Errorf("unknown status: %q", s)
	}
	if got := ParseProcEvents(b[:len(b)-3]); len(got) != 1 {
		t.Errorf("a cut datagram: %+v", got)
	}
}

func TestParseStatExitCode(t *testing.T) {
	zombie := "77 (java) Z 1 77 77 0 -1 4227084 0 0 0 0 0 0 0 0 20 0 1 0 100 0 0 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 9\n"
	code, err := ParseStatExitCode([]byte(zombie))
	if err != nil || code != 9 {
		t.Errorf("ParseStatExitCode = %d, %v", code, err)
	}
	if _, err := ParseStatExitCode([]byte("1 (init) S 0 1 1 0 -1 4194560 1 2 3 4 5 6 7 8 20 0 1 0 55 100 10\n")); err == nil {
		t.Error("a short stat has an exit code")
	}
}

func FuzzParseProcEvents(f *testing.F) {
	f.Add(procExitMsg(11, 10, 9))
	f.Add(append(procExitMsg(1, 1, 0), procExitMsg(2, 1, 0)...))
	f.Add([]byte{16, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, e := range ParseProcEvents(b) {
			_ = FromWaitStatus(e.ExitCode).String()
		}
		_, _ = ParseStatExitCode(b)
	})
}
