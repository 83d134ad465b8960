package jcmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/jvmkit/jvmkit/internal/procfs"
	"github.com/jvmkit/jvmkit/internal/rootfs"
)

// helpOf parses a golden `help <name>` of a JDK (testdata/<jdk>/help).
func helpOf(t testing.TB, jdk, name string) *Command {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", jdk, "help", name+".txt"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseHelp(string(b))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestPlannedWrites(t *testing.T) {
	const nspid = 42
	cases := []struct {
		jdk  string
		line string
		want []write
	}{
		{"jdk17", "Compiler.perfmap", []write{{path: "/tmp/perf-42.map", mode: rootfs.Follow, perm: 0o666}}},
		{"jdk25", "Compiler.perfmap /tmp/x_%p.map", []write{{option: "filename", path: "/tmp/x_42.map", mode: rootfs.Follow, perm: 0o666}}},
		{"jdk17", "GC.heap_dump /tmp/h.hprof", []write{{option: "filename", path: "/tmp/h.hprof", mode: rootfs.Exclusive, perm: 0o600}}},
		{"jdk17", "GC.heap_dump -overwrite -gz=1 h.hprof", []write{{option: "filename", path: "h.hprof", mode: rootfs.Follow, perm: 0o600}}},
		// HotSpot reads an empty value and "true" in any case as on.
		{"jdk17", "GC.heap_dump -overwrite=TRUE /tmp/h.hprof", []write{{option: "filename", path: "/tmp/h.hprof", mode: rootfs.Follow, perm: 0o600}}},
		{"jdk17", "GC.heap_dump -overwrite= /tmp/h.hprof", []write{{option: "filename", path: "/tmp/h.hprof", mode: rootfs.Follow, perm: 0o600}}},
		{"jdk17", "GC.heap_dump -overwrite=false /tmp/h.hprof", []write{{option: "filename", path: "/tmp/h.hprof", mode: rootfs.Exclusive, perm: 0o600}}},
		// JDK 22 and later write <file>.p0 ... first, truncating with -overwrite: a private directory only.
		{"jdk25", "GC.heap_dump -overwrite /tmp/h.hprof", []write{{option: "filename", path: "/tmp/h.hprof", mode: rootfs.Private, perm: 0o600}}},
		{"jdk25", "GC.heap_dump /tmp/h.hprof", []write{{option: "filename", path: "/tmp/h.hprof", mode: rootfs.Exclusive, perm: 0o600}}},
		{"jdk25", "Thread.dump_to_file -format=json /tmp/t.json", []write{{option: "filepath", path: "/tmp/t.json", mode: rootfs.Exclusive, perm: 0o666}}},
		{"jdk25", "Thread.dump_to_file -overwrite /tmp/t.txt", []write{{option: "filepath", path: "/tmp/t.txt", mode: rootfs.Follow, perm: 0o666}}},
		{"jdk17", "JFR.dump name=1 filename=/tmp/r_%p.jfr", []write{{option: "filename", path: "/tmp/r_%p.jfr", mode: rootfs.Follow, perm: 0o666, dirOK: true}}},
		{"jdk25", "JFR.dump name=1 filename=/tmp/r_%p.jfr", []write{{option: "filename", path: "/tmp/r_42.jfr", mode: rootfs.Follow, perm: 0o666, dirOK: true}}},
		{"jdk25", "JFR.dump filename=/tmp/r_%t.jfr", []write{{option: "filename", path: "/tmp/r_%t.jfr", mode: rootfs.Private, perm: 0o666, dirOK: true}}},
		{"jdk25", "JFR.dump name=1", []write{{path: ".", mode: rootfs.PrivateDir}}},
		{"jdk17", "JFR.start name=a filename=/tmp/a.jfr", []write{{option: "filename", path: "/tmp/a.jfr", mode: rootfs.Follow, perm: 0o666, dirOK: true, deferred: true}}},
		{"jdk17", "JFR.start name=a duration=10s", []write{{path: ".", mode: rootfs.PrivateDir, deferred: true}}},
		{"jdk17", "JFR.start name=a", nil},
		{"jdk25", "JFR.stop name=a filename=/tmp/a.jfr", []write{{option: "filename", path: "/tmp/a.jfr", mode: rootfs.Follow, perm: 0o666, dirOK: true}}},
		{"jdk17", "JFR.stop name=a", nil},
		{"jdk17", "JFR.configure repositorypath=/tmp/repo", []write{{option: "repositorypath", path: "/tmp/repo", mode: rootfs.PrivateDir}}},
		{"jdk25", "VM.log output=/tmp/gc.log what=gc", []write{{option: "output", path: "/tmp/gc.log", mode: rootfs.Private, perm: 0o666}}},
		{"jdk25", "VM.log output=file=/tmp/gc_%p.log output_options=filecount=0 what=gc", []write{{option: "output", path: "/tmp/gc_42.log", mode: rootfs.Append, perm: 0o666}}},
		{"jdk25", "VM.log output=stdout what=gc", nil},
		{"jdk25", "VM.log list", nil},
		{"jdk25", "System.dump_map", []write{{path: "vm_memory_map_42.txt", mode: rootfs.Follow, perm: 0o666}}},
		{"jdk25", "System.dump_map -F=/tmp/m.txt", []write{{option: "-F", path: "/tmp/m.txt", mode: rootfs.Follow, perm: 0o666}}},
		{"jdk17", "VM.cds dynamic_dump", []write{{path: ".", mode: rootfs.PrivateDir}}},
		{"jdk25", "VM.cds dynamic_dump /tmp/a.jsa", []write{{option: "filename", path: "/tmp/a.jsa", mode: rootfs.Private}}},
		{"jdk25", "VM.cds static_dump /tmp/a.jsa", []write{{option: "filename", path: "/tmp/a.jsa", mode: rootfs.Private}, {path: ".", mode: rootfs.PrivateDir}}},
		{"jdk25", "VM.log output=/tmp/gc.log output_options=filecount=0,filecount=5 what=gc", []write{{option: "output", path: "/tmp/gc.log", mode: rootfs.Private, perm: 0o666}}},
		{"jdk25", "VM.log output=/tmp/gc.log output_options=filecount=5,filecount=0 what=gc", []write{{option: "output", path: "/tmp/gc.log", mode: rootfs.Append, perm: 0o666}}},
		{"jdk17", "Compiler.directives_add /etc/jvm/directives.json", []write{{path: ".", mode: rootfs.PrivateDir}}},
		{"jdk17", "GC.class_histogram", nil},
		{"jdk17", "Thread.print -l", nil},
	}
	for _, c := range cases {
		words, err := SplitLine(c.line)
		if err != nil {
			t.Fatal(err)
		}
		var cmd *Command
		if len(words) > 1 || writesWithoutArguments(words[0]) {
			cmd = helpOf(t, c.jdk, words[0])
		}
		feature := 17
		if c.jdk == "jdk25" {
			feature = 25
		}
		got, err := plannedWrites(words[0], words[1:], cmd, feature, nspid)
		if err != nil {
			t.Errorf("%s %s: %v", c.jdk, c.line, err)
			continue
		}
		if diff := cmp.Diff(c.want, got, cmp.AllowUnexported(write{})); diff != "" {
			t.Errorf("%s %s: (-want +got)\n%s", c.jdk, c.line, diff)
		}
	}
}

