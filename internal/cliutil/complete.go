package cliutil

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/jvmkit/jvmkit/jcmd"
)

// CompletionDeadline bounds what a completion may cost: a shell waits for it at every TAB. Listing JVMs
// reads /proc and hsperfdata; a JVM's commands take an attach and a `help` (a few milliseconds, or the
// listener's start on the first attach).
const CompletionDeadline = 2 * time.Second

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
				return CompleteJVMs(cmd.Context(), toComplete), cobra.ShellCompDirectiveDefault
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
			for _, c := range CompleteJVMs(cmd.Context(), toComplete[i+1:]) {
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

// CompleteJVMs lists the attachable HotSpot JVMs whose pid starts with prefix, each with its main class
// (shells show the part after the tab as a description).
func CompleteJVMs(ctx context.Context, prefix string) []cobra.Completion {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), CompletionDeadline)
	defer cancel()
	jvms, err := jcmd.List(ctx)
	if err != nil {
		cobra.CompDebugln("list JVMs: "+err.Error(), false)
		return nil
	}
	var out []cobra.Completion
	for _, j := range jvms {
		pid := strconv.Itoa(j.PID)
		if !j.HotSpot || !j.Attachable || !strings.HasPrefix(pid, prefix) {
			continue
		}
		desc := j.MainClass
		if desc == "" {
			desc = "java"
		}
		if j.Container {
			desc += " (container)"
		}
		out = append(out, cobra.CompletionWithDesc(pid, desc))
	}
	return out
}
