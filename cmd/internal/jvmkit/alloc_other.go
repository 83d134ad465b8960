//go:build !linux

package jvmkit

import "os"

// hupSignals is empty: alloc --switch-flags needs Linux.
func hupSignals() []os.Signal { return nil }

// monotonicNow is unknown on this platform.
func monotonicNow() uint64 { return 0 }