// TestPlannedWritesGeneric: a command that is not in the table but whose help types an argument FILE is
// taken to write it in a way not known (Private), and a line whose words cannot be assigned is refused.
func TestPlannedWritesGeneric(t *testing.T) {
	cmd := &Command{Name: "Vendor.dump", Arguments: []Option{{Name: "path", Type: "FILE"}}, Options: []Option{{Name: "-v", Type: "BOOLEAN"}}}
	got, err := plannedWrites("Vendor.dump", []string{"-v", "/tmp/out.bin"}, cmd, 25, 1)
	want := []write{{option: "path", path: "/tmp/out.bin", mode: rootfs.Private}}
	if err != nil || !cmp.Equal(want, got, cmp.AllowUnexported(write{})) {
		t.Errorf("generic FILE argument: %+v, %v", got, err)
	}
	if _, err := plannedWrites("Vendor.dump", []string{"a=b=c", "'open"}, cmd, 25, 1); err == nil || !strings.Contains(err.Error(), "cannot tell which file") {
		t.Errorf("unassignable words: %v", err)
	}
}

func FuzzPlannedWrites(f *testing.F) {
	for _, s := range []string{"GC.heap_dump -overwrite /tmp/x", "VM.log output=\"file=/tmp/a b\" output_options=filecount=0", "JFR.dump filename=%t%p%%", "Compiler.perfmap"} {
		f.Add(s)
	}
	help := map[string]*Command{}
	for _, name := range []string{"GC.heap_dump", "VM.log", "JFR.dump", "Compiler.perfmap", "Thread.dump_to_file", "JFR.start"} {
		help[name] = helpOf(f, "jdk25", name)
	}
	f.Fuzz(func(t *testing.T, line string) {
		words, err := SplitLine(line)
		if err != nil || len(words) == 0 {
			return
		}
		ws, err := plannedWrites(words[0], words[1:], help[words[0]], 25, 7)
		if err != nil {
			return
		}
		for _, w := range ws {
			if w.path == "" {
				t.Errorf("%q: a write without a path", line)
			}
		}
	})
}

// TestAmbiguousLine: lines that HotSpot's parser reads otherwise than SplitLine and parseArg are refused;
// the quoting jcmd users write is not.
func TestAmbiguousLine(t *testing.T) {
	for line, bad := range map[string]bool{
		"GC.heap_dump /tmp/h.hprof":                    false,
		"  VM.version":                                 false,
		`VM.log output="file=/tmp/a b" what=gc`:        false,
		`JFR.start name='a b' filename="/tmp/x y.jfr"`: false,
		`JFR.start 'odd key'=v`:                        false,
		"GC.heap_dump\t/tmp/h.hprof":                   true,
		"GC.heap_dump /tmp/h.hprof\t":                  true,
		`System.dump_map -F=/tmp/m"x"`:                 true,
		`GC.heap_dump /tmp/a"b"`:                       true,
		`JFR.start name="a"b`:                          true,
		`JFR.start "name"x=1`:                          true,
		`Compiler.perfmap 'x`:                          true,
	} {
		words, err := SplitLine(line)
		if err == nil {
			err = ambiguousLine(line, words)
		}
		if (err != nil) != bad {
			t.Errorf("%q: %v, want refused %t", line, err, bad)
		}
	}
}

// TestJVMPerm: a file made for the JVM has the mode the JVM would give it, less others' write bits,
// and always its owner's read and write.
func TestJVMPerm(t *testing.T) {
	for _, c := range []struct {
		perm, umask uint32
		has         bool
		want        uint32
	}{
		{0o666, 0o022, true, 0o644},
		{0o666, 0o027, true, 0o640},
		{0o666, 0o077, true, 0o600},
		{0o666, 0o000, true, 0o644},
		{0o666, 0o277, true, 0o600},
		{0o600, 0o022, true, 0o600},
		{0o666, 0, false, 0o600},
	} {
		if got := jvmPerm(c.perm, procfs.Status{Umask: c.umask, HasUmask: c.has}); got != c.want {
			t.Errorf("jvmPerm(%o, umask %o known %v) = %o, want %o", c.perm, c.umask, c.has, got, c.want)
		}
	}
}
