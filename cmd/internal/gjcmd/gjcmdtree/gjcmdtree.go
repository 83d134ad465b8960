// Package gjcmdtree declares gjcmd's command line to cobra, for the release tool's completions and man
// pages. gjcmd itself parses its command line without cobra (see package gjcmd); the tests check that
// both read a command line the same way and print the same help.
package gjcmdtree

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/jvmkit/jvmkit/cmd/internal/clitree"
	"github.com/jvmkit/jvmkit/cmd/internal/gjcmd"
)

// Command builds gjcmd's command tree: gjcmd's usage, help and flags, for generating documents (it has
// cobra's help and --version; running it is an error: gjcmd.Main runs gjcmd).
func Command(stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:           gjcmd.Use,
		Short:         gjcmd.Short,
		Long:          gjcmd.Long,
		Args:          cobra.ArbitraryArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(*cobra.Command, []string) error {
			return errors.New("gjcmd's cobra tree declares its command line for documents; gjcmd.Main runs it")
		},
	}
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	f := cmd.Flags()
	f.SetInterspersed(false)                  // everything after the target belongs to the command (e.g. "VM.flags -all")
	Bind(f, gjcmd.Flags(), "help", "version") // cobra adds its own --help and --version
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

// Bind declares flags to a pflag set, each bound to its Value, leaving out the names in skip.
func Bind(f *pflag.FlagSet, flags []gjcmd.Flag, skip ...string) {
	for _, fl := range flags {
		if slices.Contains(skip, fl.Name) {
			continue
		}
		switch v := fl.Value.(type) {
		case *bool:
			f.BoolVarP(v, fl.Name, fl.Short, *v, fl.Usage)
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
}
