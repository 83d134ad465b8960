package cliutil

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/jvmkit/jvmkit/attach"
	"github.com/jvmkit/jvmkit/jcmd"
)

// Exit statuses (see the package documentation; ExitUnsupported is in arch.go).
const (
	ExitOK          = 0
	ExitFailed      = 1
	ExitUsage       = 2
	ExitNoJVM       = 3
	ExitPermission  = 4
	ExitNoListener  = 5
	ExitInterrupted = 130
)

// usageError marks errors in the command line.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// UsageErrorf is a command-line error (exit status 2).
func UsageErrorf(format string, args ...any) error { return usagef(format, args...) }

// Exit is an error that makes Run return code without printing anything: the command's output already
// explained what happened.
func Exit(code int) error { return &exitError{code} }

// exitError carries a status without a message of its own (the output already explained it).
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// ExitCode maps an error to the documented exit status.
func ExitCode(err error) int {
	var ue *usageError
	var ee *exitError
	var je *attach.JVMError
	var ae *attach.AgentError
	var arch *archError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &ue):
		return ExitUsage
	case errors.As(err, &arch):
		return ExitUnsupported
	case errors.Is(err, context.Canceled):
		return ExitInterrupted
	case errors.Is(err, attach.ErrProcessGone), errors.Is(err, attach.ErrNotJVM),
		errors.Is(err, attach.ErrNotHotSpot), errors.Is(err, jcmd.ErrNoMatch):
		return ExitNoJVM
	case errors.Is(err, attach.ErrPermission), errors.Is(err, jcmd.ErrSymlink):
		return ExitPermission // a symbolic link is never written through: refused as a planted one is
	case errors.Is(err, attach.ErrNoListener), errors.Is(err, context.DeadlineExceeded):
		return ExitNoListener
	case errors.As(err, &je), errors.As(err, &ae):
		return ExitFailed
	}
	return ExitFailed
}

// Report prints an error once, as "tool: message", unless it is a bare exit status.
func Report(w io.Writer, tool string, err error) {
	var ee *exitError
	if err == nil || errors.As(err, &ee) {
		return
	}
	fmt.Fprintf(w, "%s: %v\n", tool, err)
	if note := CapsNote(err); note != "" {
		fmt.Fprintf(w, "%s: note: %s\n", tool, note)
	}
}
