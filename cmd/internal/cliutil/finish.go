package cliutil

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
)

// SignalContext is the context a command runs under: SIGINT and SIGTERM cancel it (exit status 130).
// The handler goes in in the background (LazySignalContext's arm, from a goroutine): os/signal's first
// Notify starts a thread of its own and waits for it, 0.4 ms of a 6 ms gjcmd here, which the command's
// first steps (reading /proc, connecting) need not wait for. A signal in that first moment ends the process
// as if it had no handler (killed by the signal, status 128+n): what a SIGKILL at any moment does.
func SignalContext() (context.Context, context.CancelFunc) {
	ctx, arm, stop := LazySignalContext()
	go arm()
	return ctx, stop
}

// LazySignalContext is SignalContext with the handler put in only by arm (in place when arm returns;
// later calls do nothing), for a command that may end before it has anything to undo or report: until
// then SIGINT and SIGTERM end the process (status 128+n), as they end jattach. os/signal's handler costs
// a thread of its own and about 0.9 ms of CPU, a quarter of a warm gjcmd VM.version. stop cancels the
// context and takes the handler out; an arm after it does nothing.
func LazySignalContext() (ctx context.Context, arm func(), stop context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 1)
	var once sync.Once
	var armed bool // written in once, read after it
	arm = func() {
		once.Do(func() {
			signal.Notify(sigs, stopSignals()...)
			armed = true
			go func() {
				select {
				case <-sigs:
					cancel() // later signals are taken and dropped until stop, as signal.NotifyContext does
				case <-ctx.Done():
				}
			}()
		})
	}
	return ctx, arm, func() {
		cancel()
		once.Do(func() {}) // waits for an arm under way; none after
		if armed {
			signal.Stop(sigs)
		}
	}
}

// IsUsage tells errors in the command line (UsageErrorf).
func IsUsage(err error) bool {
	var ue *usageError
	return errors.As(err, &ue)
}

// Finish turns a command's outcome under ctx (SignalContext's) into the documented exit status, printing
// the error once as "tool: message"; a usage error is followed by usage(), when given.
func Finish(ctx context.Context, tool string, err error, stderr io.Writer, usage func() string) int {
	var ee *exitError
	if err != nil && ctx.Err() != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.As(err, &ee) {
		// A bare status was explained where it was decided (e.g. what an interrupted command left).
		err = context.Canceled
	}
	if IsUsage(err) {
		fmt.Fprintf(stderr, "%s: %v\n", tool, err)
		if usage != nil {
			fmt.Fprintf(stderr, "\n%s", usage())
		}
		return ExitUsage
	}
	Report(stderr, tool, err)
	return ExitCode(err)
}
