// Command gjcmd is a drop-in replacement for the JDK's jcmd: it sends diagnostic commands to running
// HotSpot JVMs without a JDK, from the host to containers and as root to other users' JVMs.
//
// The runtime's GOMAXPROCS updater is off: it is a goroutine that the runtime starts before main, and
// waking a thread for it on the other CPU cost a warm `gjcmd PID VM.version` 0.25-0.3 ms of its 3.8 ms
// (docs/benchmarks.md). gjcmd runs for milliseconds, not long enough for a container's CPU limit to
// change under it; GOMAXPROCS is still set from the limit at start.
//
//go:debug updatemaxprocs=0
package main

import (
	"os"

	"github.com/jvmkit/jvmkit/cmd/internal/gjcmd"
)

func main() {
	os.Exit(gjcmd.Main(os.Args[1:], os.Stdout, os.Stderr))
}
