//go:build !linux

package procfs

import "errors"

// ExitWatcher is unsupported on this platform.
type ExitWatcher struct{}

// WatchExit fails: it needs Linux's pidfds.
func (fs FS) WatchExit(pid int) (*ExitWatcher, error) {
	return nil, errors.New("procfs: watching a process's exit needs Linux")
}

// WatchExitOnly fails: it needs Linux's pidfds.
func (fs FS) WatchExitOnly(pid int) (*ExitWatcher, error) { return fs.WatchExit(pid) }

// Exited returns nil.
func (w *ExitWatcher) Exited() <-chan struct{} { return nil }

// Status returns an unknown status.
func (w *ExitWatcher) Status() ExitStatus { return ExitStatus{} }

// Close does nothing.
func (w *ExitWatcher) Close() {}
