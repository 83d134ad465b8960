package procfs

import (
	"net/netip"
	"slices"
	"testing"
)

// fromNetip is the Endpoint of a netip.AddrPort (no zone).
func fromNetip(a netip.AddrPort) Endpoint {
	e := Endpoint{Port: a.Port()}
	if a.Addr().Is4() {
		e.Is4 = true
		v4 := a.Addr().As4()
		copy(e.IP[:], v4[:])
	} else {
		e.IP = a.Addr().As16()
	}
	return e
}

func checkEndpoint(t *testing.T, a netip.AddrPort) {
	t.Helper()
	e := fromNetip(a)
	if got, want := e.String(), a.String(); got != want {
		t.Errorf("Endpoint(%v).String() = %q, want %q", a, got, want)
	}
	if got, want := e.Unmap(), fromNetip(netip.AddrPortFrom(a.Addr().Unmap(), a.Port())); got != want {
		t.Errorf("Endpoint(%v).Unmap() = %v, want %v", a, got, want)
	}
}

// TestEndpointLikeNetip holds String, Unmap and Compare to what net/netip does.
func TestEndpointLikeNetip(t *testing.T) {
	var all []netip.AddrPort
	for _, s := range []string{
		"0.0.0.0:0", "127.0.0.1:5005", "255.255.255.255:65535", "[::]:8080", "[::1]:1", "[::ffff:127.0.0.1]:50241",
		"[fe80::1:2:3:4]:443", "[2001:db8::1]:80", "[2001:db8:0:0:1:0:0:1]:2", "[2001:0:0:1:0:0:0:1]:3",
		"[1:0:0:2:0:0:3:4]:4", "[1::]:5", "[1:2:3:4:5:6:7:8]:6", "[0:1:2:3:4:5:6:0]:7", "[::1:0:0:0]:8", "[::ffff:0:1]:9",
		"[64:ff9b::1.2.3.4]:10", "[abcd:ef01:2345:6789:abcd:ef01:2345:6789]:11",
	} {
		a := netip.MustParseAddrPort(s)
		checkEndpoint(t, a)
		all = append(all, a)
	}
	want := slices.SortedFunc(slices.Values(all), netip.AddrPort.Compare)
	var eps []Endpoint
	for _, a := range all {
		eps = append(eps, fromNetip(a))
	}
	slices.SortFunc(eps, Endpoint.Compare)
	for i := range want {
		if eps[i] != fromNetip(want[i]) {
			t.Fatalf("sorted endpoints %v, want the order of %v", eps, want)
		}
	}
}

func FuzzEndpoint(f *testing.F) {
	f.Add([]byte{127, 0, 0, 1}, uint16(5005))
	f.Add(make([]byte, 16), uint16(0))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1}, uint16(1))
	f.Add([]byte{0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1}, uint16(2))
	f.Fuzz(func(t *testing.T, b []byte, port uint16) {
		var a netip.Addr
		switch len(b) {
		case 4:
			a = netip.AddrFrom4([4]byte(b))
		case 16:
			a = netip.AddrFrom16([16]byte(b))
		default:
			return
		}
		checkEndpoint(t, netip.AddrPortFrom(a, port))
	})
}
