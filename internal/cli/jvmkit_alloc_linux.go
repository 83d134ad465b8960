package cli

import (
	"os"

	"golang.org/x/sys/unix"
)

// hupSignals end alloc --switch-flags like SIGINT and SIGTERM do, so that it restores the flag: a closed
// terminal sends SIGHUP.
func hupSignals() []os.Signal { return []os.Signal{unix.SIGHUP} }
