package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// threadsCmd is a placeholder until the threads view lands.
func (a *jvmkit) threadsCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "threads",
		Hidden: true,
		RunE:   func(*cobra.Command, []string) error { return errors.New("threads: not implemented yet") },
	}
}
