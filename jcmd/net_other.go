//go:build !linux

package jcmd

import (
	"fmt"

	"github.com/jvmkit/jvmkit/attach"
)

// listeningTCP fails with attach.ErrNotSupported: only Linux is supported (it reads /proc).
func listeningTCP(pid int) ([]Endpoint, error) {
	return nil, fmt.Errorf("jcmd: sockets of process %d: %w", pid, attach.ErrNotSupported)
}
