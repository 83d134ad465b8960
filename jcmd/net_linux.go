package jcmd

import (
	"fmt"
	"net/netip"

	"github.com/jvmkit/jvmkit/internal/procfs"
)

// listeningTCP returns the TCP addresses on which process pid listens (procfs.FS.ListeningTCP).
func listeningTCP(pid int) ([]netip.AddrPort, error) {
	a, err := procfs.Default.ListeningTCP(pid)
	if err != nil {
		return nil, fmt.Errorf("jcmd: %w", err)
	}
	return a, nil
}
