package procfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/internal/procerr"
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

// TestAlive: a zombie has exited, though kill(pid, 0) still finds it.
func TestAlive(t *testing.T) {
	if !Default.Alive(os.Getpid()) {
		t.Error("Alive(self) = false")
	}
	if Default.Alive(1<<22) || Default.Alive(0) || Default.Alive(-1) {
		t.Error("Alive of a pid that does not exist")
	}
	cmd := exec.Command("sh", "-c", "read x")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	defer func() { _ = cmd.Wait() }()
	if !Default.Alive(pid) {
		t.Fatal("Alive(running child) = false")
	}
	// The child exits when its stdin closes; not reaped, it stays a zombie.
	w, err := Default.WatchExitOnly(pid)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	stdin.Close()
	select {
	case <-w.Exited():
	case <-time.After(30 * time.Second):
		t.Fatal("the child did not exit")
	}
	if state, _, err := Default.Stat(pid); err != nil || state != 'Z' {
		t.Fatalf("child state %c, %v; want a zombie", state, err)
	}
	if err := unix.Kill(pid, 0); err != nil {
		t.Fatalf("kill(zombie, 0): %v", err)
	}
	if Default.Alive(pid) {
		t.Error("Alive(zombie) = true")
	}
	if New("/proc/").Alive(pid) {
		t.Error("Alive(zombie) by stat = true")
	}
	if err := Default.GoneErr(pid); !errors.Is(err, procerr.ErrProcessGone) || !strings.Contains(err.Error(), "exited with status 1") { // read at EOF
		t.Errorf("GoneErr(zombie) = %v", err)
	}
}

// TestGoneErr: nil for a running process; for one killed, ErrProcessGone with the signal while it is a
// zombie, and without once reaped.
func TestGoneErr(t *testing.T) {
	if err := Default.GoneErr(os.Getpid()); err != nil {
		t.Errorf("GoneErr(self) = %v", err)
	}
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	w, err := Default.WatchExitOnly(pid)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	_ = cmd.Process.Kill()
	select {
	case <-w.Exited():
	case <-time.After(30 * time.Second):
		t.Fatal("the child did not exit")
	}
	if err := Default.GoneErr(pid); !errors.Is(err, procerr.ErrProcessGone) || !strings.Contains(err.Error(), "was killed by SIGKILL") {
		t.Errorf("GoneErr(killed zombie) = %v", err)
	}
	_ = cmd.Wait()
	if err := Default.GoneErr(pid); !errors.Is(err, procerr.ErrProcessGone) {
		t.Errorf("GoneErr(reaped) = %v", err)
	}
}

func TestWrap(t *testing.T) {
	_, err := Default.Maps(1 << 22)
	if err := Wrap(1<<22, "memory map", err); !errors.Is(err, procerr.ErrProcessGone) {
		t.Errorf("no such pid: %v", err)
	}
	if err := Wrap(1, "memory map", fs.ErrPermission); !errors.Is(err, procerr.ErrPermission) ||
		!strings.Contains(err.Error(), "memory map of process 1") {
		t.Errorf("permission: %v", err)
	}
	if err := Wrap(1, "memory map", unix.ESRCH); !errors.Is(err, procerr.ErrProcessGone) {
		t.Errorf("ESRCH: %v", err)
	}
	if err := Wrap(1, "memory map", io.ErrUnexpectedEOF); !errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, procerr.ErrProcessGone) {
		t.Errorf("other: %v", err)
	}
	if Wrap(1, "x", nil) != nil {
		t.Error("Wrap(nil) != nil")
	}
}

// TestHandle holds a child process: it has not exited while it runs, has once killed (a zombie, then
// reaped), and a pid that names no process cannot be held.
func TestHandle(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h, err := OpenHandle(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if h.Exited() {
		t.Error("Exited() while it runs")
	}
	_ = cmd.Process.Kill()
	deadline := time.Now().Add(10 * time.Second)
	for !h.Exited() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond) // polls the pidfd
	}
	if !h.Exited() {
		t.Error("not Exited() after SIGKILL (a zombie)")
	}
	_ = cmd.Wait()
	if !h.Exited() {
		t.Error("not Exited() once reaped")
	}
	if _, err := OpenHandle(cmd.Process.Pid); !errors.Is(err, procerr.ErrProcessGone) {
		t.Errorf("OpenHandle of a reaped pid: %v, want ErrProcessGone", err)
	}
}
