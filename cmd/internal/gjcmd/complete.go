package gjcmd

import (
	"context"
	"slices"
	"strings"

	"github.com/jvmkit/jvmkit/cmd/internal/cliutil"
	"github.com/jvmkit/jvmkit/jcmd"
)

// completeRequest answers a shell's completion request (`gjcmd __complete ARGS... WORD`, see
// cliutil.WriteCompletions): before the target, gjcmd's flags (after "-") and the running JVMs; after a
// flag that wants a value, file names; after the target, what complete offers.
func (g *gjcmd) completeRequest(noDesc bool, args []string) {
	if len(args) == 0 {
		args = []string{""}
	}
	words, toComplete := args[:len(args)-1], args[len(args)-1]
	rest, pending, err := g.parse(words)
	var comps []string
	directive := cliutil.CompNoFiles
	switch {
	case pending != nil:
		directive = cliutil.CompFiles // --copy-to, -o: a file or directory; the others: anything
	case err != nil:
	case len(rest) > 0:
		comps, directive = g.complete(context.Background(), rest, toComplete)
	case strings.HasPrefix(toComplete, "-"):
		comps = g.completeFlags(toComplete)
	case !g.list:
		comps = cliutil.CompleteJVMs(context.Background(), toComplete)
	}
	cliutil.WriteCompletions(g.stdout, g.stderr, comps, directive, noDesc)
}

// complete is gjcmd's completion after the target: `gjcmd PID <TAB>` the diagnostic commands that JVM
// offers (its own `help`), `gjcmd PID JFR.start <TAB>` that command's options as its
// help lists them, and their values where the help names them.
func (g *gjcmd) complete(ctx context.Context, args []string, toComplete string) ([]string, int) {
	const none = cliutil.CompNoFiles
	if g.list {
		return nil, none
	}
	if len(args) >= 2 && args[1] == "-f" {
		if len(args) == 2 {
			return nil, cliutil.CompFiles // the file of commands
		}
		return nil, none
	}
	if len(args) >= 2 && (rawOp(args[1]) || args[1] == "PerfCounter.print") {
		if args[1] == "load" && len(args) == 2 {
			return nil, cliutil.CompFiles // the agent library
		}
		return nil, none
	}
	ctx, cancel := context.WithTimeout(ctx, cliutil.CompletionDeadline)
	defer cancel()
	pids, err := jcmd.Select(ctx, args[0])
	if err != nil || len(pids) == 0 {
		return nil, none
	}
	// Several JVMs (a main class, or 0): the first one's commands stand for all.
	cl, err := jcmd.Dial(ctx, pids[0], nil)
	if err != nil {
		return nil, none
	}
	defer cl.Close()
	if len(args) == 1 || (len(args) == 2 && args[1] == "help") {
		names, err := cl.Commands(ctx)
		if err != nil {
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
		return nil, none
	}
	return completeOptions(c, args[2:], toComplete)
}

// completeOptions offers "name=" for each option of a diagnostic command not given yet (or that may be
// repeated), and after "name=" the values the JVM's help names for it.
func completeOptions(c *jcmd.Command, given []string, toComplete string) ([]string, int) {
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
			var out []string
			for _, v := range values {
				if strings.HasPrefix(v, value) {
					out = append(out, name+"="+v)
				}
			}
			return out, cliutil.CompNoFiles
		}
		return nil, cliutil.CompNoFiles
	}
	seen := map[string]bool{}
	for _, w := range given {
		name, _, _ := strings.Cut(w, "=")
		seen[name] = true
	}
	var out []string
	directive := cliutil.CompNoFiles
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
			directive |= cliutil.CompNoSpace
		}
		out = append(out, word+"\t"+desc)
	}
	return out, directive
}
