package clitree

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/jvmkit/jvmkit/cmd/internal/cliutil"
)

// MarkArch marks, in the help, the commands and flags of a tree (gjmaps.Command, jvmkit.Command, the
// release tool's gjcmd tree) that a build for goarch cannot run, and has them fail at once with
// cliutil.ExitUnsupported and the reason. Every tree has its own architecture's marks (FinishTree); the
// release tool adds another's to generate that architecture's man pages.
func MarkArch(root *cobra.Command, goarch string) { markArch(root, goarch) }

// markArch marks, in the help, the commands and flags that this build cannot run, and has them fail at
// once with ExitUnsupported and the reason, before anything is opened or attached.
func markArch(root *cobra.Command, goarch string) {
	for _, l := range cliutil.ArchLimits(goarch) {
		cmd := findCommand(root, l.Path)
		if cmd == nil {
			continue // a tree without that command (another binary, or an extra not linked in)
		}
		mark := fmt.Sprintf("[not on %s]", goarch)
		what := l.Path
		if l.Flag == "" {
			cmd.Short += " " + mark
		} else if f := cmd.Flags().Lookup(l.Flag); f != nil {
			f.Usage += " " + mark
			what += " --" + l.Flag
		} else {
			continue
		}
		cmd.Long = strings.TrimRight(cmd.Long, "\n") + fmt.Sprintf("\n\nNot available in this build (linux/%s): %s. Instead: %s.", goarch, what, l.Instead)
		orig := cmd.Args
		if orig == nil {
			orig = cobra.ArbitraryArgs
		}
		err := cliutil.ArchErrorf("%s is not available on linux/%s: %s. Instead: %s", strings.TrimPrefix(what, root.Name()+" "), goarch, l.Why, l.Instead)
		cmd.Args = func(c *cobra.Command, args []string) error {
			if l.Flag == "" || c.Flags().Changed(l.Flag) {
				return err
			}
			return orig(c, args)
		}
	}
}

func findCommand(root *cobra.Command, path string) *cobra.Command {
	words := strings.Fields(path)
	if len(words) == 0 || words[0] != root.Name() {
		return nil
	}
	c := root
	for _, w := range words[1:] {
		var next *cobra.Command
		for _, sub := range c.Commands() {
			if sub.Name() == w {
				next = sub
			}
		}
		if next == nil {
			return nil
		}
		c = next
	}
	return c
}
