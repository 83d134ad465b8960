package cliutil

import (
	"runtime"

	"github.com/spf13/cobra"
)

// FinishTree adds what every tool's tree has: --version, completions of pids and flags, and the marks
// of what this build's architecture cannot do. Each tree package calls it last, after its commands.
func FinishTree(root *cobra.Command) {
	setVersion(root)
	addCompletions(root)
	markArch(root, runtime.GOARCH)
}
