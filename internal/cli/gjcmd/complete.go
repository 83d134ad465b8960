package gjcmd

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/jvmkit/jvmkit/internal/cliutil"
	"github.com/jvmkit/jvmkit/jcmd"
)

// completeAfterTarget answers a shell's completion request (`gjcmd __complete ARGS... WORD`) itself once
// ARGS name a target: what follows the target is a diagnostic command line, whose options ("-all",
// "-gz=1", "name=x") cobra would take for gjcmd's own flags ("-all=" as -l's value). Before the target,
// gjcmd's flags and the pids, it leaves the request to cobra (ok false). The answer is cobra's: one
// candidate a line, a tab before its description, then ":" and the directive.
func completeAfterTarget(args []string, stdout, stderr io.Writer) (code int, ok bool) {
	if len(args) < 2 || (args[0] != cobra.ShellCompRequestCmd && args[0] != cobra.ShellCompNoDescRequestCmd) {
		return 0, false
	}
	g := &gjcmd{stdout: stdout, stderr: stderr}
	root := g.command()
	words, toComplete := args[1:len(args)-1], args[len(args)-1]
	if err := root.Flags().Parse(words); err != nil || root.Flags().NArg() == 0 {
		return 0, false
	}
	root.SetContext(context.Background())
	comps, directive := g.complete(root, root.Flags().Args(), toComplete)
	for _, c := range comps {
		if args[0] == cobra.ShellCompNoDescRequestCmd {
			c, _, _ = strings.Cut(c, "\t")
		}
		fmt.Fprintln(stdout, c)
	}
	fmt.Fprintf(stdout, ":%d\n", directive)
	return 0, true
}

// complete is gjcmd's completion: `gjcmd <TAB>` the running JVMs, `gjcmd PID <TAB>` the diagnostic
// commands that JVM offers (its own `help`), `gjcmd PID JFR.start <TAB>` that command's options as its
// help lists them, and their values where the help names them.
func (g *gjcmd) complete(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	const none = cobra.ShellCompDirectiveNoFileComp
	if g.list {
		return nil, none
	}
	if len(args) == 0 {
		return cliutil.CompleteJVMs(cmd.Context(), toComplete), none
	}
	if len(args) >= 2 && args[1] == "-f" {
		if len(args) == 2 {
			return nil, cobra.ShellCompDirectiveDefault // the file of commands
		}
		return nil, none
	}
	if len(args) >= 2 && (rawOp(args[1]) || args[1] == "PerfCounter.print") {
		if args[1] == "load" && len(args) == 2 {
			return nil, cobra.ShellCompDirectiveDefault // the agent library
		}
		return nil, none
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(cmd.Context()), cliutil.CompletionDeadline)
	defer cancel()
	pids, err := jcmd.Select(ctx, args[0])
	if err != nil || len(pids) == 0 {
		return nil, none
	}
	// Several JVMs (a main class, or 0): the first one's commands stand for all.
	cl, err := jcmd.Dial(ctx, pids[0], nil)
	if err != nil {
		cobra.CompDebugln(fmt.Sprintf("attach %d: %v", pids[0], err), false)
		return nil, none
	}
	defer cl.Close()
	if len(args) == 1 || (len(args) == 2 && args[1] == "help") {
		names, err := cl.Commands(ctx)
		if err != nil {
			cobra.CompDebugln(fmt.Sprintf("help of %d: %v", pids[0], err), false)
			return nil, none
		}
		out := slices.Clone(names)
		if len(args) == 1 {
			out = append(out, "PerfCounter.print", "-f")
		}
		return out, none
	}
	if len(args) > 2 && args[1] == "help" {
		return nil, none
	}
	c, err := cl.Describe(ctx, args[1])
	if err != nil {
		cobra.CompDebugln(fmt.Sprintf("help %s of %d: %v", args[1], pids[0], err), false)
		return nil, none
	}
	return completeOptions(c, args[2:], toComplete)
}

// completeOptions offers "name=" for each option of a diagnostic command not given yet (or that may be
// repeated), and after "name=" the values the JVM's help names for it.
func completeOptions(c *jcmd.Command, given []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	opts := slices.Concat(c.Options, c.Controls)
	if name, value, ok := strings.Cut(toComplete, "="); ok {
		for _, o := range opts {
			if o.Name != name {
				continue
			}
			values := o.Values
			if o.Type == "BOOLEAN" {
				values = []string{"true", "false"}
			}
			var out []cobra.Completion
			for _, v := range values {
				if strings.HasPrefix(v, value) {
					out = append(out, name+"="+v)
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		}
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	seen := map[string]bool{}
	for _, w := range given {
		name, _, _ := strings.Cut(w, "=")
		seen[name] = true
	}
	var out []cobra.Completion
	directive := cobra.ShellCompDirectiveNoFileComp
	for _, o := range opts {
		if o.Hidden || (seen[o.Name] && !o.Multiple) || !strings.HasPrefix(o.Name, toComplete) {
			continue
		}
		desc := o.Description
		if d, _, ok := strings.Cut(desc, ". "); ok {
			desc = d
		}
		// A boolean option alone means true (HotSpot's DCmdParser, jdk.jfr's parser); the others take
		// a value right after "=", without a space.
		word := o.Name
		if o.Type != "BOOLEAN" {
			word += "="
			directive |= cobra.ShellCompDirectiveNoSpace
		}
		out = append(out, cobra.CompletionWithDesc(word, desc))
	}
	return out, directive
}
