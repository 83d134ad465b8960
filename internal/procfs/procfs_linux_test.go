package procfs

import (
	"os"
	"testing"
)

func TestLive(t *testing.T) {
	s, err := Default.Status(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if s.TGID != os.Getpid() || s.EUID() != os.Geteuid() {
		t.Errorf("self status %+v", s)
	}
	pids, err := Default.Pids()
	if err != nil || len(pids) == 0 {
		t.Fatalf("Pids: %v %v", pids, err)
	}
	args, err := Default.Cmdline(os.Getpid())
	if err != nil || len(args) == 0 {
		t.Errorf("Cmdline: %v %v", args, err)
	}
	if _, err := Default.StartTime(os.Getpid()); err != nil {
		t.Error(err)
	}
	if _, err := Default.Children(os.Getpid()); err != nil {
		t.Error(err)
	}
}
