package procerr

import "errors"

var (
	// ErrProcessGone: the pid does not exist, or the process exited while we worked on it.
	ErrProcessGone = errors.New("no such process")
	// ErrNotJVM: the process is not a Java virtual machine (no libjvm.so).
	ErrNotJVM = errors.New("not a Java process")
	// ErrPermission: the caller may not read, trace or attach to the process, or something it would use
	// is not what the process made (a planted socket or link).
	ErrPermission = errors.New("permission denied")
	// ErrNotSupported: this platform (operating system or architecture) lacks the mechanism.
	ErrNotSupported = errors.New("not supported on this platform")
)
