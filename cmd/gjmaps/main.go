// Command gjmaps writes perf maps (/tmp/perf-<pid>.map) for running HotSpot JVMs, also in containers, so
// that perf shows JIT-compiled Java frames by name: a jmaps replacement that needs no JDK or agent.
package main

import (
	"os"

	"github.com/jvmkit/jvmkit/cmd/internal/gjmaps"
)

func main() {
	os.Exit(gjmaps.Main(os.Args[1:], os.Stdout, os.Stderr))
}
