package procfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func parseStatusFile(t *testing.T, name string) Status {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseStatus(b)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestParseStatus(t *testing.T) {
	s := parseStatusFile(t, "status-jvm.txt")
	if s.Name != "java" || s.State != 'S' || s.TGID != 2304 || s.NSPID() != 2304 || s.EUID() != 0 || s.RSS != 75504<<10 {
		t.Errorf("unexpected %+v", s)
	}
	if !s.Catches(3) || s.Ignores(3) || !s.Ignores(2) || s.Stopped() || s.Dead() {
		t.Errorf("signal masks: cgt %x ign %x", s.SigCgt, s.SigIgn)
	}
	if !s.HasCapEff || s.CapEff != 0x1fffeffffff || s.CapEff&(1<<CapSysPtrace) == 0 {
		t.Errorf("CapEff %x (seen %v), want root's 1fffeffffff with CAP_SYS_PTRACE", s.CapEff, s.HasCapEff)
	}
	if !s.HasUmask || s.Umask != 0o022 {
		t.Errorf("Umask %o (seen %v), want 022", s.Umask, s.HasUmask)
	}

	ns := "Name:\tjava\nState:\tT (stopped)\nTgid:\t4242\nNSpid:\t4242\t1\nUid:\t65534\t65534\t65534\t65534\nGid:\t100\t101\t100\t100\nSigIgn:\t0\nSigCgt:\t4\n"
	s, err := ParseStatus([]byte(ns))
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
	for _, bad := range []string{"", "Name: x\n", "Tgid:\tx\n", "Tgid:\t1\nUid:\ta\n", "Tgid:\t1\nSigCgt:\tzz\n",
		"Tgid:\t1\nUid:\t1 2 3 4 5\n", "Tgid:\t1\nVmRSS:\tx kB\n", "Tgid:\t1\nUid:\t1 2 3\n", "Tgid:\t1\nGid:\t\n", "Tgid:\t1\nSigIgn:\tzz\n",
		"Tgid:\t1\nSigBlk:\t-1\n", "Tgid:\t1\nNSpid:\tx\n", "Tgid:\t1\nState:\n", "Tgid:\t1\nGroups:\t1 x\n",
		"Tgid:\t1\nUmask:\t0088\n", "Tgid:\t1\nUmask:\t10000\n"} {
		if _, err := ParseStatus([]byte(bad)); err == nil {
			t.Errorf("ParseStatus(%q): no error", bad)
		}
	}
}

// A process in its own pid namespace, running as nobody with no supplementary groups, started by a
// non-interactive shell (SIGINT and SIGQUIT ignored).
func TestParseStatusNamespaced(t *testing.T) {
	s := parseStatusFile(t, "status-namespaced-nobody.txt")
	want := Status{
		Name:   "sleep",
		State:  'S',
		TGID:   19925,
		PPID:   19923,
		NSpid:  []int{19925, 1},
		UID:    [4]int{65534, 65534, 65534, 65534},
		GID:    [4]int{65534, 65534, 65534, 65534},
		Groups: []int{},
		SigIgn: 1<<(2-1) | 1<<(3-1), // SIGINT, SIGQUIT
		RSS:    1668 << 10,
		// nobody: no capabilities
		HasCapEff: true,
		Umask:     0o022,
		HasUmask:  true,
	}
	if diff := cmp.Diff(want, s, cmpopts.IgnoreUnexported(Status{})); diff != "" {
		t.Errorf("ParseStatus mismatch (-want +got):\n%s", diff)
	}
	if !s.Ignores(2) || !s.Ignores(3) || s.Catches(3) || s.Blocks(3) || s.NSPID() != 1 {
		t.Errorf("unexpected %+v", s)
	}
	s, err := ParseStatus([]byte("Tgid:\t1\nGroups:\t4 24 27\nSigBlk:\t0000000000000004\n"))
	if err != nil || !s.Blocks(3) || s.Blocks(2) || s.Blocks(0) || s.Blocks(65) {
		t.Errorf("SigBlk: %+v, %v", s, err)
	}
	if diff := cmp.Diff([]int{4, 24, 27}, s.Groups); diff != "" {
		t.Error(diff)
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

func FuzzParseStatus(f *testing.F) {
	for _, name := range []string{"status-jvm.txt", "status-namespaced-nobody.txt"} {
		b, _ := os.ReadFile(filepath.Join("testdata", name))
		f.Add(b)
	}
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
	st = "19925 (a) b (c)) T 19923 19920 2797 0 -1 4194560 286 0 0 0 0 0 0 0 20 0 1 0 76302 2990080 389 0\n"
	state, start, err := ParseStat([]byte(st))
	if err != nil || state != 'T' || start != 76302 {
		t.Errorf("ParseStat = %c, %d, %v; want T, 76302", state, start, err)
	}
	if flags, err := ParseStatFlags([]byte(st)); err != nil || flags != 4194560 {
		t.Errorf("ParseStatFlags = %d, %v; want 4194560", flags, err)
	}
	if _, err := ParseStatFlags([]byte("1 (x) S 1 2 3 4 5 -6")); err == nil {
		t.Error("ParseStatFlags(negative): no error")
	}
	for _, bad := range []string{"", "1 (x", "1 (x) S 1", "1 (x) S 1 2", "1 (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 zz",
		"1 (x) Sl 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 55"} {
		if _, err := ParseStatStartTime([]byte(bad)); err == nil {
			t.Errorf("ParseStatStartTime(%q): no error", bad)
		}
		if _, _, err := ParseStat([]byte(bad)); err == nil {
			t.Errorf("ParseStat(%q): no error", bad)
		}
	}
	if diff := cmp.Diff([]string{"java", "-cp", "", "Main"}, ParseCmdline([]byte("java\x00-cp\x00\x00Main\x00"))); diff != "" {
		t.Error(diff)
	}
	if ParseCmdline(nil) != nil {
		t.Error("empty cmdline")
	}
}

func TestChildren(t *testing.T) {
	kids, err := ParseChildren([]byte("11 12 "))
	if diff := cmp.Diff([]int{11, 12}, kids); diff != "" || err != nil {
		t.Errorf("ParseChildren: %v %s", err, diff)
	}
	if kids, err := ParseChildren(nil); err != nil || len(kids) != 0 {
		t.Errorf("ParseChildren(empty) = %v, %v", kids, err)
	}
	if _, err := ParseChildren([]byte("11 x")); err == nil {
		t.Error("ParseChildren(11 x): no error")
	}

	root := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// 10 has a children file; 20 has none (no CONFIG_PROC_CHILDREN), so its children are found by PPid.
	write("10/task/10/children", "11 12 ")
	write("20/status", "Tgid:\t20\nPPid:\t1\n")
	write("21/status", "Tgid:\t21\nPPid:\t20\n")
	write("22/status", "Tgid:\t22\nPPid:\t10\n")
	write("23/status", "Tgid:\t23\nPPid:\t20\n")
	write("24/status", "garbage")
	pfs := New(root)
	for pid, want := range map[int][]int{10: {11, 12}, 20: {21, 23}, 22: nil} {
		got, err := pfs.Children(pid)
		if diff := cmp.Diff(want, got); diff != "" || err != nil {
			t.Errorf("Children(%d): %v %s", pid, err, diff)
		}
	}
	if _, err := pfs.Children(99); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Children(missing) error = %v", err)
	}
}

func FuzzParseStat(f *testing.F) {
	f.Add([]byte("1 (init) S 0 1 1 0 -1 4194560 1 2 3 4 5 6 7 8 20 0 1 0 55 100 10\n"))
	f.Add([]byte("19925 (a) b (c)) S 19923 19920 2797 0 -1 4194560 286 0 0 0 0 0 0 0 20 0 1 0 76302 2990080\n"))
	f.Add([]byte("11 12 \n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		state, start, err := ParseStat(b)
		if start2, err2 := ParseStatStartTime(b); start2 != start || (err == nil) != (err2 == nil) {
			t.Errorf("ParseStatStartTime = %d, %v; ParseStat = %d, %v", start2, err2, start, err)
		}
		if err == nil && (state == ' ' || state == '\n') {
			t.Errorf("ParseStat accepted blank state %q", state)
		}
		_ = ParseCmdline(b)
		_, _ = ParseChildren(b)
		_, _ = ParseStatFlags(b)
	})
}

func TestDescribeMissingCaps(t *testing.T) {
	if got := describeMissing(nil, " and "); got != "" {
		t.Errorf("none missing: %q", got)
	}
	want := "this process runs as root without CAP_SYS_PTRACE (a container's root lacks it unless added: --cap-add SYS_PTRACE, or a pod's securityContext.capabilities.add)"
	if got := describeMissing([]Capability{CapSysPtrace}, " and "); got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	want = "this process runs as root without CAP_BPF and CAP_PERFMON (a container's root lacks them unless added: --cap-add BPF and --cap-add PERFMON, or a pod's securityContext.capabilities.add)"
	if got := describeMissing([]Capability{CapBPF, CapPerfmon}, " and "); got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	want = "this process runs as root without CAP_PERFMON or CAP_SYS_ADMIN (a container's root lacks it unless added: --cap-add PERFMON or --cap-add SYS_ADMIN, or a pod's securityContext.capabilities.add)"
	if got := describeMissing([]Capability{CapPerfmon, CapSysAdmin}, " or "); got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

// Explain changes only refusals, and only for root without the capabilities (TestCapabilityTable in
// cmd/release runs the tools so).
func TestExplainLeavesOthers(t *testing.T) {
	if Explain(nil, CapChown) != nil {
		t.Error("Explain(nil) is not nil")
	}
	if err := Explain(io.EOF, CapChown); err != io.EOF { //nolint:errorlint // the very value
		t.Errorf("Explain(io.EOF) = %v", err)
	}
	if err := Explain(os.ErrPermission); err != os.ErrPermission { //nolint:errorlint // the very value
		t.Errorf("Explain(ErrPermission) without capabilities = %v", err)
	}
}
