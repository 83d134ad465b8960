package rootfs_test

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"github.com/jvmkit/jvmkit/internal/rootfs"
)

// TestSentinels: the sentinels built without fmt (for gjcmd's start-up) read and wrap as the
// fmt.Errorf they replace.
func TestSentinels(t *testing.T) {
	for _, c := range []struct {
		err, want, wraps error
	}{
		{rootfs.ErrUnsafe, fmt.Errorf("%w: another user could redirect the write", fs.ErrPermission), fs.ErrPermission},
		{rootfs.ErrSymlink, fmt.Errorf("refusing to use a symbolic link (%w)", rootfs.ErrNotRegular), rootfs.ErrNotRegular},
		{rootfs.ErrCannotCreate, errors.New("permission denied: that user cannot create files there"), rootfs.ErrUnsafe},
	} {
		if c.err.Error() != c.want.Error() || !errors.Is(c.err, c.wraps) || !errors.Is(errors.Unwrap(c.err), c.wraps) {
			t.Errorf("%q (wraps %v), want %q wrapping %v", c.err, errors.Unwrap(c.err), c.want, c.wraps)
		}
	}
}
