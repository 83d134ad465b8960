package procerr_test

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"github.com/jvmkit/jvmkit/internal/procerr"
)

// TestError: a sentinel reads as its message, wraps its Err (or fs.ErrPermission with Permission), and
// its address re-exported is the same error value.
func TestError(t *testing.T) {
	perm := &procerr.Error{Msg: "denied", Permission: true}
	if !errors.Is(perm, fs.ErrPermission) || errors.Is(perm, fs.ErrNotExist) || perm.Error() != "denied" {
		t.Errorf("Permission sentinel: %v", perm)
	}
	wrapped := &procerr.Error{Msg: "outer", Err: perm}
	if !errors.Is(wrapped, perm) || !errors.Is(wrapped, fs.ErrPermission) {
		t.Errorf("wrapping sentinel: %v", wrapped)
	}
	var again error = &procerr.ProcessGone
	if again != procerr.ErrProcessGone || !errors.Is(fmt.Errorf("%w: 7", again), procerr.ErrProcessGone) { //nolint:errorlint // identity is the point
		t.Error("the address of ProcessGone is not ErrProcessGone")
	}
	if (&procerr.Error{Msg: "plain"}).Unwrap() != nil {
		t.Error("a plain sentinel wraps something")
	}
}
