//go:build !linux

package jcmd

import (
	"context"
	"fmt"

	"github.com/jvmkit/jvmkit/attach"
)

// PrepareWrites makes the files a command line writes safe. Only Linux is supported.
func (c *Client) PrepareWrites(context.Context, string) (*Writes, error) {
	return nil, fmt.Errorf("jcmd: prepare writes: %w", attach.ErrNotSupported)
}

// PrepareOperation makes the files a raw attach operation writes safe. Only Linux is supported.
func (c *Client) PrepareOperation(context.Context, string, []string) (*Writes, error) {
	return nil, fmt.Errorf("jcmd: prepare writes: %w", attach.ErrNotSupported)
}

// LockMap takes the lock of a JVM's perf map. Only Linux is supported.
func LockMap(_ context.Context, t *attach.Target) (*MapLock, error) {
	return nil, fmt.Errorf("jcmd: lock the map of %d: %w", t.PID, attach.ErrNotSupported)
}

// PerfMapData has the JVM write its perf map. Only Linux is supported.
func (c *Client) PerfMapData(context.Context) ([]byte, *File, error) {
	return nil, nil, fmt.Errorf("jcmd: Compiler.perfmap: %w", attach.ErrNotSupported)
}

// CheckCopyNames checks where a command's files would be copied. Only Linux is supported.
func (c *Client) CheckCopyNames(_ context.Context, _, dst string, _ bool) error {
	return fmt.Errorf("jcmd: copy to %s: %w", dst, attach.ErrNotSupported)
}
