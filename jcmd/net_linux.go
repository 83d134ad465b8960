package jcmd

import (
	"fmt"

	"github.com/jvmkit/jvmkit/internal/procfs"
)

// listeningTCP returns the TCP addresses on which process pid listens (procfs.FS.ListeningTCP).
func listeningTCP(pid int) ([]Endpoint, error) {
	a, err := procfs.Default.ListeningTCP(pid)
	if err != nil {
		return nil, fmt.Errorf("jcmd: %w", err)
	}
	return a, nil
}
