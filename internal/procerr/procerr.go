package procerr

import "io/fs"

// Error is a sentinel error: a message, and the error it wraps, if any. Sentinels are package-level
// variables of this type, and their error values are their addresses: a package that re-exports one
// (attach.ErrProcessGone is procerr.ErrProcessGone) or wraps one does it with an address, which the
// compiler lays out in the binary, where copying an error variable is code that runs at every start
// of every program that links the package (gjcmd counts its start-up in tenths of a millisecond).
type Error struct {
	Msg string
	Err error // the error it wraps, if any
	// Permission, without Err, wraps fs.ErrPermission (a variable set at start-up itself, so it cannot
	// be the Err of a sentinel the compiler lays out).
	Permission bool
}

func (e *Error) Error() string { return e.Msg }

// Unwrap returns the wrapped error.
func (e *Error) Unwrap() error {
	if e.Err == nil && e.Permission {
		return fs.ErrPermission
	}
	return e.Err
}

// The sentinels, by value (see Error); the Err variables below are their addresses.
var (
	ProcessGone  = Error{Msg: "no such process"}
	NotJVM       = Error{Msg: "not a Java process"}
	Permission   = Error{Msg: "permission denied"}
	NotSupported = Error{Msg: "not supported on this platform"}
)

var (
	// ErrProcessGone: the pid does not exist, or the process exited while we worked on it.
	ErrProcessGone error = &ProcessGone
	// ErrNotJVM: the process is not a Java virtual machine (no libjvm.so).
	ErrNotJVM error = &NotJVM
	// ErrPermission: the caller may not read, trace or attach to the process, or something it would use
	// is not what the process made (a planted socket or link).
	ErrPermission error = &Permission
	// ErrNotSupported: this platform (operating system or architecture) lacks the mechanism.
	ErrNotSupported error = &NotSupported
)
