//go:build !linux

package guard

import (
	"context"

	"github.com/jvmkit/jvmkit/attach"
)

// DefaultDir is where jvmkit keeps its records.
const DefaultDir = "/run/jvmkit"

// Store is unsupported on this platform.
type Store struct{}

// OpenStore returns attach.ErrNotSupported.
func OpenStore(string) (*Store, error) { return nil, attach.ErrNotSupported }

// Close does nothing.
func (*Store) Close() error { return nil }

// Session is unsupported on this platform.
type Session struct{}

// Begin returns attach.ErrNotSupported.
func Begin(context.Context, *Store, int, string) (*Session, error) {
	return nil, attach.ErrNotSupported
}

// KeepFlag returns attach.ErrNotSupported.
func (*Session) KeepFlag(string, bool, bool) (bool, error) { return false, attach.ErrNotSupported }

// ReleaseFlag returns attach.ErrNotSupported.
func (*Session) ReleaseFlag(string, func(bool) error) error { return attach.ErrNotSupported }

// Close does nothing.
func (*Session) Close() error { return nil }

// RestoreLeft returns attach.ErrNotSupported.
func RestoreLeft(context.Context, *Store, int, string) (restored, held []Change, err error) {
	return nil, nil, attach.ErrNotSupported
}

// Read returns attach.ErrNotSupported.
func Read(*Store, int) (*Record, error) { return nil, attach.ErrNotSupported }

// Held returns false.
func (c *Change) Held() bool { return false }

// OpenStoreIfExists returns nil, nil.
func OpenStoreIfExists(string) (*Store, error) { return nil, nil }

// NoteSet returns attach.ErrNotSupported.
func NoteSet(context.Context, *Store, int, string, bool, bool, string) error {
	return attach.ErrNotSupported
}
