package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// codecacheCmd is a placeholder until the codecache view lands.
func (a *jvmkit) codecacheCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "codecache",
		Hidden: true,
		RunE:   func(*cobra.Command, []string) error { return errors.New("codecache: not implemented yet") },
	}
}
