package vmstructs

import "github.com/jvmkit/jvmkit/internal/procerr"

// Errors about the target process, shared with attach, usdt, unwind and perfmap (the same values, so
// that errors.Is(err, ErrProcessGone) holds for this package's errors too).
var (
	// ErrProcessGone: the process does not exist or exited while it was read.
	ErrProcessGone = procerr.ErrProcessGone
	// ErrNotJVM: the process (or core) has no libjvm.so.
	ErrNotJVM = procerr.ErrNotJVM
	// ErrPermission: the process's memory or files may not be read (or written) by the caller.
	ErrPermission = procerr.ErrPermission
	// ErrUnsupportedPlatform: live processes are read on Linux only. A JVM lacking a feature is
	// ErrUnsupportedJVM.
	ErrUnsupportedPlatform = procerr.ErrNotSupported
)
