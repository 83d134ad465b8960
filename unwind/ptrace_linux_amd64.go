package unwind

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// StopThread stops one thread briefly and calls fn with its registers while it is stopped, then lets
// it go. It uses PTRACE_SEIZE and PTRACE_INTERRUPT, which stop only that thread and leave no signal
// behind; a signal the thread was receiving when it stopped is delivered when it is detached. The
// thread is always detached, also when fn panics; if it does not stop within timeout (or ctx ends),
// the OS thread that traced it exits, which makes the kernel detach it. A thread of a process that
// was stopped (SIGSTOP) stays stopped.
func StopThread(ctx context.Context, tid int, timeout time.Duration, fn func(Regs) error) error {
	type result struct {
		err   error
		panic any
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		var res result
		detached := false
		func() {
			defer func() {
				if p := recover(); p != nil {
					res.panic = p
				}
			}()
			detached, res.err = stopLocked(ctx, tid, timeout, fn)
		}()
		if detached {
			runtime.UnlockOSThread()
		}
		// Else this goroutine ends locked to its OS thread, which then exits: the kernel detaches
		// whatever that thread traced (exit_ptrace).
		done <- res
	}()
	res := <-done
	if res.panic != nil {
		panic(res.panic)
	}
	return res.err
}

// stopLocked runs on a locked OS thread. detached says that the tracee is no longer traced.
func stopLocked(ctx context.Context, tid int, timeout time.Duration, fn func(Regs) error) (detached bool, err error) {
	if err := unix.PtraceSeize(tid); err != nil {
		if errors.Is(err, unix.ESRCH) {
			return true, fmt.Errorf("stop thread %d: %w", tid, ErrThreadGone)
		}
		return true, fmt.Errorf("stop thread %d: ptrace seize: %w", tid, err)
	}
	sig := 0
	stopped := false
	defer func() {
		if !stopped {
			return
		}
		// PTRACE_DETACH with a signal to deliver the one that was intercepted.
		_, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_DETACH, uintptr(tid), 0, uintptr(sig), 0, 0)
		detached = e == 0 || e == unix.ESRCH
	}()
	if err := unix.PtraceInterrupt(tid); err != nil {
		if errors.Is(err, unix.ESRCH) {
			return false, fmt.Errorf("stop thread %d: %w", tid, ErrThreadGone)
		}
		return false, fmt.Errorf("stop thread %d: ptrace interrupt: %w", tid, err)
	}
	deadline := time.Now().Add(timeout)
	for pause := 20 * time.Microsecond; ; pause = min(2*pause, time.Millisecond) {
		var ws unix.WaitStatus
		wpid, err := unix.Wait4(tid, &ws, unix.WALL|unix.WNOHANG, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return errors.Is(err, unix.ECHILD), fmt.Errorf("stop thread %d: wait: %w", tid, err)
		}
		if wpid == tid {
			if ws.Exited() || ws.Signaled() {
				return true, fmt.Errorf("stop thread %d: %w", tid, ErrThreadGone)
			}
			if ws.Stopped() {
				stopped = true
				if uint32(ws)>>16 != unix.PTRACE_EVENT_STOP {
					sig = int(ws.StopSignal()) // a signal-delivery-stop: pass the signal on
				}
				break
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false, fmt.Errorf("stop thread %d: it did not stop within %v", tid, timeout)
		}
		time.Sleep(pause)
	}
	var r unix.PtraceRegs
	if err := unix.PtraceGetRegs(tid, &r); err != nil {
		return false, fmt.Errorf("stop thread %d: read registers: %w", tid, err)
	}
	regs := Regs{PC: r.Rip, SP: r.Rsp, FP: r.Rbp, BX: r.Rbx, R13: r.R13, AX: r.Rax}
	return false, fn(regs)
}
