package cliutil

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/signal"
)

// SignalContext is the context a command runs under: SIGINT and SIGTERM cancel it (exit status 130).
func SignalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), stopSignals()...)
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
