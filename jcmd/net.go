package jcmd

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// TCPSocket is one line of /proc/net/tcp or /proc/net/tcp6.
type TCPSocket struct {
	Local netip.AddrPort
	State uint8  // kernel TCP state: 0x0A is TCP_LISTEN, 0x01 TCP_ESTABLISHED (include/net/tcp_states.h)
	Inode uint64 // socket inode, as in the "socket:[<inode>]" links of /proc/<pid>/fd; 0 for TIME_WAIT
}

// ParseProcNetTCP parses the text of /proc/<pid>/net/tcp (v6 false) or tcp6 (v6 true), as written by
// tcp4_seq_show and tcp6_seq_show (net/ipv4/tcp_ipv4.c, net/ipv6/tcp_ipv6.c): a header line, then per
// socket "sl: local remote st tx:rx tr:when retrnsmt uid timeout inode ...". Only the local address,
// state and inode are kept.
//
// Addresses are printed as 32-bit words with %08X, so each group of 8 hex digits holds 4 address bytes
// in the kernel's byte order: the parse decodes them in this machine's byte order, the one the kernel that
// wrote the file used. Ports are plain hex numbers.
func ParseProcNetTCP(b []byte, v6 bool) ([]TCPSocket, error) {
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
			return nil, fmt.Errorf("jcmd: parse /proc/net/tcp line %d: %w", n, err)
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
func parseHexAddrPort(s string, v6 bool) (netip.AddrPort, error) {
	addr, port, ok := strings.Cut(s, ":")
	if !ok {
		return netip.AddrPort{}, fmt.Errorf("address %q: no port", s)
	}
	size := 4
	if v6 {
		size = 16
	}
	if len(addr) != 2*size {
		return netip.AddrPort{}, fmt.Errorf("address %q: %d hex digits, want %d", s, len(addr), 2*size)
	}
	var buf [16]byte
	for i := 0; i < size; i += 4 {
		w, err := strconv.ParseUint(addr[2*i:2*i+8], 16, 32)
		if err != nil {
			return netip.AddrPort{}, fmt.Errorf("address %q: %w", s, err)
		}
		binary.NativeEndian.PutUint32(buf[i:], uint32(w))
	}
	if len(port) == 0 || len(port) > 4 {
		return netip.AddrPort{}, fmt.Errorf("address %q: bad port", s)
	}
	p, err := strconv.ParseUint(port, 16, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("address %q: port: %w", s, err)
	}
	var a netip.Addr
	if v6 {
		a = netip.AddrFrom16(buf)
	} else {
		a = netip.AddrFrom4([4]byte(buf[:4]))
	}
	return netip.AddrPortFrom(a, uint16(p)), nil
}
