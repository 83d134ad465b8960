//go:build !linux

package guard

import (
	"context"

	"github.com/jvmkit/jvmkit/internal/procerr"
)

// DefaultDir is where jvmkit keeps its records.
const DefaultDir = "/run/jvmkit"

// Store is unsupported on this platform.
type Store struct{}

// OpenStore returns procerr.ErrNotSupported.
func OpenStore(string) (*Store, error) { return nil, procerr.ErrNotSupported }

// Close does nothing.
func (*Store) Close() error { return nil }

// Session is unsupported on this platform.
type Session struct{}

// Begin returns procerr.ErrNotSupported.
func Begin(context.Context, *Store, int, string) (*Session, error) {
	return nil, procerr.ErrNotSupported
}

// KeepFlag returns procerr.ErrNotSupported.
func (*Session) KeepFlag(string, bool, bool) (bool, error) { return false, procerr.ErrNotSupported }

// ReleaseFlag returns procerr.ErrNotSupported.
func (*Session) ReleaseFlag(string, func(bool) error) error { return procerr.ErrNotSupported }

// Close does nothing.
func (*Session) Close() error { return nil }

// RestoreLeft returns procerr.ErrNotSupported.
func RestoreLeft(context.Context, *Store, int, string) (restored, held []Change, err error) {
	return nil, nil, procerr.ErrNotSupported
}

// Read returns procerr.ErrNotSupported.
func Read(*Store, int) (*Record, error) { return nil, procerr.ErrNotSupported }

// Held returns false.
func (c *Change) Held() bool { return false }

// OpenStoreIfExists returns nil, nil.
func OpenStoreIfExists(string) (*Store, error) { return nil, nil }

// NoteSet returns procerr.ErrNotSupported.
func NoteSet(context.Context, *Store, int, string, bool, bool, string) error {
	return procerr.ErrNotSupported
}

// Identify returns procerr.ErrNotSupported.
func Identify(int) (Process, error) { return Process{}, procerr.ErrNotSupported }

// Guardian returns 0: there is no guardian on this platform.
func (*Session) Guardian() int { return 0 }
