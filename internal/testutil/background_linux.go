package testutil

import (
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Background is a program the test runs next to the JVMs (a load generator, a tracer, one of our tools),
// started by [StartBackground] and stopped by the test's cleanup if it still runs then.
type Background struct {
	Cmd    *exec.Cmd
	Stdout SyncBuffer
	Stderr SyncBuffer

	stop    unix.Signal
	done    chan struct{}
	waitErr error
	once    sync.Once
}

// StartBackground starts bin with args. Stopping it (the cleanup, [Background.Stop]) sends stop, for the
// programs that print their results when told to end (wrk and bpftrace on SIGINT), then SIGKILL 10 s
// later. If the test binary dies, the kernel kills it.
func StartBackground(t testing.TB, stop unix.Signal, bin string, args ...string) *Background {
	t.Helper()
	b := &Background{stop: stop, done: make(chan struct{})}
	b.Cmd = exec.Command(bin, args...)
	b.Cmd.Stdout, b.Cmd.Stderr = &b.Stdout, &b.Stderr
	b.Cmd.SysProcAttr = &unix.SysProcAttr{Pdeathsig: unix.SIGKILL}
	b.Cmd.WaitDelay = 5 * time.Second
	if err := b.Cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	track(b)
	go func() {
		b.waitErr = b.Cmd.Wait()
		close(b.done)
	}()
	t.Cleanup(b.Stop)
	return b
}

// Done is closed when the program has exited.
func (b *Background) Done() <-chan struct{} { return b.done }

// Err is the program's exit error (nil for status 0); valid once Done is closed.
func (b *Background) Err() error { return b.waitErr }

// WaitFor waits up to timeout until the program printed s on stdout or stderr (such as a tracer's "attached"
// line), and fails the test if it exits or the time runs out first.
func (b *Background) WaitFor(t testing.TB, s string, timeout time.Duration) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !strings.Contains(b.Stdout.String(), s) && !strings.Contains(b.Stderr.String(), s) {
		select {
		case <-b.done:
			t.Fatalf("%s exited before printing %q: %v\n%s\n%s", b.Cmd, s, b.waitErr, b.Stdout.String(), b.Stderr.String())
		case <-deadline.C:
			t.Fatalf("%s did not print %q within %v\n%s\n%s", b.Cmd, s, timeout, b.Stdout.String(), b.Stderr.String())
		case <-tick.C:
		}
	}
}

// Wait waits up to timeout for the program to exit and returns its stdout; the test fails if it does not
// exit in time or exits with an error.
func (b *Background) Wait(t testing.TB, timeout time.Duration) string {
	t.Helper()
	select {
	case <-b.done:
	case <-time.After(timeout):
		b.Stop()
		t.Fatalf("%s did not end within %v\n%s", b.Cmd, timeout, b.Stderr.String())
	}
	untrack(b)
	if b.waitErr != nil {
		t.Fatalf("%s: %v\n%s\n%s", b.Cmd, b.waitErr, b.Stdout.String(), b.Stderr.String())
	}
	return b.Stdout.String()
}

// Stop ends the program if it still runs: its stop signal, then SIGKILL 10 s later. It is idempotent.
func (b *Background) Stop() {
	b.once.Do(func() {
		defer untrack(b)
		select {
		case <-b.done:
			return
		default:
		}
		_ = b.Cmd.Process.Signal(b.stop)
		select {
		case <-b.done:
		case <-time.After(10 * time.Second):
			_ = b.Cmd.Process.Kill()
			<-b.done
		}
	})
}

func (b *Background) forceStop() string {
	b.Stop()
	return fmt.Sprintf("background program %s", b.Cmd)
}
