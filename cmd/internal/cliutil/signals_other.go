//go:build !linux

package cliutil

import "os"

// stopSignals end a command as an interrupt (exit status 130); os.Interrupt is the one signal every
// platform has.
func stopSignals() []os.Signal { return []os.Signal{os.Interrupt} }
