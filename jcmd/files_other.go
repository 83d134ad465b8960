//go:build !linux

package jcmd

import (
	"context"
	"fmt"
	"os"

	"github.com/jvmkit/jvmkit/attach"
)

// JVMCwd returns the JVM's working directory as the JVM itself sees it. Only Linux is supported: elsewhere
// it fails with attach.ErrNotSupported.
func JVMCwd(_ context.Context, t *attach.Target) (string, error) {
	return "", fmt.Errorf("jcmd: working directory of process %d: %w", t.PID, attach.ErrNotSupported)
}

// OpenInJVM opens the regular file at path inside the JVM's root. Only Linux is supported: elsewhere it
// fails with attach.ErrNotSupported.
func OpenInJVM(t *attach.Target, path string) (*os.File, error) {
	return nil, fmt.Errorf("jcmd: open %s in process %d: %w", path, t.PID, attach.ErrNotSupported)
}

// CheckCopyDest fails as CopyOut does: only Linux is supported.
func CheckCopyDest(dst, _ string, _ bool) error {
	return fmt.Errorf("jcmd: copy to %s: %w", dst, attach.ErrNotSupported)
}

// CopyOut copies the file at path (as the JVM sees it) to dst. Only Linux is supported: elsewhere it fails
// with attach.ErrNotSupported.
func CopyOut(_ context.Context, _ *attach.Target, path, _ string, _ bool) (string, int64, error) {
	return "", 0, fmt.Errorf("jcmd: copy %s: %w", path, attach.ErrNotSupported)
}
