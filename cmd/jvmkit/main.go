// Command jvmkit reads running HotSpot JVMs (and their core files) from the outside: VMStructs, code
// cache, threads and flags, with no agent and no attach.
package main

import (
	"os"

	"github.com/jvmkit/jvmkit/internal/cli"
	"github.com/jvmkit/jvmkit/internal/cli/agent"
	"github.com/jvmkit/jvmkit/internal/cli/jfrexport"
)

func main() {
	os.Exit(cli.JvmkitMain(os.Args[1:], os.Stdout, os.Stderr, agent.Command, jfrexport.Command))
}
