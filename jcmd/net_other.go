//go:build !linux

package jcmd

import (
	"fmt"
	"net/netip"

	"github.com/jvmkit/jvmkit/attach"
)

// ListeningTCP returns the TCP addresses on which process pid has listening sockets. Only Linux is
// supported (it reads /proc): elsewhere it fails with attach.ErrNotSupported.
func ListeningTCP(pid int) ([]netip.AddrPort, error) {
	return nil, fmt.Errorf("jcmd: sockets of process %d: %w", pid, attach.ErrNotSupported)
}
