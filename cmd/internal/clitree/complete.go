package clitree

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/jvmkit/jvmkit/cmd/internal/cliutil"
)

// addCompletions completes pids wherever a command's first argument is one (jvmkit's views, gjmaps -p):
// the running HotSpot JVMs, described by their main class.
func addCompletions(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.ValidArgsFunction == nil && takesPID(c.Use) {
			c.ValidArgsFunction = func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
				if len(args) > 0 {
					return nil, cobra.ShellCompDirectiveDefault
				}
				// "<pid|core>": pids first; a core file name is still completed when nothing matches.
				return cliutil.CompleteJVMs(cmd.Context(), toComplete), cobra.ShellCompDirectiveDefault
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	if f := root.Flags().Lookup("pid"); f != nil && f.Value.Type() == "string" {
		_ = root.RegisterFlagCompletionFunc("pid", func(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			// A comma-separated list: complete its last item.
			i := strings.LastIndexByte(toComplete, ',')
			prefix := toComplete[:i+1]
			var out []cobra.Completion
			for _, c := range cliutil.CompleteJVMs(cmd.Context(), toComplete[i+1:]) {
				out = append(out, prefix+c)
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		})
	}
}

// takesPID tells commands whose first argument is a pid from their usage line ("threads <pid|core>").
func takesPID(use string) bool {
	_, rest, _ := strings.Cut(use, " ")
	return strings.HasPrefix(rest, "<pid")
}
