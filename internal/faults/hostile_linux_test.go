package faults_test

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/internal/testutil"
)

// otherUID plants the hostile files: nobody, as on any Debian host.
const otherUID = 65534

// victim is a root-owned file that a planted link points to; no run may change it.
type victim struct {
	path    string
	content []byte
}

func newVictim(t *testing.T) *victim {
	t.Helper()
	// In /tmp, on the file system of /tmp (a hard link needs that), in a directory the other user may
	// pass through but not list or change; the file itself is root's, mode 0644.
	dir, err := os.MkdirTemp("/tmp", "jvmkit-victim-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	v := &victim{path: filepath.Join(dir, "victim"), content: []byte("precious root data " + rand.Text() + "\n")}
	v.restore(t)
	return v
}

func (v *victim) restore(t *testing.T) {
	t.Helper()
	if err := os.WriteFile(v.path, v.content, 0o644); err != nil {
		t.Fatal(err)
	}
}

func (v *victim) intact(t *testing.T, after string) {
	t.Helper()
	b, err := os.ReadFile(v.path)
	if err != nil || !bytes.Equal(b, v.content) {
		t.Errorf("after %s: the victim %s changed (%d bytes, %v): a write went through a planted link", after, v.path, len(b), err)
		v.restore(t)
	}
}

// kinds are what the other user plants ("none": nothing).
var kinds = []string{"none", "symlink", "hardlink", "fifo", "file", "dir"}

// plant creates kind at path as the other user (setpriv), pointing at or linking the victim.
func plant(t *testing.T, path, kind string, v *victim) {
	t.Helper()
	var args []string
	switch kind {
	case "none":
		return
	case "symlink":
		args = []string{"ln", "-s", v.path, path}
	case "hardlink":
		args = []string{"ln", v.path, path}
	case "fifo":
		args = []string{"mkfifo", "-m", "666", path}
	case "file":
		args = []string{"sh", "-c", `printf 'the other user keeps this\n' > "$1" && chmod 666 "$1"`, "sh", path}
	case "dir":
		args = []string{"mkdir", "-m", "777", path}
	default:
		t.Fatalf("plant %s", kind)
	}
	cmd := exec.Command("setpriv", append([]string{"--reuid=" + strconv.Itoa(otherUID), "--regid=" + strconv.Itoa(otherUID), "--clear-groups", "--"}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("plant %s at %s as uid %d: %v\n%s", kind, path, otherUID, err, out)
	}
}

// expect is the outcome of one case: the exit status and a text stderr (or stdout) must contain.
type expect struct {
	code int
	say  string
}

// replaced: the tool put a file of the JVM's in the way of what was planted, said so, and succeeded.
var replaced = expect{0, "replaced it with a new empty file"}

// hostileCase is one path that a tool writes or has the JVM write.
type hostileCase struct {
	name   string
	minJDK int
	path   func(j *testutil.JVM) string
	run    func(t *testing.T, j *testutil.JVM, path, kind string) result
	// expected outcome per kind; kinds missing are not run
	want map[string]expect
	// after a successful run: the file at path holds data and belongs to the JVM's user or root
	written bool
}

func allKinds(e map[string]expect, def expect) map[string]expect {
	out := map[string]expect{}
	for _, k := range kinds[1:] {
		out[k] = def
	}
	for k, v := range e {
		out[k] = v
	}
	return out
}

// follow is the outcome for a path the JVM writes through whatever it finds (fopen "w"): everything is
// replaced but another user's directory, which cannot be, and is refused (exit 4 for gjcmd).
func follow(refused int) map[string]expect {
	return allKinds(map[string]expect{"dir": {refused, "directory owned by uid 65534"}}, replaced)
}

// place is the outcome for a map that gjmaps writes itself (temporary file renamed over the name):
// whatever is at the name is replaced by the rename, never followed, and a link or FIFO is named in a
// note (refused, it would let any user keep a JVM from having a map); a directory is refused.
var place = map[string]expect{
	"symlink":  {0, "replaced it with the map, not followed"},
	"fifo":     {0, "replaced it with the map, not followed"},
	"dir":      {1, "is a directory owned by uid 65534"},
	"file":     {0, "entries"},
	"hardlink": {0, "entries"},
}

func TestHostileTmp(t *testing.T) {
	unprotect(t)
	testutil.MustHaveTool(t, "setpriv")
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		j := testutil.StartJVM(t, jdk, testutil.JVMOptions{JVMArgs: []string{"-Xmx64m"}})
		v := newVictim(t)
		pid := strconv.Itoa(j.PID)
		hostMap := "/tmp/perf-" + pid + ".map"
		t.Cleanup(func() { os.Remove(hostMap) })
		tmp := func(name string) func(*testutil.JVM) string {
			return func(*testutil.JVM) string { return "/tmp/jvmkit-hostile-" + pid + "-" + name }
		}

		// The attack is real: the JDK's own jcmd has the JVM write through the planted link.
		if jdk.Feature >= 17 {
			plant(t, hostMap, "symlink", v)
			out, err := exec.Command(jdk.Bin("jcmd"), pid, "Compiler.perfmap").CombinedOutput()
			b, _ := os.ReadFile(v.path)
			t.Logf("control: the JDK's jcmd %s Compiler.perfmap (%v): the victim now has %d bytes, was %d", pid, err, len(b), len(v.content))
			if bytes.Equal(b, v.content) {
				t.Errorf("control: the JDK's jcmd did not write through the planted link; the test proves nothing (%s)", out)
			}
			v.restore(t)
			os.Remove(hostMap)
		}

		n := 0
		jfr := func(t *testing.T, args ...string) {
			t.Helper()
			if r := tool(t, "gjcmd", append([]string{pid}, args...)...); r.code != 0 {
				t.Fatalf("%s", r)
			}
		}
		// From JDK 22 the JVM writes its map under a name of gjmaps' choosing, and the planted map name is
		// only gjmaps' own to write.
		jcmdWant := follow(1)
		if jdk.Feature >= 22 {
			jcmdWant = place
		}
		overwriteDump := map[string]expect{"symlink": replaced, "hardlink": replaced, "dir": {4, "directory owned by uid 65534"}}
		segmentDump := map[string]expect{"symlink": {0, "Heap dump file created"}}
		if jdk.Feature >= 22 {
			// The segments' names are the JVM's to make: only a private directory will do.
			refused := expect{4, "renames or removes names"}
			overwriteDump = map[string]expect{"none": refused, "symlink": refused, "dir": refused}
			segmentDump = map[string]expect{"symlink": refused}
		}
		cases := []hostileCase{
			{name: "gjmaps-jcmd", minJDK: 17, path: func(*testutil.JVM) string { return hostMap }, want: jcmdWant, written: true,
				run: func(t *testing.T, _ *testutil.JVM, _, _ string) result {
					return tool(t, "gjmaps", "-p", pid, "--strategy", "jcmd")
				}},
			{name: "gjmaps-vmstructs", path: func(*testutil.JVM) string { return hostMap }, want: place, written: true,
				run: func(t *testing.T, _ *testutil.JVM, _, _ string) result {
					return tool(t, "gjmaps", "-p", pid, "--strategy", "vmstructs")
				}},
			{name: "gjmaps-auto", path: func(*testutil.JVM) string { return hostMap }, want: place, written: true,
				run: func(t *testing.T, _ *testutil.JVM, _, _ string) result { return tool(t, "gjmaps", "-p", pid) }},
			{name: "gjmaps-agent", path: func(*testutil.JVM) string { return hostMap }, want: place, written: true,
				run: func(t *testing.T, _ *testutil.JVM, _, _ string) result {
					return tool(t, "gjmaps", "-p", pid, "--strategy", "agent")
				}},
			{name: "map-lock", path: func(*testutil.JVM) string { return "/tmp/.perf-" + pid + ".map.lock" },
				want: allKinds(map[string]expect{"dir": {0, "without the map lock"}}, expect{0, "entries"}),
				run: func(t *testing.T, _ *testutil.JVM, _, _ string) result {
					return tool(t, "gjmaps", "-p", pid, "--strategy", "vmstructs")
				}},
			{name: "agent-library", path: agentLibDir, want: allKinds(nil, expect{0, "entries"}),
				run: func(t *testing.T, _ *testutil.JVM, _, _ string) result {
					return tool(t, "gjmaps", "-p", pid, "--strategy", "agent")
				}},
			{name: "gjcmd-Compiler.perfmap", minJDK: 17, path: func(*testutil.JVM) string { return hostMap }, want: follow(4), written: true,
				run: func(t *testing.T, _ *testutil.JVM, _, _ string) result {
					return tool(t, "gjcmd", pid, "Compiler.perfmap")
				}},
			{name: "gjcmd-Compiler.perfmap-file", minJDK: 22, path: tmp("p.map"), want: follow(4), written: true,
				run: func(t *testing.T, _ *testutil.JVM, path, _ string) result {
					return tool(t, "gjcmd", pid, "Compiler.perfmap", path)
				}},
			{name: "JFR.dump", path: tmp("d.jfr"), want: follow(4), written: true,
				run: func(t *testing.T, _ *testutil.JVM, path, _ string) result {
					n++
					name := "hd" + strconv.Itoa(n)
					jfr(t, "JFR.start", "name="+name)
					defer jfr(t, "JFR.stop", "name="+name)
					return tool(t, "gjcmd", pid, "JFR.dump", "name="+name, "filename="+path)
				}},
			{name: "JFR.stop", path: tmp("s.jfr"), want: follow(4), written: true,
				run: func(t *testing.T, _ *testutil.JVM, path, _ string) result {
					n++
					name := "hs" + strconv.Itoa(n)
					jfr(t, "JFR.start", "name="+name)
					r := tool(t, "gjcmd", pid, "JFR.stop", "name="+name, "filename="+path)
					if r.code != 0 {
						jfr(t, "JFR.stop", "name="+name)
					}
					return r
				}},
			{name: "JFR.start", path: tmp("f.jfr"), want: follow(4), written: true,
				run: func(t *testing.T, _ *testutil.JVM, path, _ string) result {
					n++
					name := "hf" + strconv.Itoa(n)
					r := tool(t, "gjcmd", pid, "JFR.start", "name="+name, "filename="+path)
					if r.code == 0 {
						jfr(t, "JFR.stop", "name="+name) // the recording is written now
					}
					return r
				}},
			{name: "GC.heap_dump-overwrite", path: tmp("h.hprof"), written: true, want: overwriteDump,
				run: func(t *testing.T, _ *testutil.JVM, path, _ string) result {
					return tool(t, "gjcmd", pid, "GC.heap_dump", "-overwrite", path)
				}},
			// HotSpot reads -overwrite= and -overwrite=TRUE as on, as it does a bare -overwrite.
			{name: "GC.heap_dump-overwrite=TRUE", path: tmp("u.hprof"), written: true, want: overwriteDump,
				run: func(t *testing.T, _ *testutil.JVM, path, _ string) result {
					return tool(t, "gjcmd", pid, "GC.heap_dump", "-overwrite=TRUE", path)
				}},
			// JDK 22 and later write the dump in segments first, <file>.p0 ..., opened O_TRUNC with
			// -overwrite: a link planted there is followed (the JDK's own jcmd: see the control above).
			{name: "GC.heap_dump-segment", path: tmp("g.hprof.p0"), want: segmentDump,
				run: func(t *testing.T, _ *testutil.JVM, path, _ string) result {
					dump := strings.TrimSuffix(path, ".p0")
					defer os.Remove(dump)
					return tool(t, "gjcmd", pid, "GC.heap_dump", "-overwrite", dump)
				}},
			// The raw attach operations: jattach's "jcmd" runs its line as a diagnostic command, checked
			// and prepared; dumpheap and inspectheap name files the JVM writes.
			{name: "raw-jcmd", path: tmp("j.hprof"), written: true, want: overwriteDump,
				run: func(t *testing.T, _ *testutil.JVM, path, _ string) result {
					return tool(t, "gjcmd", pid, "jcmd", "GC.heap_dump -overwrite "+path)
				}},
			{name: "raw-dumpheap", path: tmp("r.hprof"), want: map[string]expect{"symlink": {1, "File exists"}, "dir": {1, "directory owned by uid 65534"}},
				run: func(t *testing.T, _ *testutil.JVM, path, _ string) result {
					return tool(t, "gjcmd", pid, "dumpheap", path)
				}},
			{name: "raw-inspectheap", minJDK: 16, path: tmp("i.txt"), want: follow(4), written: true,
				run: func(t *testing.T, _ *testutil.JVM, path, _ string) result {
					return tool(t, "gjcmd", pid, "inspectheap", "-all", path)
				}},
			// A library to load that another user can change runs their code in the JVM.
			{name: "JVMTI.agent_load", path: tmp("a.so"), want: map[string]expect{"none": {4, "other users could make it first"}, "symlink": {4, "uid 65534"}, "file": {4, "uid 65534"}},
				run: func(t *testing.T, _ *testutil.JVM, path, _ string) result {
					return tool(t, "gjcmd", pid, "JVMTI.agent_load", path)
				}},
			{name: "raw-load", path: tmp("l.so"), want: map[string]expect{"none": {4, "other users could make it first"}, "symlink": {4, "uid 65534"}, "file": {4, "uid 65534"}},
				run: func(t *testing.T, _ *testutil.JVM, path, _ string) result {
					return tool(t, "gjcmd", pid, "load", path, "true")
				}},
			{name: "raw-load-instrument", path: tmp("agent.jar"), want: map[string]expect{"symlink": {4, "uid 65534"}, "file": {4, "uid 65534"}},
				run: func(t *testing.T, _ *testutil.JVM, path, _ string) result {
					return tool(t, "gjcmd", pid, "load", "instrument", "false", path+"=opts")
				}},
			// HotSpot keeps a quote inside a word and shifts the word's start: /tmp/m"x" is tmp/m"x to it, a
			// name relative to its working directory; a tab after the command name starts the first
			// argument. Both are refused rather than prepared where the JVM would not write.
			{name: "quote-inside", minJDK: 21, path: tmp(`q"x`), want: map[string]expect{"symlink": {1, "a quote inside"}},
				run: func(t *testing.T, _ *testutil.JVM, path, _ string) result {
					return tool(t, "gjcmd", pid, "System.dump_map", "-F="+path+`"`)
				}},
			{name: "tab", path: tmp("tab.hprof"), want: map[string]expect{"symlink": {1, "white space"}},
				run: func(t *testing.T, _ *testutil.JVM, path, _ string) result {
					return tool(t, "gjcmd", pid, "GC.heap_dump\t-overwrite", path)
				}},
			// HotSpot runs each line of a request as a command of its own: a newline would smuggle in a
			// command that nothing prepared.
			{name: "newline", minJDK: 17, path: func(*testutil.JVM) string { return hostMap }, want: map[string]expect{"symlink": {1, "newline"}},
				run: func(t *testing.T, _ *testutil.JVM, _, _ string) result {
					return tool(t, "gjcmd", pid, "VM.version\nCompiler.perfmap")
				}},
			{name: "GC.heap_dump", path: tmp("e.hprof"), want: map[string]expect{"symlink": {0, "File exists"}},
				run: func(t *testing.T, _ *testutil.JVM, path, _ string) result {
					return tool(t, "gjcmd", pid, "GC.heap_dump", path)
				}},
			{name: "Thread.dump_to_file-overwrite", minJDK: 21, path: tmp("t.txt"), want: follow(4), written: true,
				run: func(t *testing.T, _ *testutil.JVM, path, _ string) result {
					return tool(t, "gjcmd", pid, "Thread.dump_to_file", "-overwrite", path)
				}},
			{name: "System.dump_map", minJDK: 21, path: tmp("m.txt"), want: follow(4), written: true,
				run: func(t *testing.T, _ *testutil.JVM, path, _ string) result {
					return tool(t, "gjcmd", pid, "System.dump_map", "-F="+path)
				}},
			{name: "VM.log-append", path: tmp("a.log"), want: follow(4),
				run: func(t *testing.T, _ *testutil.JVM, path, _ string) result {
					r := tool(t, "gjcmd", pid, "VM.log", "output="+path, "output_options=filecount=0", "what=gc")
					if r.code == 0 {
						jfr(t, "VM.log", "output="+path, "output_options=filecount=0", "what=all=off")
					}
					return r
				}},
			{name: "VM.log-rotating", path: tmp("r.log"),
				want: map[string]expect{"none": {4, "renames or removes names"}, "symlink": {4, "renames or removes names"}},
				run: func(t *testing.T, _ *testutil.JVM, path, _ string) result {
					return tool(t, "gjcmd", pid, "VM.log", "output="+path, "what=gc")
				}},
			{name: "copy-out", path: tmp("o.jfr"),
				want: map[string]expect{"symlink": {4, "symbolic link"}, "fifo": {1, "not a regular file"}, "file": {1, "not overwriting"}, "dir": {1, "is a directory"}},
				run: func(t *testing.T, _ *testutil.JVM, path, _ string) result {
					n++
					name := "ho" + strconv.Itoa(n)
					jfr(t, "JFR.start", "name="+name)
					defer jfr(t, "JFR.stop", "name="+name)
					return tool(t, "gjcmd", "-o", path, pid, "JFR.dump", "name="+name, "filename=copy-"+name+".jfr")
				}},
			{name: "copy-to-dir", path: tmp("c"),
				want: map[string]expect{"dir": {4, "belongs to uid 65534"}},
				run: func(t *testing.T, _ *testutil.JVM, path, _ string) result {
					n++
					name := "hc" + strconv.Itoa(n)
					jfr(t, "JFR.start", "name="+name)
					defer jfr(t, "JFR.stop", "name="+name)
					return tool(t, "gjcmd", "--copy-to", path, pid, "JFR.dump", "name="+name, "filename=copy-"+name+".jfr")
				}},
			{name: "unsafe-dir", path: tmp("open"), want: map[string]expect{"none": {4, "not sticky"}},
				run: func(t *testing.T, _ *testutil.JVM, path, _ string) result {
					// A directory every user may write, without the sticky bit: nothing in it can be made
					// safe.
					if err := os.Mkdir(path, 0o700); err != nil {
						t.Fatal(err)
					}
					if err := os.Chmod(path, 0o777); err != nil {
						t.Fatal(err)
					}
					n++
					name := "hu" + strconv.Itoa(n)
					jfr(t, "JFR.start", "name="+name)
					defer jfr(t, "JFR.stop", "name="+name)
					return tool(t, "gjcmd", pid, "JFR.dump", "name="+name, "filename="+path+"/x.jfr")
				}},
			{name: "flame-output", path: tmp("f.svg"),
				want: map[string]expect{"symlink": {4, "symbolic link"}, "fifo": {1, "not a regular file"}, "dir": {1, "not a regular file"}, "file": {0, ""}, "hardlink": {0, ""}},
				run: func(t *testing.T, _ *testutil.JVM, path, _ string) result {
					folded := filepath.Join(t.TempDir(), "in.folded")
					if err := os.WriteFile(folded, []byte("main;a;b 3\nmain;c 1\n"), 0o644); err != nil {
						t.Fatal(err)
					}
					return tool(t, "jvmkit", "flame", folded, "-o", path)
				}},
		}
		total, passed := 0, 0
		for _, c := range cases {
			if jdk.Feature < c.minJDK {
				continue
			}
			for _, kind := range kinds {
				want, ok := c.want[kind]
				if !ok {
					continue
				}
				total++
				ok = t.Run(c.name+"/"+kind, func(t *testing.T) {
					path := c.path(j)
					os.RemoveAll(path)
					plant(t, path, kind, v)
					defer os.RemoveAll(path)
					r := c.run(t, j, path, kind)
					v.intact(t, r.args[0]+" "+c.name)
					if r.code != want.code || !strings.Contains(r.stderr+r.stdout, want.say) {
						t.Errorf("want exit %d saying %q; got %s", want.code, want.say, r)
					}
					if !j.Alive() {
						t.Fatalf("the JVM died")
					}
					if c.written && want.code == 0 {
						var st unix.Stat_t
						if err := unix.Lstat(path, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size == 0 || st.Uid != 0 {
							t.Errorf("%s afterwards: %v, mode %o, size %d, uid %d; want what the JVM wrote, a regular file of root", path, err, st.Mode, st.Size, st.Uid)
						}
					}
				})
				if ok {
					passed++
				}
			}
		}
		t.Logf("%s: %d of %d hostile-/tmp cases passed", jdk, passed, total)
	})
}

// agentLibDir is where gjmaps stages its JVMTI agent in the JVM's /tmp (perfmap's
// .jvmkit-agent-<first 16 bytes of the library's SHA-256>).
func agentLibDir(*testutil.JVM) string {
	_, file, _, _ := runtime.Caller(0)
	lib := filepath.Join(filepath.Dir(file), "..", "..", "jvmti", "agent", "libjvmkit-perfmap-linux-"+runtime.GOARCH+".so")
	b, err := os.ReadFile(lib)
	if err != nil {
		panic(fmt.Sprintf("agent library: %v", err))
	}
	sum := sha256.Sum256(b)
	return "/tmp/.jvmkit-agent-" + hex.EncodeToString(sum[:16])
}

// TestHostileUserDir: Java resolves a JFR file name against user.dir, which -Duser.dir may set apart from
// the JVM's working directory (where HotSpot's own commands write). A JVM working in a private directory
// with user.dir=/tmp writes a relative filename= in /tmp, through a link planted there: the preparation
// must look where Java will write.
func TestHostileUserDir(t *testing.T) {
	unprotect(t)
	testutil.MustHaveTool(t, "setpriv")
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		j := testutil.StartJVM(t, jdk, testutil.JVMOptions{JVMArgs: []string{"-Xmx64m", "-Duser.dir=/tmp"}})
		v := newVictim(t)
		pid := strconv.Itoa(j.PID)
		name := "jvmkit-userdir-" + pid + ".jfr"
		path := "/tmp/" + name
		t.Cleanup(func() { os.Remove(path) })
		plant(t, path, "symlink", v)
		if r := tool(t, "gjcmd", pid, "JFR.start", "name=u"); r.code != 0 {
			t.Fatalf("%s", r)
		}
		r := tool(t, "gjcmd", pid, "JFR.dump", "name=u", "filename="+name)
		v.intact(t, "JFR.dump filename="+name+" with user.dir=/tmp")
		if r.code != 0 || !strings.Contains(r.stderr, "replaced it with a new empty file") {
			t.Errorf("want the planted link at %s replaced and the dump written there; got %s", path, r)
		}
		var st unix.Stat_t
		if err := unix.Lstat(path, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size == 0 {
			t.Errorf("%s: %v, mode %o, size %d; want the recording", path, err, st.Mode, st.Size)
		}
		tool(t, "gjcmd", pid, "JFR.stop", "name=u")
	})
}
