// Command gjcmd is a drop-in replacement for the JDK's jcmd: it sends diagnostic commands to running
// HotSpot JVMs without a JDK, from the host to containers and as root to other users' JVMs.
package main

import (
	"os"

	"github.com/jvmkit/jvmkit/cmd/internal/gjcmd"
)

func main() {
	os.Exit(gjcmd.Main(os.Args[1:], os.Stdout, os.Stderr))
}
