//go:build !linux

package procfs

// Exited reports whether the process behind a pidfd has exited; never, without pidfds.
func Exited(int) bool { return false }

// ExitStatusOf returns how a process ended; never known without pidfds.
func (fs FS) ExitStatusOf(int, int) ExitStatus { return ExitStatus{} }
