//go:build !linux

package vmstructs

import "fmt"

// ProcessMemoryWriter writes into a live process; only on Linux.
type ProcessMemoryWriter struct{ pid int }

// OpenProcessMemoryWriter returns ErrUnsupportedPlatform outside Linux.
func OpenProcessMemoryWriter(pid int) (*ProcessMemoryWriter, error) {
	return nil, fmt.Errorf("vmstructs: write process memory: %w", ErrUnsupportedPlatform)
}

// PID implements Writer.
func (w *ProcessMemoryWriter) PID() int { return w.pid }

// WriteAt implements Writer.
func (w *ProcessMemoryWriter) WriteAt(p []byte, addr uint64) (int, error) {
	return 0, fmt.Errorf("vmstructs: write process memory: %w", ErrUnsupportedPlatform)
}

// Close implements io.Closer.
func (w *ProcessMemoryWriter) Close() error { return nil }

func checkFlagAddr(pid int, lib string, addr uint64) error {
	return fmt.Errorf("vmstructs: write process memory: %w", ErrUnsupportedPlatform)
}
