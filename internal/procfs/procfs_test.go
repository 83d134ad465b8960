package procfs

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseStatus(t *testing.T) {
	b, err := os.ReadFile("testdata/status-jvm.txt")
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseStatus(b)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "java" || s.State != 'S' || s.TGID != 2304 || s.NSPID() != 2304 || s.EUID() != 0 {
		t.Errorf("unexpected %+v", s)
	}
	if !s.Catches(3) || s.Ignores(3) || !s.Ignores(2) || s.Stopped() || s.Dead() {
		t.Errorf("signal masks: cgt %x ign %x", s.SigCgt, s.SigIgn)
	}

	ns := "Name:\tjava\nState:\tT (stopped)\nTgid:\t4242\nNSpid:\t4242\t1\nUid:\t65534\t65534\t65534\t65534\nGid:\t100\t101\t100\t100\nSigIgn:\t0\nSigCgt:\t4\n"
	s, err = ParseStatus([]byte(ns))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{4242, 1}, s.NSpid); diff != "" {
		t.Error(diff)
	}
	if s.NSPID() != 1 || s.EUID() != 65534 || s.EGID() != 101 || !s.Stopped() || s.StateName() != "stopped" {
		t.Errorf("unexpected %+v", s)
	}
	// Old kernels have no NSpid: the host pid stands in.
	s, err = ParseStatus([]byte("Tgid:\t7\n"))
	if err != nil || s.NSPID() != 7 {
		t.Errorf("no NSpid: %v %v", s.NSpid, err)
	}
	for _, bad := range []string{"", "Name: x\n", "Tgid:\tx\n", "Tgid:\t1\nUid:\ta\n", "Tgid:\t1\nSigCgt:\tzz\n", "Tgid:\t1\nUid:\t1 2 3 4 5\n"} {
		if _, err := ParseStatus([]byte(bad)); err == nil {
			t.Errorf("ParseStatus(%q): no error", bad)
		}
	}
}

func TestMapsContain(t *testing.T) {
	f, err := os.Open("testdata/maps-head.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := MapsContain(f, "/libjvm.so", "/libj9vm29.so")
	if err != nil {
		t.Fatal(err)
	}
	if !got[0] || got[1] {
		t.Errorf("got %v", got)
	}
	long := strings.Repeat("a", 100000)
	in := "7f00-7f01 r-xp 0 0:0 0 /" + long + "\n7f01-7f02 r-xp 0 0:0 0 /opt/x/libjvm.so (deleted)\n"
	got, err = MapsContain(strings.NewReader(in), "/libjvm.so")
	if err != nil || !got[0] {
		t.Errorf("long line then match: %v %v", got, err)
	}
}

func TestLive(t *testing.T) {
	s, err := Default.Status(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if s.TGID != os.Getpid() || s.EUID() != os.Geteuid() {
		t.Errorf("self status %+v", s)
	}
	pids, err := Default.Pids()
	if err != nil || len(pids) == 0 {
		t.Fatalf("Pids: %v %v", pids, err)
	}
	args, err := Default.Cmdline(os.Getpid())
	if err != nil || len(args) == 0 {
		t.Errorf("Cmdline: %v %v", args, err)
	}
	if _, err := Default.StartTime(os.Getpid()); err != nil {
		t.Error(err)
	}
}

func FuzzParseStatus(f *testing.F) {
	b, _ := os.ReadFile("testdata/status-jvm.txt")
	f.Add(b)
	f.Add([]byte("Tgid:\t1\nNSpid:\t1 2 3\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseStatus(b)
		if err == nil {
			_ = s.NSPID()
			_ = s.StateName()
		}
	})
}

func FuzzMapsContain(f *testing.F) {
	b, _ := os.ReadFile("testdata/maps-head.txt")
	f.Add(b, "/libjvm.so")
	f.Fuzz(func(t *testing.T, b []byte, needle string) {
		if _, err := MapsContain(strings.NewReader(string(b)), needle); err != nil {
			t.Fatal(err)
		}
	})
}

func TestParseStat(t *testing.T) {
	st := "4242 (a b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 100 18446744073709551615\n"
	v, err := ParseStatStartTime([]byte(st))
	if err != nil || v != 987654 {
		t.Errorf("ParseStatStartTime = %d, %v", v, err)
	}
	for _, bad := range []string{"", "1 (x) S 1", "1 (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 zz"} {
		if _, err := ParseStatStartTime([]byte(bad)); err == nil {
			t.Errorf("ParseStatStartTime(%q): no error", bad)
		}
	}
	if diff := cmp.Diff([]string{"java", "-cp", "", "Main"}, ParseCmdline([]byte("java\x00-cp\x00\x00Main\x00"))); diff != "" {
		t.Error(diff)
	}
	if ParseCmdline(nil) != nil {
		t.Error("empty cmdline")
	}
}

func FuzzParseStat(f *testing.F) {
	f.Add([]byte("1 (init) S 0 1 1 0 -1 4194560 1 2 3 4 5 6 7 8 20 0 1 0 55 100 10\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = ParseStatStartTime(b)
		_ = ParseCmdline(b)
	})
}
