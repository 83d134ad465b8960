package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// flagsCmd is a placeholder until the flags view lands.
func (a *jvmkit) flagsCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "flags",
		Hidden: true,
		RunE:   func(*cobra.Command, []string) error { return errors.New("flags: not implemented yet") },
	}
}
