package procfs

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// procHex writes an address the way the kernel prints it in /proc/net/tcp: 32-bit words, %08X, in the
// machine's byte order.
func procHex(a netip.Addr) string {
	b := a.AsSlice()
	var s strings.Builder
	for i := 0; i < len(b); i += 4 {
		fmt.Fprintf(&s, "%08X", binary.NativeEndian.Uint32(b[i:]))
	}
	return s.String()
}

func tcpLine(slot int, local netip.AddrPort, state uint8, inode uint64) string {
	remote := netip.AddrPortFrom(netip.IPv4Unspecified(), 0)
	if local.Addr().Is6() {
		remote = netip.AddrPortFrom(netip.IPv6Unspecified(), 0)
	}
	return fmt.Sprintf("%4d: %s:%04X %s:%04X %02X 00000000:00000000 00:00000000 00000000     0        0 %d 1 0000000048958528 100 0 0 10 0\n",
		slot, procHex(local.Addr()), local.Port(), procHex(remote.Addr()), remote.Port(), state, inode)
}

const (
	tcpHeader  = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
	tcp6Header = "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
)

func TestParseNetTCP(t *testing.T) {
	ap := netip.MustParseAddrPort
	ep := func(s string) Endpoint { return fromNetip(ap(s)) }
	v4 := tcpHeader +
		tcpLine(0, ap("0.0.0.0:2024"), 0x0A, 1065) +
		tcpLine(1, ap("127.0.0.1:38411"), 0x0A, 243659) +
		tcpLine(2, ap("10.1.2.3:22"), 0x01, 99) +
		// TIME_WAIT lines have fewer trailing fields and inode 0.
		"   3: 0100007F:1F90 0100007F:C350 06 00000000:00000000 03:00001770 00000000     0        0 0 3 0000000000000000\n"
	got, err := ParseNetTCP([]byte(v4), false)
	if err != nil {
		t.Fatal(err)
	}
	want := []TCPSocket{
		{Local: ep("0.0.0.0:2024"), State: 0x0A, Inode: 1065},
		{Local: ep("127.0.0.1:38411"), State: 0x0A, Inode: 243659},
		{Local: ep("10.1.2.3:22"), State: 0x01, Inode: 99},
		{Local: ep("127.0.0.1:8080"), State: 0x06, Inode: 0},
	}
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		want[3].Local = fromNetip(netip.AddrPortFrom(netip.AddrFrom4([4]byte{0x01, 0x00, 0x00, 0x7F}), 8080)) // the literal line was written by a little-endian kernel
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tcp (-want +got):\n%s", diff)
	}

	v6 := tcp6Header +
		tcpLine(0, ap("[::]:8080"), 0x0A, 7) +
		tcpLine(1, ap("[::ffff:127.0.0.1]:50241"), 0x0A, 250536) +
		tcpLine(2, ap("[fe80::1:2:3:4]:443"), 0x01, 8)
	got, err = ParseNetTCP([]byte(v6), true)
	if err != nil {
		t.Fatal(err)
	}
	want = []TCPSocket{
		{Local: ep("[::]:8080"), State: 0x0A, Inode: 7},
		{Local: ep("[::ffff:127.0.0.1]:50241"), State: 0x0A, Inode: 250536},
		{Local: ep("[fe80::1:2:3:4]:443"), State: 0x01, Inode: 8},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tcp6 (-want +got):\n%s", diff)
	}
	if s, err := ParseNetTCP([]byte(tcpHeader), false); err != nil || len(s) != 0 {
		t.Errorf("header only: %v, %v", s, err)
	}

	for _, bad := range []struct {
		text string
		v6   bool
	}{
		{v6, false},
		{v4, true},
		{"   0: 0100007F:1F90 00000000:0000 0A\n", false},
		{"   0 0100007F:1F90 00000000:0000 0A 0:0 0:0 0 0 0 1\n", false},
		{"   0: 0100007F1F90 00000000:0000 0A 0:0 0:0 0 0 0 1\n", false},
		{"   0: 0100007G:1F90 00000000:0000 0A 0:0 0:0 0 0 0 1\n", false},
		{"   0: 0100007F:1F900 00000000:0000 0A 0:0 0:0 0 0 0 1\n", false},
		{"   0: 0100007F: 00000000:0000 0A 0:0 0:0 0 0 0 1\n", false},
		{"   0: 0100007F:1F90 00000000:0000 100 0:0 0:0 0 0 0 1\n", false},
		{"   0: 0100007F:1F90 00000000:0000 0A 0:0 0:0 0 0 0 -1\n", false},
		{"   0: +100007F:1F90 00000000:0000 0A 0:0 0:0 0 0 0 1\n", false},
	} {
		if s, err := ParseNetTCP([]byte(bad.text), bad.v6); err == nil {
			t.Errorf("ParseNetTCP(%q, v6=%v) = %v, want an error", bad.text, bad.v6, s)
		}
	}
}

func FuzzParseNetTCP(f *testing.F) {
	ap := netip.MustParseAddrPort
	f.Add([]byte(tcpHeader+tcpLine(0, ap("127.0.0.1:38411"), 0x0A, 243659)), false)
	f.Add([]byte(tcp6Header+tcpLine(0, ap("[::ffff:127.0.0.1]:50241"), 0x0A, 250536)), true)
	f.Add([]byte("   3: 0100007F:1F90 0100007F:C350 06 00000000:00000000 03:00001770 00000000     0        0 0 3 0000000000000000\n"), false)
	f.Add([]byte("   0: 0100007F:1F90 00000000:0000 0A 0:0 0:0 0 0 0 1\r\n\n\n"), false)
	f.Add([]byte("sl\n0: :"), true)
	f.Fuzz(func(t *testing.T, b []byte, v6 bool) {
		socks, err := ParseNetTCP(b, v6)
		if err != nil {
			return
		}
		for _, s := range socks {
			if s.Local.Is4 == v6 {
				t.Errorf("socket %+v from a v6=%v file", s, v6)
			}
		}
	})
}
