package faults_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/internal/testutil"
)

// noCrash fails a run that panicked or was killed (a hang is caught by tool's one-minute bound).
func noCrash(t *testing.T, what string, r result) {
	t.Helper()
	if strings.Contains(r.stderr, "panic:") || strings.Contains(r.stderr, "goroutine ") || r.code < 0 {
		t.Errorf("%s: crashed: %s", what, r)
	}
}

// TestCorruptHsperfdata replaces a JVM's hsperfdata file (the JVM keeps its own mapping; the name is what
// readers open) with damaged ones: every command that reads it (gjcmd PerfCounter.print, -l, the JDK
// version of gjcmd's file checks and gjmaps' jcmd strategy) must fail with a message or carry on without
// it, and never crash or hang.
func TestCorruptHsperfdata(t *testing.T) {
	testutil.MustHaveRoot(t)
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		t.Parallel() // two JDKs at a time: what this checks does not depend on the machine's load
		j := testutil.StartJVM(t, jdk, testutil.JVMOptions{})
		pid := strconv.Itoa(j.PID)
		t.Cleanup(func() { os.Remove("/tmp/perf-" + pid + ".map") })
		matches, _ := filepath.Glob("/proc/" + pid + "/root/tmp/hsperfdata_*/" + strconv.Itoa(j.NSPID))
		if len(matches) != 1 {
			t.Fatalf("hsperfdata of %s: %q", j, matches)
		}
		path := matches[0]
		orig, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		saved := path + ".jvmkit-saved"
		if err := os.Rename(path, saved); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Rename(saved, path) })
		garbage := bytes.Repeat([]byte{0xde, 0xad, 0xbe, 0xef}, len(orig)/4)
		badMagic := append([]byte{0, 0, 0, 0}, orig[4:]...)
		hugeEntry := append([]byte(nil), orig...)
		// The first entry's length field (after the 32-byte prologue) made enormous.
		copy(hugeEntry[32:36], []byte{0xff, 0xff, 0xff, 0x7f})
		cases := map[string]func() error{
			"empty":       func() error { return os.WriteFile(path, nil, 0o600) },
			"prologue":    func() error { return os.WriteFile(path, orig[:10], 0o600) },
			"half":        func() error { return os.WriteFile(path, orig[:len(orig)/2], 0o600) },
			"garbage":     func() error { return os.WriteFile(path, garbage, 0o600) },
			"bad-magic":   func() error { return os.WriteFile(path, badMagic, 0o600) },
			"huge-entry":  func() error { return os.WriteFile(path, hugeEntry, 0o600) },
			"fifo":        func() error { return unix.Mkfifo(path, 0o600) },
			"symlink":     func() error { return os.Symlink("/dev/zero", path) },
			"directory":   func() error { return os.Mkdir(path, 0o700) },
			"missing":     func() error { return nil },
			"intact-copy": func() error { return os.WriteFile(path, orig, 0o600) },
		}
		total, passed := 0, 0
		for name, make := range cases {
			total++
			if t.Run(name, func(t *testing.T) {
				os.RemoveAll(path)
				if err := make(); err != nil {
					t.Fatal(err)
				}
				defer os.RemoveAll(path)
				if name == "fifo" {
					// A JVM that starts (JDK 17+) opens every file in its user's hsperfdata directory to
					// see whether it is stale, with a blocking open: a FIFO without a writer hangs the start
					// of every JVM of root on this machine (other tests' too) until one appears. So this
					// test holds a writer while the FIFO exists (removed before the writer is closed). The
					// tools must still not read it (a read would block); a FIFO without a writer is
					// hsperf's TestReadFile's, in a directory of its own.
					fd, err := unix.Open(path, unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
					if err != nil {
						t.Fatal(err)
					}
					defer func() {
						os.RemoveAll(path)
						unix.Close(fd)
					}()
				}
				r := tool(t, "gjcmd", pid, "PerfCounter.print")
				noCrash(t, "PerfCounter.print", r)
				if r.code != 0 && !strings.Contains(r.stderr, "gjcmd:") {
					t.Errorf("PerfCounter.print failed without a message: %s", r)
				}
				if name == "intact-copy" && (r.code != 0 || !strings.Contains(r.stdout, "sun.rt.")) {
					t.Errorf("an intact copy is not read: %s", r)
				}
				r = tool(t, "gjcmd", "-l")
				noCrash(t, "-l", r)
				if r.code != 0 || !strings.Contains(r.stdout, pid+" ") {
					t.Errorf("-l does not list the JVM: %s", r)
				}
				// The JDK's version comes from VM.version instead; a JDK without Compiler.perfmap (11) is
				// named as such, which needs that version too.
				noPerfMap := "JDK " + strconv.Itoa(jdk.Feature) + " has no Compiler.perfmap"
				works := func(r result) bool {
					if jdk.Feature < 17 {
						return r.code == 1 && strings.Contains(r.stderr, noPerfMap)
					}
					return r.code == 0
				}
				r = tool(t, "gjcmd", pid, "Compiler.perfmap")
				noCrash(t, "Compiler.perfmap", r)
				if !works(r) {
					t.Errorf("Compiler.perfmap (the JDK version from VM.version instead): %s", r)
				}
				r = tool(t, "gjmaps", "-p", pid, "--strategy", "jcmd")
				noCrash(t, "gjmaps", r)
				if !works(r) {
					t.Errorf("gjmaps --strategy jcmd: %s", r)
				}
			}) {
				passed++
			}
		}
		t.Logf("%s: %d of %d corrupt hsperfdata cases passed", jdk, passed, total)
		if !j.Alive() {
			t.Errorf("%s died", j)
		}
	})
}

// TestCorruptCommandFile gives gjcmd -f damaged command files: each is refused with exit status 2 and a
// message, or sent line by line with the JVM's own verdict; never a crash or a hang (a FIFO, /dev/zero).
func TestCorruptCommandFile(t *testing.T) {
	testutil.MustHaveRoot(t)
	j := testutil.StartJVM(t, testutil.JDK17(t), testutil.JVMOptions{})
	pid := strconv.Itoa(j.PID)
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, path string
		code       int
		say        string
	}{
		{"empty", write("empty", nil), 0, ""},
		{"stop-only", write("stop", []byte("stop\n")), 0, ""},
		{"crlf", write("crlf", []byte("VM.version\r\nVM.uptime\r\n")), 0, "JDK"},
		{"garbage-line", write("garbage", []byte("\xff\xfe\x01 nonsense\nVM.version\n")), 1, "nknown diagnostic command"},
		{"nul", write("nul", []byte("VM.version\x00\nVM.uptime\n")), 2, "NUL"},
		{"huge", write("huge", bytes.Repeat([]byte("VM.uptime\n"), 200000)), 2, "larger than"},
		{"long-line", write("long", append(bytes.Repeat([]byte("x"), 900000), '\n')), 1, ""},
		{"fifo", fifo, 2, "not a regular file"},
		{"dev-zero", "/dev/zero", 2, "not a regular file"},
		{"directory", dir, 2, "not a regular file"},
		{"missing", filepath.Join(dir, "missing"), 2, "no such file"},
	}
	for _, c := range cases {
		r := tool(t, "gjcmd", pid, "-f", c.path)
		noCrash(t, c.name, r)
		if r.code != c.code || !strings.Contains(r.stdout+r.stderr, c.say) {
			t.Errorf("%s: want exit %d saying %q: %s", c.name, c.code, c.say, r)
		}
	}
	t.Logf("%d corrupt command files", len(cases))
	if !j.Alive() {
		t.Errorf("%s died", j)
	}
}
