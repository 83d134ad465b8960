package procfs

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
)

// TCPSocket is one line of /proc/net/tcp or /proc/net/tcp6.
type TCPSocket struct {
	Local Endpoint
	State uint8  // kernel TCP state: 0x0A is TCP_LISTEN, 0x01 TCP_ESTABLISHED (include/net/tcp_states.h)
	Inode uint64 // socket inode, as in the "socket:[<inode>]" links of /proc/<pid>/fd; 0 for TIME_WAIT
}

// tcpListen is TCP_LISTEN.
const tcpListen = 0x0A

// ParseNetTCP parses the text of /proc/<pid>/net/tcp (v6 false) or tcp6 (v6 true), as written by
// tcp4_seq_show and tcp6_seq_show (net/ipv4/tcp_ipv4.c, net/ipv6/tcp_ipv6.c): a header line, then per
// socket "sl: local remote st tx:rx tr:when retrnsmt uid timeout inode ...". Only the local address,
// state and inode are kept.
//
// Addresses are printed as 32-bit words with %08X, so each group of 8 hex digits holds 4 address bytes
// in the kernel's byte order: the parse decodes them in this machine's byte order, the one the kernel that
// wrote the file used. Ports are plain hex numbers.
func ParseNetTCP(b []byte, v6 bool) ([]TCPSocket, error) {
	var out []TCPSocket
	n := 0
	for line := range bytes.Lines(b) {
		n++
		f := strings.Fields(string(line))
		if len(f) == 0 || f[0] == "sl" {
			continue
		}
		s, err := parseTCPLine(f, v6)
		if err != nil {
			return nil, fmt.Errorf("procfs: parse /proc/net/tcp line %d: %w", n, err)
		}
		out = append(out, s)
	}
	return out, nil
}

func parseTCPLine(f []string, v6 bool) (TCPSocket, error) {
	if len(f) < 10 {
		return TCPSocket{}, fmt.Errorf("%d fields, want at least 10", len(f))
	}
	if !strings.HasSuffix(f[0], ":") {
		return TCPSocket{}, fmt.Errorf("slot %q: no colon", f[0])
	}
	local, err := parseHexAddrPort(f[1], v6)
	if err != nil {
		return TCPSocket{}, err
	}
	st, err := strconv.ParseUint(f[3], 16, 8)
	if err != nil {
		return TCPSocket{}, fmt.Errorf("state %q: %w", f[3], err)
	}
	ino, err := strconv.ParseUint(f[9], 10, 64)
	if err != nil {
		return TCPSocket{}, fmt.Errorf("inode %q: %w", f[9], err)
	}
	return TCPSocket{Local: local, State: uint8(st), Inode: ino}, nil
}

// parseHexAddrPort parses "0100007F:1F90" (127.0.0.1:8080 on a little-endian machine).
func parseHexAddrPort(s string, v6 bool) (Endpoint, error) {
	addr, port, ok := strings.Cut(s, ":")
	if !ok {
		return Endpoint{}, fmt.Errorf("address %q: no port", s)
	}
	size := 4
	if v6 {
		size = 16
	}
	if len(addr) != 2*size {
		return Endpoint{}, fmt.Errorf("address %q: %d hex digits, want %d", s, len(addr), 2*size)
	}
	var buf [16]byte
	for i := 0; i < size; i += 4 {
		w, err := strconv.ParseUint(addr[2*i:2*i+8], 16, 32)
		if err != nil {
			return Endpoint{}, fmt.Errorf("address %q: %w", s, err)
		}
		binary.NativeEndian.PutUint32(buf[i:], uint32(w))
	}
	if len(port) == 0 || len(port) > 4 {
		return Endpoint{}, fmt.Errorf("address %q: bad port", s)
	}
	p, err := strconv.ParseUint(port, 16, 16)
	if err != nil {
		return Endpoint{}, fmt.Errorf("address %q: port: %w", s, err)
	}
	return Endpoint{IP: buf, Is4: !v6, Port: uint16(p)}, nil
}

// ListeningTCP returns the TCP addresses (IPv4 and IPv6) on which process pid has listening sockets,
// sorted: the inodes of the sockets among its file descriptors (/proc/<pid>/fd) matched against the
// LISTEN entries of /proc/<pid>/net/tcp and tcp6, which describe the process's own network namespace.
// IPv4-mapped IPv6 addresses (a dual-stack Java ServerSocket bound to an IPv4 address) are returned as
// IPv4. Errors are [Wrap]ped.
//
// It exists for VM.start_java_debugging: a JVM started with address=127.0.0.1:0 reports port 0, and the
// real port shows only as a new listening socket.
func (fsys FS) ListeningTCP(pid int) ([]Endpoint, error) {
	inodes, err := fsys.socketInodes(pid)
	if err != nil {
		return nil, err
	}
	var out []Endpoint
	for _, file := range []struct {
		name string
		v6   bool
	}{{"tcp", false}, {"tcp6", true}} {
		b, err := readFile(fsys.Path(pid, "net", file.name))
		if file.v6 && errors.Is(err, fs.ErrNotExist) {
			if _, serr := os.Stat(fsys.Path(pid, "net")); serr == nil {
				continue // IPv6 disabled in the kernel
			}
		}
		if err != nil {
			return nil, Wrap(pid, "sockets", err)
		}
		socks, err := ParseNetTCP(b, file.v6)
		if err != nil {
			return nil, err
		}
		for _, s := range socks {
			if s.State == tcpListen && inodes[s.Inode] {
				out = append(out, s.Local.Unmap())
			}
		}
	}
	slices.SortFunc(out, Endpoint.Compare)
	return slices.Compact(out), nil
}

// socketInodes returns the inodes of the sockets among the process's file descriptors.
func (fsys FS) socketInodes(pid int) (map[uint64]bool, error) {
	dir := fsys.Path(pid, "fd")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, Wrap(pid, "file descriptors", err)
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
