package jvmkit

import (
	"os"

	"golang.org/x/sys/unix"
)

// hupSignals end alloc --switch-flags like SIGINT and SIGTERM do, so that it restores the flag: a closed
// terminal sends SIGHUP.
func hupSignals() []os.Signal { return []os.Signal{unix.SIGHUP} }

// monotonicNow reads CLOCK_MONOTONIC, the clock of the probes' timestamps and of -Xlog's timenanos.
func monotonicNow() uint64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) != nil {
		return 0
	}
	return uint64(ts.Nano())
}
