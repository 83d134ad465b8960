package attach

import (
	"errors"
	"fmt"
	"strings"

	"github.com/jvmkit/jvmkit/internal/procerr"
)

// Sentinel errors. Errors returned by this package wrap one of them where it applies, so callers can
// map them to exit codes with errors.Is. The process-level ones are shared with vmstructs, usdt, unwind
// and perfmap (the same values).
var (
	// ErrProcessGone: the pid does not exist or exited while attaching.
	ErrProcessGone error = &procerr.ProcessGone
	// ErrNotJVM: the process is not a Java virtual machine.
	ErrNotJVM error = &procerr.NotJVM
	// ErrNotHotSpot: a JVM that does not speak the HotSpot attach protocol (OpenJ9).
	ErrNotHotSpot = errors.New("not a HotSpot JVM")
	// ErrPermission: the caller may not attach to the target, or something in the rendezvous
	// directory is not what the target made (planted sockets, symlinks).
	ErrPermission error = &procerr.Permission
	// ErrNoListener: the target's attach listener did not answer (not started in time, JVM stopped or
	// hung, attach disabled).
	ErrNoListener error = &noListener
	// ErrAttachDisabled: the JVM runs with -XX:+DisableAttachMechanism. It wraps ErrNoListener.
	ErrAttachDisabled error = &procerr.Error{Msg: "attach listener not available: attach mechanism disabled in the target JVM (started with -XX:+DisableAttachMechanism)", Err: &noListener}
	// ErrRequestTooLarge: the request does not fit the protocol the target speaks.
	ErrRequestTooLarge = errors.New("request too large")
	// ErrBadRequest: an argument cannot be encoded (embedded NUL, op name too long).
	ErrBadRequest = errors.New("bad request")
	// ErrNoReply: the JVM closed the connection without answering (it rejected the request).
	ErrNoReply = errors.New("JVM closed the connection without a reply")
	// ErrAbandoned wraps the cancellation of an operation that the JVM had received whole, or its
	// ErrNoListener when the JVM stopped answering (frozen, stopped, past the deadline): the JVM goes
	// on with it (a heap dump is still written, once it runs again), only its reply is not read.
	ErrAbandoned = errors.New("the JVM had the whole request and goes on with it")
	// ErrNotSupported: the platform has no HotSpot attach support in this package.
	ErrNotSupported error = &procerr.NotSupported
)

// noListener is ErrNoListener's value (see procerr.Error: re-exports and wrappers by address, laid out
// by the compiler, so that gjcmd runs no code for them at start-up).
var noListener = procerr.Error{Msg: "attach listener not available"}

// JVMError is a non-zero status returned by the JVM for an operation.
type JVMError struct {
	Code    int    // the status line of the reply (-1 = JNI_ERR, 101 = bad protocol version, ...)
	Message string // the output that came with it, trimmed
}

func (e *JVMError) Error() string {
	msg := strings.TrimSpace(e.Message)
	if msg == "" {
		return fmt.Sprintf("JVM returned status %d", e.Code)
	}
	return msg
}

// AgentError is a failed `load` operation: the agent's Agent_OnAttach returned non-zero, or the JVM
// could not load the library. ReturnCode is -1 when the JVM reported no code (only a message).
type AgentError struct {
	ReturnCode int
	Message    string
}

func (e *AgentError) Error() string {
	msg := strings.TrimSpace(e.Message)
	switch {
	case msg != "" && e.ReturnCode != -1:
		return fmt.Sprintf("agent load failed (return code %d): %s", e.ReturnCode, msg)
	case msg != "":
		return "agent load failed: " + msg
	}
	return fmt.Sprintf("agent load failed: return code %d", e.ReturnCode)
}
