package procfs

import (
	"bytes"
	"cmp"
	"strconv"
)

// Endpoint is a TCP socket's local address as /proc/net/tcp and tcp6 give it: an IPv4 or IPv6 address
// (no zone) and a port. It is not a net/netip.AddrPort because procfs is part of gjcmd, and netip's
// package init (two unique.Make calls) is part of every gjcmd start; String formats as netip does
// (TestEndpointLikeNetip).
type Endpoint struct {
	IP   [16]byte // an IPv4 address in IP[:4] when Is4
	Is4  bool
	Port uint16
}

// v4InV6Prefix is the prefix of an IPv4-mapped IPv6 address (::ffff:a.b.c.d).
var v4InV6Prefix = [12]byte{10: 0xff, 11: 0xff}

// Unmap returns an IPv4-mapped IPv6 endpoint as the IPv4 one; any other unchanged.
func (e Endpoint) Unmap() Endpoint {
	if e.Is4 || [12]byte(e.IP[:12]) != v4InV6Prefix {
		return e
	}
	u := Endpoint{Is4: true, Port: e.Port}
	copy(u.IP[:4], e.IP[12:])
	return u
}

// Compare orders endpoints as netip.AddrPort.Compare does: IPv4 before IPv6, then by address, then by
// port.
func (e Endpoint) Compare(o Endpoint) int {
	if e.Is4 != o.Is4 {
		if e.Is4 {
			return -1
		}
		return 1
	}
	if c := bytes.Compare(e.IP[:], o.IP[:]); c != 0 {
		return c
	}
	return cmp.Compare(e.Port, o.Port)
}

// String formats the endpoint as "1.2.3.4:80" or "[2001:db8::1]:80" (RFC 5952: the longest run of two
// or more zero groups, the first of equals, written as "::"; IPv4-mapped addresses as ::ffff:1.2.3.4).
func (e Endpoint) String() string {
	var b []byte
	if e.Is4 {
		b = appendV4(b, e.IP[:4])
	} else {
		b = append(b, '[')
		b = appendV6(b, e.IP)
		b = append(b, ']')
	}
	b = append(b, ':')
	return string(strconv.AppendUint(b, uint64(e.Port), 10))
}

func appendV4(b []byte, ip []byte) []byte {
	for i, x := range ip {
		if i > 0 {
			b = append(b, '.')
		}
		b = strconv.AppendUint(b, uint64(x), 10)
	}
	return b
}

func appendV6(b []byte, ip [16]byte) []byte {
	if [12]byte(ip[:12]) == v4InV6Prefix {
		b = append(b, "::ffff:"...)
		return appendV4(b, ip[12:])
	}
	group := func(i int) uint16 { return uint16(ip[2*i])<<8 | uint16(ip[2*i+1]) }
	zs, ze := -1, -1 // the longest run of zero groups, two at least
	for i := 0; i < 8; i++ {
		j := i
		for j < 8 && group(j) == 0 {
			j++
		}
		if j-i >= 2 && j-i > ze-zs {
			zs, ze = i, j
		}
		i = j
	}
	for i := 0; i < 8; i++ {
		if i == zs {
			b = append(b, "::"...)
			i = ze
			if i >= 8 {
				break
			}
		} else if i > 0 {
			b = append(b, ':')
		}
		b = strconv.AppendUint(b, uint64(group(i)), 16)
	}
	return b
}
