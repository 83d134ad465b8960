package procfs

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"slices"
	"testing"

	"github.com/jvmkit/jvmkit/internal/procerr"
)

func TestListeningTCPSelf(t *testing.T) {
	l4, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l4.Close()
	want := []Endpoint{fromNetip(l4.Addr().(*net.TCPAddr).AddrPort())}
	// ":0" is a dual-stack IPv6 socket on Linux, in tcp6 as [::].
	if l6, err := net.Listen("tcp", ":0"); err == nil {
		defer l6.Close()
		if a := l6.Addr().(*net.TCPAddr).AddrPort(); a.Addr().Is6() {
			want = append(want, fromNetip(netip.AddrPortFrom(netip.IPv6Unspecified(), a.Port())))
		}
	}
	// A connected socket is not listening.
	c, err := net.Dial("tcp4", l4.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	got, err := Default.ListeningTCP(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("ListeningTCP(self) = %v, misses %v", got, w)
		}
	}
	if slices.Contains(got, fromNetip(c.LocalAddr().(*net.TCPAddr).AddrPort())) {
		t.Errorf("ListeningTCP(self) = %v includes the connected socket", got)
	}

	if _, err := Default.ListeningTCP(1 << 30); !errors.Is(err, procerr.ErrProcessGone) {
		t.Errorf("ListeningTCP(no such pid): %v", err)
	}
}
