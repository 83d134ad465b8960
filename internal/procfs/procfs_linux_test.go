package procfs

import (
	"os"
	"os/exec"
	"testing"
	"time"
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

// TestWatchExit watches children that exec.Cmd.Wait reaps at once, so that as root the status comes from
// the process connector (no zombie is left to read it from).
func TestWatchExit(t *testing.T) {
	for _, c := range []struct {
		script string
		want   string
	}{
		{"exit 3", "exited with status 3"},
		{"kill -KILL $$", "was killed by SIGKILL"},
	} {
		cmd := exec.Command("sh", "-c", "read x; "+c.script)
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		w, err := Default.WatchExit(cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		stdin.Close()
		_ = cmd.Wait()
		select {
		case <-w.Exited():
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no exit seen", c.script)
		}
		got := w.Status().String()
		w.Close()
		t.Logf("%s: %s", c.script, got)
		if os.Geteuid() == 0 && got != c.want {
			t.Errorf("%s: %q, want %q", c.script, got, c.want)
		}
	}
	if _, err := Default.WatchExit(1 << 22); err == nil {
		t.Error("WatchExit of a pid that does not exist")
	}
}
