package procfs

import (
	"strings"
	"testing"
)

func TestParseFreezerPaths(t *testing.T) {
	for _, tc := range []struct{ in, unified, freezer string }{
		{"0::/machine.slice/libpod-0123.scope/container\n", "/machine.slice/libpod-0123.scope/container", ""},
		{"12:freezer:/docker/abc\n11:cpu,cpuacct:/docker/abc\n0::/\n", "/", "/docker/abc"},
		{"5:cpuset,freezer:/lxc/x\n", "", "/lxc/x"},
		{"0::/../../init.scope\n", "", ""},
		{"0::relative\n", "", ""},
		{"garbage", "", ""},
		{"", "", ""},
	} {
		u, f := ParseFreezerPaths([]byte(tc.in))
		if u != tc.unified || f != tc.freezer {
			t.Errorf("%q: %q %q, want %q %q", tc.in, u, f, tc.unified, tc.freezer)
		}
	}
}

func TestParseFrozen(t *testing.T) {
	for in, want := range map[string]bool{
		"populated 1\nfrozen 1\n": true,
		"populated 1\nfrozen 0\n": false,
		"populated 1\n":           false,
		"frozen 1":                true,
		"":                        false,
		"frozen  1\n":             true,
	} {
		if got := ParseFrozen([]byte(in)); got != want {
			t.Errorf("%q: %v, want %v", in, got, want)
		}
	}
}

func FuzzParseFreezerPaths(f *testing.F) {
	f.Add([]byte("12:freezer:/docker/abc\n0::/machine.slice/x.scope\n"))
	f.Add([]byte("0::/../x\n"))
	f.Add([]byte("populated 1\nfrozen 1\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		u, fr := ParseFreezerPaths(b)
		for _, p := range []string{u, fr} {
			if p != "" && (!strings.HasPrefix(p, "/") || strings.Contains(p, "/..")) {
				t.Fatalf("path %q escapes the cgroup root", p)
			}
		}
		_ = ParseFrozen(b)
	})
}
