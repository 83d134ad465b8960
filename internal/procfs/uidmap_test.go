package procfs_test

import (
	"testing"

	"github.com/jvmkit/jvmkit/internal/procfs"
)

func TestParseUIDMapRoot(t *testing.T) {
	cases := []struct {
		in   string
		uid  int
		okay bool
	}{
		{"         0          0 4294967295\n", 0, true},
		{"         0     100000      65536\n", 100000, true},
		{"      1000       1000          1\n         0     100000       1000\n", 100000, true},
		{"      1000       1000          1\n", 0, false},
		{"0 5 0\n", 0, false},
		{"garbage\n0 x 1\n", 0, false},
		{"", 0, false},
	}
	for _, c := range cases {
		uid, ok := procfs.ParseUIDMapRoot([]byte(c.in))
		if uid != c.uid || ok != c.okay {
			t.Errorf("ParseUIDMapRoot(%q) = %d, %v; want %d, %v", c.in, uid, ok, c.uid, c.okay)
		}
	}
}

func FuzzParseUIDMapRoot(f *testing.F) {
	f.Add([]byte("0 100000 65536\n"))
	f.Add([]byte("         0          0 4294967295\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if uid, ok := procfs.ParseUIDMapRoot(b); ok && uid < 0 {
			t.Errorf("negative uid %d", uid)
		}
	})
}
