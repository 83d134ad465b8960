package clitree

import (
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/jvmkit/jvmkit/cmd/internal/cliutil"
)

// Run executes a tool's command tree under a context that SIGINT/SIGTERM cancel and turns the outcome
// into the documented exit status, printing the error once as "tool: message". With usage, a usage
// error is followed by the command's usage text.
func Run(tool string, cmd *cobra.Command, args []string, stdout, stderr io.Writer, usage bool) int {
	ctx, stop := cliutil.SignalContext()
	defer stop()
	cmd.SetArgs(args)
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	err := cmd.ExecuteContext(ctx)
	if isCobraUsage(err) {
		err = cliutil.UsageErrorf("%s", err.Error())
	}
	var text func() string
	if usage {
		text = cmd.UsageString
	}
	return cliutil.Finish(ctx, tool, err, stderr, text)
}

// isCobraUsage tells cobra's command-line errors (unknown flags and commands, argument counts).
func isCobraUsage(err error) bool {
	return err != nil && !cliutil.IsUsage(err) &&
		(strings.HasPrefix(err.Error(), "unknown ") || strings.Contains(err.Error(), "arg(s)"))
}
