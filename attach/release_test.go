package attach_test

import (
	"testing"

	"github.com/jvmkit/jvmkit/attach"
)

var releaseSeeds = []struct {
	text string
	want int
}{
	{"IMPLEMENTOR=\"Debian\"\nJAVA_RUNTIME_VERSION=\"17.0.15+6-Debian-1deb12u1\"\nJAVA_VERSION=\"17.0.15\"\n", 17},
	{"JAVA_VERSION=\"25\"\n", 25},
	{"JAVA_VERSION=\"1.8.0_392\"\nOS_NAME=\"Linux\"\n", 8},
	{"  JAVA_VERSION=\"21.0.5\"\r\n", 21},
	{"JAVA_VERSION_DATE=\"2025-01-21\"\n", 0},
	{"JAVA_VERSION=\"\"\n", 0},
	{"JAVA_VERSION=\"x17\"\n", 0},
	{"JAVA_VERSION=\"123456789\"\n", 0},
	{"JAVA_VERSION=\"1.\"\n", 0},
	{"", 0},
}

func TestReleaseFeature(t *testing.T) {
	for _, s := range releaseSeeds {
		if got := attach.ReleaseFeature([]byte(s.text)); got != s.want {
			t.Errorf("ReleaseFeature(%q) = %d, want %d", s.text, got, s.want)
		}
	}
}

func FuzzReleaseFeature(f *testing.F) {
	for _, s := range releaseSeeds {
		f.Add([]byte(s.text))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if n := attach.ReleaseFeature(b); n != 0 && (n < 6 || n > 9999) {
			t.Fatalf("ReleaseFeature(%q) = %d", b, n)
		}
	})
}
