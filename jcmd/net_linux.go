package jcmd

import (
	"errors"
	"io/fs"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/jvmkit/jvmkit/internal/procfs"
)

// tcpListen is TCP_LISTEN.
const tcpListen = 0x0A

// ListeningTCP returns the TCP addresses (IPv4 and IPv6) on which process pid has listening sockets,
// sorted: the inodes of the sockets among its file descriptors (/proc/<pid>/fd) matched against the
// LISTEN entries of /proc/<pid>/net/tcp and tcp6, which describe the process's own network namespace.
// IPv4-mapped IPv6 addresses (a dual-stack Java ServerSocket bound to an IPv4 address) are returned as
// IPv4.
//
// It exists for VM.start_java_debugging: a JVM started with address=127.0.0.1:0 reports port 0, and the
// real port shows only as a new listening socket.
func ListeningTCP(pid int) ([]netip.AddrPort, error) {
	inodes, err := socketInodes(pid)
	if err != nil {
		return nil, err
	}
	var out []netip.AddrPort
	for _, file := range []struct {
		name string
		v6   bool
	}{{"tcp", false}, {"tcp6", true}} {
		b, err := os.ReadFile(procfs.Default.Path(pid, "net", file.name))
		if file.v6 && errors.Is(err, fs.ErrNotExist) {
			if _, serr := os.Stat(procfs.Default.Path(pid, "net")); serr == nil {
				continue // IPv6 disabled in the kernel
			}
		}
		if err != nil {
			return nil, targetErr(pid, "sockets", err)
		}
		socks, err := ParseProcNetTCP(b, file.v6)
		if err != nil {
			return nil, err
		}
		for _, s := range socks {
			if s.State == tcpListen && inodes[s.Inode] {
				out = append(out, netip.AddrPortFrom(s.Local.Addr().Unmap(), s.Local.Port()))
			}
		}
	}
	slices.SortFunc(out, func(a, b netip.AddrPort) int { return a.Compare(b) })
	return slices.Compact(out), nil
}

// socketInodes returns the inodes of the sockets among the process's file descriptors.
func socketInodes(pid int) (map[uint64]bool, error) {
	dir := procfs.Default.Path(pid, "fd")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, targetErr(pid, "file descriptors", err)
	}
	inodes := make(map[uint64]bool)
	for _, e := range entries {
		link, err := os.Readlink(dir + "/" + e.Name())
		if err != nil {
			continue // closed since ReadDir
		}
		if rest, ok := strings.CutPrefix(link, "socket:["); ok {
			if ino, err := strconv.ParseUint(strings.TrimSuffix(rest, "]"), 10, 64); err == nil {
				inodes[ino] = true
			}
		}
	}
	return inodes, nil
}
