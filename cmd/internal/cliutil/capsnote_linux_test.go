package cliutil_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jvmkit/jvmkit/attach"
	"github.com/jvmkit/jvmkit/cmd/internal/cliutil"
	"github.com/jvmkit/jvmkit/internal/rootfs"
	"golang.org/x/sys/unix"
)

// TestCapsNoteOnlyForTheKernel: jvmkit's own refusals (a planted file, a foreign socket) and refusals
// that already name a capability get no note, whatever this process holds; the positive case needs a
// root without capabilities, which cmd/release's TestCapabilityTable runs.
func TestCapsNoteOnlyForTheKernel(t *testing.T) {
	for _, err := range []error{
		nil,
		errors.New("plain"),
		fmt.Errorf("%w: socket owned by uid 7", attach.ErrPermission),
		fmt.Errorf("%w: a link in /tmp", rootfs.ErrUnsafe),
		fmt.Errorf("open x: %w (this process runs as root without CAP_CHOWN)", unix.EPERM),
	} {
		if n := cliutil.CapsNote(err); n != "" {
			t.Errorf("CapsNote(%v) = %q, want none", err, n)
		}
	}
}
