package cliutil

import (
	"os"

	"golang.org/x/sys/unix"
)

// stopSignals end a command as an interrupt (exit status 130): SIGINT from a terminal, SIGTERM from kill
// or a supervisor.
func stopSignals() []os.Signal { return []os.Signal{os.Interrupt, unix.SIGTERM} }
