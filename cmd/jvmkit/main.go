// Command jvmkit reads running HotSpot JVMs (and their core files) from the outside: VMStructs, code
// cache, threads and flags, with no agent and no attach.
package main

import (
	"os"

	"github.com/jvmkit/jvmkit/cmd/internal/agent"
	"github.com/jvmkit/jvmkit/cmd/internal/jfrexport"
	"github.com/jvmkit/jvmkit/cmd/internal/jvmkit"
)

func main() {
	os.Exit(jvmkit.Main(os.Args[1:], os.Stdout, os.Stderr, agent.Command, jfrexport.Command))
}
