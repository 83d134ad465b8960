package clitree

import (
	"runtime"

	"github.com/spf13/cobra"

	"github.com/jvmkit/jvmkit/cmd/internal/cliutil"
)

// FinishTree adds what every tool's tree has: --version, completions of pids and flags, and the marks
// of what this build's architecture cannot do. Each tree package calls it last, after its commands.
func FinishTree(root *cobra.Command) {
	setVersion(root)
	addCompletions(root)
	markArch(root, runtime.GOARCH)
}

// setVersion gives a tool's root command its --version. The text is a template for cobra: braces
// cannot occur in it (versions and hashes have none).
func setVersion(root *cobra.Command) {
	root.Version = cliutil.BuildVersion()
	root.SetVersionTemplate(cliutil.VersionText(root.Name()))
}
