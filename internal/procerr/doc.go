// Package procerr holds the errors about a target process that every package touching one returns:
// it is gone, it is not a JVM, we may not read it, or this platform cannot do it. attach, vmstructs,
// usdt, unwind and perfmap re-export them under their own names (attach.ErrProcessGone is
// procerr.ErrProcessGone), so that one errors.Is test covers the whole project and a library package
// does not import the attach protocol for its error values.
//
// Two kinds of "not supported" are kept apart: ErrNotSupported is this platform (an OS or an
// architecture without the mechanism); vmstructs.ErrUnsupportedJVM is the target JVM (a field or
// feature its VMStructs lack).
//
// # Compatibility
//
// The values and their messages are part of the CLI's contract (exit codes are chosen by errors.Is on
// them, cmd/internal/cliutil): a change of message changes what users read after "tool: ".
package procerr
