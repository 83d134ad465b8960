//go:build !linux

package jcmd

import (
	"context"
	"fmt"

	"github.com/jvmkit/jvmkit/attach"
)

// List returns the JVMs visible to the caller. Only Linux is supported (it reads /proc): elsewhere it
// fails with attach.ErrNotSupported.
func List(context.Context) ([]JVM, error) {
	return nil, fmt.Errorf("jcmd: list processes: %w", attach.ErrNotSupported)
}

// Inspect describes one process. Only Linux is supported: elsewhere it fails with
// attach.ErrNotSupported.
func Inspect(_ context.Context, pid int) (JVM, error) {
	return JVM{}, fmt.Errorf("jcmd: inspect process %d: %w", pid, attach.ErrNotSupported)
}
