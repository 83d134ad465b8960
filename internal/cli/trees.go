package cli

import (
	"io"
	"runtime"

	"github.com/spf13/cobra"
)

// GjcmdCommand builds gjcmd's command tree: for GjcmdMain, and for the release tool, which generates
// completions and man pages from it.
func GjcmdCommand(stdout, stderr io.Writer) *cobra.Command {
	g := &gjcmd{stdout: stdout, stderr: stderr}
	root := g.command()
	root.ValidArgsFunction = g.complete
	finishTree(root)
	return root
}

// GjmapsCommand builds gjmaps' command tree (see GjcmdCommand).
func GjmapsCommand(stdout, stderr io.Writer) *cobra.Command {
	g := &gjmaps{stdout: stdout, stderr: stderr}
	root := g.command()
	finishTree(root)
	return root
}

// finishTree adds what every tool's tree has: --version, completions of pids and flags, and the marks
// of what this build's architecture cannot do.
func finishTree(root *cobra.Command) {
	setVersion(root)
	addCompletions(root)
	markArch(root, runtime.GOARCH)
}
