package cliutil

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"strings"

	"github.com/spf13/cobra"
)

// Run executes a tool's command tree under a context that SIGINT/SIGTERM cancel and turns the outcome
// into the documented exit status, printing the error once as "tool: message". With usage, a usage
// error is followed by the command's usage text.
func Run(tool string, cmd *cobra.Command, args []string, stdout, stderr io.Writer, usage bool) int {
	ctx, stop := signal.NotifyContext(context.Background(), stopSignals()...)
	defer stop()
	cmd.SetArgs(args)
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	err := cmd.ExecuteContext(ctx)
	var ee *exitError
	if err != nil && ctx.Err() != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.As(err, &ee) {
		// A bare status was explained where it was decided (e.g. what an interrupted command left).
		err = context.Canceled
	}
	if isUsage(err) {
		fmt.Fprintf(stderr, "%s: %v\n", tool, err)
		if usage {
			fmt.Fprintf(stderr, "\n%s", cmd.UsageString())
		}
		return ExitUsage
	}
	Report(stderr, tool, err)
	return ExitCode(err)
}

// isUsage tells command-line errors: ours, and cobra's (unknown flags and commands, argument counts).
func isUsage(err error) bool {
	var ue *usageError
	return errors.As(err, &ue) || err != nil &&
		(strings.HasPrefix(err.Error(), "unknown ") || strings.Contains(err.Error(), "arg(s)"))
}
