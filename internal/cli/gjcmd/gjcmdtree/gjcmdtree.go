// Package gjcmdtree declares gjcmd's command line to cobra, for the release tool's completions and man
// pages. gjcmd itself parses its command line without cobra (see package gjcmd); the tree runs gjcmd's
// Main, so that both read one command line the same way (tested).
package gjcmdtree

import (
	"bytes"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/jvmkit/jvmkit/internal/cli/gjcmd"
	"github.com/jvmkit/jvmkit/internal/clitree"
	"github.com/jvmkit/jvmkit/internal/cliutil"
)

// Command builds gjcmd's command tree: gjcmd's usage, help and flags; running it runs gjcmd.Main.
func Command(stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:           gjcmd.Use,
		Short:         gjcmd.Short,
		Long:          gjcmd.Long,
		Args:          cobra.ArbitraryArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(_ *cobra.Command, args []string) error {
			if code := gjcmd.Main(args, stdout, stderr); code != 0 {
				return cliutil.Exit(code)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.SetInterspersed(false) // everything after the target belongs to the command (e.g. "VM.flags -all")
	for _, fl := range gjcmd.Flags() {
		switch v := fl.Value.(type) {
		case *bool:
			if fl.Name != "help" && fl.Name != "version" { // cobra adds its own
				f.BoolVarP(v, fl.Name, fl.Short, *v, fl.Usage)
			}
		case *int:
			f.IntVarP(v, fl.Name, fl.Short, *v, fl.Usage)
		case *string:
			f.StringVarP(v, fl.Name, fl.Short, *v, fl.Usage)
		case *time.Duration:
			f.DurationVarP(v, fl.Name, fl.Short, *v, fl.Usage)
		default:
			panic(fmt.Sprintf("gjcmd flag --%s: type %T", fl.Name, fl.Value))
		}
	}
	clitree.FinishTree(cmd)
	return cmd
}

// CompletionScript is the completion script cobra generates for gjcmd in shell (bash, zsh, fish,
// powershell), with descriptions: what `gjcmd completion SHELL` prints (gjcmd embeds them; a test keeps
// them current).
func CompletionScript(shell string) ([]byte, error) {
	root := Command(io.Discard, io.Discard)
	var b bytes.Buffer
	var err error
	switch shell {
	case "bash":
		err = root.GenBashCompletionV2(&b, true)
	case "zsh":
		err = root.GenZshCompletion(&b)
	case "fish":
		err = root.GenFishCompletion(&b, true)
	case "powershell":
		err = root.GenPowerShellCompletionWithDesc(&b)
	default:
		err = fmt.Errorf("no completion for shell %q", shell)
	}
	return b.Bytes(), err
}
