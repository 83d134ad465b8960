package gjcmd

import (
	"embed"
	"io"
)

// completions are the completion scripts cobra generates for gjcmd's tree (package gjcmdtree, whose
// test rewrites them with -update and checks that they are current).
//
//go:embed completions
var completions embed.FS

// completionScript prints `gjcmd completion SHELL`, as the cobra-built gjcmd did; ok is false for
// arguments that are not that (e.g. a JVM whose main class contains "completion").
func completionScript(args []string, stdout io.Writer) (ok bool) {
	if len(args) != 2 || args[0] != "completion" {
		return false
	}
	switch args[1] {
	case "bash", "zsh", "fish", "powershell":
	default:
		return false
	}
	b, err := completions.ReadFile("completions/" + args[1])
	if err != nil {
		return false
	}
	_, _ = stdout.Write(b)
	return true
}
