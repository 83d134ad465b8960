package jcmd_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/jvmkit/jvmkit/attach"
	"github.com/jvmkit/jvmkit/internal/testutil"
	"github.com/jvmkit/jvmkit/jcmd"
)

var captureGolden = flag.Bool("capture", false,
	"run JVMs on every installed JDK and rewrite the golden outputs in testdata/<jdk>/")

// checkCase is one line of testdata/<jdk>/checks.json: a command line sent to a real JVM and whether the
// JVM accepted it. Check must agree with the JVM on every line whose verdict comes from parsing.
type checkCase struct {
	Line   string `json:"line"`
	OK     bool   `json:"ok"`
	Output string `json:"output,omitempty"`
}

// checkLines are sent to a JVM that has no recording, so none of them writes a file: the accepted
// JFR.start lines are stopped right away, and the heap dumps aim at a directory that does not exist.
//
//nolint:misspell // misspelt options are the point of many lines
var checkLines = []string{
	"JFR.check", "JFR.check verbose=true", "JFR.check verbose", "JFR.check verbose=yes", "JFR.check verbose=TRUE",
	"JFR.check verbos=true", "JFR.check Verbose=true", "JFR.check name=nope", "JFR.check nope",
	"JFR.check name='a b'", `JFR.check name="a b"`, "JFR.check name='a b", "JFR.check name=a name=b",
	"JFR.check  name=x  verbose=false ", `JFR.check "name"=x`, `JFR.check name='x'y`, "JFR.check =x",
	"JFR.dump path-to-gc-root=true", "JFR.dump maxage=10", "JFR.dump maxage=10x", "JFR.dump maxage=0",
	"JFR.dump maxsize=1q", "JFR.dump maxsize=10M", "JFR.dump maxsize=-1", "JFR.dump maxage=-5m",
	"JFR.dump begin=-10m", "JFR.dump name=nope",
	"JFR.stop", "JFR.stop name=nope", "JFR.stop nmae=x",
	"JFR.start nmae=x", "JFR.start dely=1h", "JFR.start duration=10", "JFR.start duration=10x",
	"JFR.start duration=1S", "JFR.start disk=maybe", "JFR.start maxsize=10q", "JFR.start name=123",
	"JFR.start duration=0", "JFR.start delay=500ms", "JFR.start name=a name=b", "JFR.start settings=nosuch",
	"JFR.start maxage=1w", "JFR.start duration=1.5h", "JFR.start stackdepth=64", "JFR.start Name=x",
	"JFR.start name=c1 gc=high", "JFR.start name=c2 foo=bar", "JFR.start name=c3 jdk.ObjectAllocationSample#throttle=100/s",
	"JFR.start name=c4 +Custom#enabled=true", "JFR.start name=c5 memory-leaks=gc-roots",
	"JFR.start name=c6 method-timing=java.lang.String::length", "JFR.start name=c7 settings=profile settings=default",
	"JFR.start name=c8 gc=bogus", "JFR.start name=c9 flush-interval=2s", "JFR.start name=c10 maxsize=1g maxage=1d",
	"JFR.start name=c11 path-to-gc-roots=true",
	"JFR.start name=c12 exceptions=all class-loading=true locking-threshold=10ms file-threshold=10ms socket-threshold=10ms compiler=detailed allocation-profiling=high method-profiling=max thread-dump=1m",
	"JFR.start name=c13 gcc=high", "JFR.start name=c14 settings=none", "JFR.start name=c15 maxsize=100", "JFR.start name=c16 disk=false",
	"JFR.start name=c17 method-trace=java.lang.String::length", "JFR.start name=c18 memory-leaks=bogus",
	"JFR.start name=c19 delay=1h", "JFR.start name=c20 report-on-exit=gc", "JFR.start c21",
	"JFR.configure stackdepth=abc", "JFR.configure stackdepth=64", "JFR.configure memorysize=10q",
	"JFR.configure stack-depth=64", "JFR.configure samplethreads=true", "JFR.configure preserve-repository=true",
	"JFR.configure thread_buffer_size=16k", "JFR.configure globalbuffercount=20", "JFR.configure globalbuffercount=-1",
	"JFR.view", "JFR.view gc extra", "JFR.view maxage=1h gc",
	"GC.heap_dump", "GC.heap_dump -gz=x /nonexistent/x.hprof", "GC.heap_dump /nonexistent/a /nonexistent/b",
	"GC.heap_dump -all=maybe /nonexistent/x", "GC.heap_dump -gz=10 /nonexistent/x.hprof",
	"GC.heap_dump -overwrite=yes /nonexistent/x", "GC.heap_dump -parallel=x /nonexistent/x",
	"GC.heap_dump -paralel=2 /nonexistent/x", "GC.heap_dump -gz=1x /nonexistent/x", "GC.heap_dump -gz= /nonexistent/x",
	"GC.heap_dump -gz=-1 /nonexistent/x", "GC.heap_dump '/nonexistent/a b.hprof'", "GC.heap_dump /nonexistent/a=b",
	"GC.heap_dump -all -gz=1 -overwrite /nonexistent/x",
	"Thread.print -x", "Thread.print -l=maybe", "Thread.print -l=false", "Thread.print -l=TRUE", "Thread.print -l -e",
	"Thread.print extra", `Thread.print "-l"`, "Thread.print -l -l",
	"VM.flags -al", "VM.flags -all=true", "VM.flags -all extra", "VM.flags '-all'",
	"VM.version foo", "VM.version", "VM.start_java_debugging x",
	"help -all", "help JFR.start extra", "help -al",
	"GC.class_histogram -all=maybe", "GC.class_histogram -parallel=x", "GC.class_histogram -parallel=2",
	"Compiler.perfmap /nonexistent/x", "Compiler.codelist -x",
	"Thread.dump_to_file -format=xml /nonexistent/x", "Thread.dump_to_file", "Thread.dump_to_file -format=json /nonexistent/x",
	"VM.classes -verbose=x", "System.map -x", "Compiler.memory -minsize=x", "Compiler.memory -minsize=1q",
	"VM.log what=bogus", "VM.native_memory summary scale=XB", "VM.set_flag", "VM.set_flag PrintConcurrentLocks maybe",
	"VM.uptime -date=maybe", "VM.uptime -d", "VM.uptime -date",
	// One .jfc control at a time: a name the JVM does not know only earns a warning.
	"JFR.start name=k1 file-threshold=10ms", "JFR.start name=k2 socket-threshold=10ms", "JFR.start name=k3 locking-threshold=10ms",
	"JFR.start name=k4 exceptions=all", "JFR.start name=k5 class-loading=true", "JFR.start name=k6 compiler=detailed",
	"JFR.start name=k7 allocation-profiling=high", "JFR.start name=k8 method-profiling=max", "JFR.start name=k9 thread-dump=60s",
	"JFR.start name=k10 gc=all", "JFR.start name=k11 memory-leaks=types", "JFR.start name=k12 gc-enabled-high=true",
	"JFR.start name=k13 locking-threshold=abc", "JFR.start name=k14 class-loading=maybe", "JFR.start name=k15 exceptions-throttle-rate=10/s",
	"JFR.start name=k16 locking-threshold=20 ms", "JFR.start name=k17 locking-threshold=infinity", "JFR.start name=k18 allocation-profiling=maximum",
	"JFR.start name=k19 jdk.ThreadSleep#threshold=10ms jdk.ThreadSleep#enabled=true", "JFR.start name=k20 settings=default.jfc",
	"JFR.start name=k21 #enabled=true", "JFR.start name=k22 jdk.ThreadSleep#=1",
	"JFR.configure dumppath=/tmp", "JFR.configure memorysize=10", "JFR.configure memorysize=", "JFR.configure memorysize=-1",
	"JFR.configure stackdepth=+64", "JFR.configure stackdepth=64x", "JFR.configure stackdepth= 64", "JFR.configure maxchunksize=1x5",
	"JFR.configure repositorypath", "JFR.configure samplethreads", "JFR.configure samplethreads=TRUE",
	"Thread.print -l=", "Thread.print -e=false -l", "Thread.print '-l'=true", "GC.heap_dump -gz /nonexistent/x",
	`GC.heap_dump "/nonexistent/a b"`, "GC.heap_dump -all /nonexistent/x", "GC.heap_dump -all=1 /nonexistent/x",
	"JFR.view gc=x", "JFR.view width=abc gc", "JFR.view width=-1 gc", "JFR.view cell-height=2 gc", "JFR.view maxage=1 gc",
	`JFR.check name="a b"c`, "JFR.dump name=x filename=", "JFR.start settings=", "JFR.dump maxsize=0", "help 'JFR.start'",
	"JFR.check verbose=false verbose=true", "JFR.start settings=default settings=profile settings=none",
	"JFR.configure globalbuffersize=abc", "JFR.configure thread_buffer_size=abc", "JFR.configure maxchunksize=abc",
	"JFR.configure globalbuffercount=abc", "JFR.configure samplethreads=abc", "JFR.configure dumppath",
	"JFR.configure memorysize=abc", "JFR.configure preserve-repository=abc", "JFR.start flush-interval=abc",
	"JFR.view verbose gc", "JFR.view truncate=middle gc", "JFR.view maxsize=1q gc",
}

var startedRecording = regexp.MustCompile(`(?:Started recording|Recording) (\d+)`)

// TestCapture rewrites the golden outputs under testdata/<jdk>/ from real JVMs (go test -run TestCapture
// -capture ./jcmd/). The other tests only read them.
func TestCapture(t *testing.T) {
	if !*captureGolden {
		return // a generator, not a check: it runs only with -capture
	}
	testutil.MustHaveRoot(t)
	testutil.ForEachJDK(t, captureJDK)
}

type capturer struct {
	t        *testing.T
	ctx      context.Context
	dir      string
	manifest strings.Builder
}

func (c *capturer) write(name, text string) {
	c.t.Helper()
	p := filepath.Join(c.dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		c.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		c.t.Fatal(err)
	}
}

// run sends line to vm and stores the output as name, whether the JVM accepted the line or not.
func (c *capturer) run(vm *attach.VM, name, line string) (string, bool) {
	c.t.Helper()
	out, err := vm.Jcmd(c.ctx, line)
	status := 0
	var je *attach.JVMError
	switch {
	case errors.As(err, &je):
		status, out = je.Code, je.Message
	case err != nil:
		c.t.Fatalf("%s: %v", line, err)
	}
	if name != "" {
		c.write(name, out)
		fmt.Fprintf(&c.manifest, "%s\t%d\t%s\n", name, status, line)
	}
	return out, status == 0
}

func captureJDK(t *testing.T, jdk testutil.JDK) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := &capturer{t: t, ctx: ctx, dir: filepath.Join("testdata", jdk.Name())}
	if err := os.RemoveAll(c.dir); err != nil {
		t.Fatal(err)
	}
	c.write("VERSION", jdk.Version+"\n")
	dial := func(j *testutil.JVM) *attach.VM {
		vm, err := attach.Dial(ctx, j.PID, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { vm.Close() })
		return vm
	}

	sleeper := testutil.StartJVM(t, jdk, testutil.JVMOptions{})
	vm := dial(sleeper)

	// Every command's help, hidden VM.start_java_debugging included.
	list, _ := c.run(vm, "help.txt", "help")
	c.run(vm, "help-all.txt", "help -all")
	c.run(vm, "help-unknown.txt", "help JFR.strat") //nolint:misspell // a misspelt command
	names := []string{"VM.start_java_debugging"}
	inList := false
	for _, l := range strings.Split(list, "\n") {
		switch {
		case strings.HasPrefix(l, "The following commands are available"):
			inList = true
		case inList && strings.TrimSpace(l) == "":
			inList = false
		case inList:
			names = append(names, strings.TrimSpace(l))
		}
	}
	for _, n := range names {
		c.run(vm, "help/"+n+".txt", "help "+n)
	}

	// The JVM's verdict on good and bad lines, before any recording exists.
	var cases []checkCase
	for _, line := range checkLines {
		out, ok := c.run(vm, "", line)
		cs := checkCase{Line: line, OK: ok}
		if !ok || len(out) < 400 {
			cs.Output = out
		}
		cases = append(cases, cs)
		if ok && strings.HasPrefix(line, "JFR.start") {
			if m := startedRecording.FindStringSubmatch(out); m != nil {
				c.run(vm, "", "JFR.stop name="+m[1])
			}
		}
	}
	b, err := json.MarshalIndent(cases, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	c.write("checks.json", string(b)+"\n")
	// A fresh JVM for the JFR outputs, so that recording ids start at 1 whatever the checks left (a
	// delayed recording cannot be stopped).
	sleeper.Stop()
	sleeper = testutil.StartJVM(t, jdk, testutil.JVMOptions{})
	vm = dial(sleeper)
	files := sleeper.Dir

	// JFR.
	c.run(vm, "jfr-check-none.txt", "JFR.check")
	c.run(vm, "jfr-start.txt", "JFR.start")
	c.run(vm, "jfr-start-name.txt", "JFR.start name=t1")
	c.run(vm, "jfr-start-name-space.txt", "JFR.start name='my rec'")
	c.run(vm, "jfr-start-delay.txt", "JFR.start name=later delay=1h")
	c.run(vm, "jfr-start-duration.txt", "JFR.start name=timed duration=1h filename="+filepath.Join(files, "timed.jfr"))
	c.run(vm, "jfr-start-short.txt", "JFR.start name=short duration=1s filename="+filepath.Join(files, "short.jfr"))
	c.run(vm, "jfr-start-settings.txt", "JFR.start name=prof settings=profile maxage=10m maxsize=100M disk=true")
	c.run(vm, "jfr-start-nodisk.txt", "JFR.start name=mem disk=false")
	c.run(vm, "jfr-start-dumponexit.txt", "JFR.start name=atexit dumponexit=true filename="+filepath.Join(files, "atexit.jfr"))
	// A recording whose destination vanishes before it ends cannot be written at its end, and stays.
	gone := filepath.Join(files, "gone")
	if err := os.Mkdir(gone, 0o755); err != nil {
		t.Fatal(err)
	}
	c.run(vm, "jfr-start-gone.txt", "JFR.start name=gone duration=1s filename="+filepath.Join(gone, "gone.jfr"))
	os.RemoveAll(gone)
	deadline := time.Now().Add(20 * time.Second)
	for {
		out, _ := c.run(vm, "", "JFR.check")
		if !strings.Contains(out, "name=short ") && !strings.Contains(out, "name=gone duration=1s (running)") ||
			time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	c.run(vm, "jfr-check.txt", "JFR.check")
	c.run(vm, "jfr-check-name.txt", "JFR.check name=t1")
	c.run(vm, "jfr-check-verbose.txt", "JFR.check verbose=true")
	c.run(vm, "jfr-check-verbose-name.txt", "JFR.check name=prof verbose=true")
	c.run(vm, "jfr-check-missing.txt", "JFR.check name=nope")
	c.run(vm, "jfr-dump.txt", "JFR.dump name=t1 filename="+filepath.Join(files, "t1.jfr"))
	c.run(vm, "jfr-dump-space.txt", "JFR.dump name='my rec' filename='"+filepath.Join(files, "my rec.jfr")+"'")
	c.run(vm, "jfr-dump-all.txt", "JFR.dump filename="+filepath.Join(files, "all.jfr"))
	c.run(vm, "jfr-dump-gcroots.txt", "JFR.dump name=prof path-to-gc-roots=true filename="+filepath.Join(files, "roots.jfr"))
	c.run(vm, "jfr-dump-missing.txt", "JFR.dump name=nope filename="+filepath.Join(files, "nope.jfr"))
	c.run(vm, "jfr-dump-delayed.txt", "JFR.dump name=later filename="+filepath.Join(files, "later.jfr"))
	c.run(vm, "jfr-stop.txt", "JFR.stop name=t1")
	c.run(vm, "jfr-stop-file.txt", "JFR.stop name=timed filename="+filepath.Join(files, "timed-stop.jfr"))
	c.run(vm, "jfr-stop-missing.txt", "JFR.stop name=nope")
	c.run(vm, "jfr-stop-space.txt", "JFR.stop name='my rec' filename='"+filepath.Join(files, "my rec stop.jfr")+"'")
	c.run(vm, "jfr-check-after-stop.txt", "JFR.check")
	c.run(vm, "jfr-stop-delayed.txt", "JFR.stop name=later")
	c.run(vm, "jfr-stop-stopped.txt", "JFR.stop name=short")
	for _, n := range []string{"1", "prof", "mem", "atexit", "gone"} {
		c.run(vm, "", "JFR.stop name="+n)
	}
	c.run(vm, "jfr-configure.txt", "JFR.configure")

	// Other commands with a parsed output.
	c.run(vm, "debugging-none.txt", "VM.start_java_debugging")
	c.run(vm, "vm-version.txt", "VM.version")
	c.run(vm, "vm-flags.txt", "VM.flags")
	c.run(vm, "vm-flags-all.txt", "VM.flags -all")
	c.run(vm, "vm-system-properties.txt", "VM.system_properties")
	r, err := vm.Execute(ctx, "properties")
	if err != nil {
		t.Fatal(err)
	}
	c.write("properties.txt", string(r.Output))
	heap := filepath.Join(files, "heap.hprof")
	c.run(vm, "gc-heap-dump.txt", "GC.heap_dump "+heap)
	c.run(vm, "gc-heap-dump-exists.txt", "GC.heap_dump "+heap)
	c.run(vm, "gc-heap-dump-gz.txt", "GC.heap_dump -gz=1 -overwrite "+heap)
	os.Remove(heap)
	c.run(vm, "gc-heap-dump-nodir.txt", "GC.heap_dump /nonexistent/heap.hprof")
	if jdk.Feature >= 21 {
		c.run(vm, "thread-dump-to-file.txt", "Thread.dump_to_file "+filepath.Join(files, "threads.txt"))
		c.run(vm, "thread-dump-to-file-json.txt", "Thread.dump_to_file -format=json "+filepath.Join(files, "threads.json"))
	}
	if jdk.Feature >= 25 {
		c.run(vm, "system-dump-map.txt", "System.dump_map -F="+filepath.Join(files, "vm.map"))
		os.Remove(filepath.Join(files, "vm.map"))
	}
	if jdk.Feature >= 22 {
		c.run(vm, "compiler-perfmap.txt", "Compiler.perfmap "+filepath.Join(files, "perf.map"))
	} else {
		c.run(vm, "compiler-perfmap.txt", "Compiler.perfmap")
		os.Remove(fmt.Sprintf("/tmp/perf-%d.map", sleeper.NSPID))
	}
	for _, f := range []string{"timed.jfr", "short.jfr", "atexit.jfr", "t1.jfr", "my rec.jfr", "all.jfr", "roots.jfr",
		"nope.jfr", "later.jfr", "timed-stop.jfr", "my rec stop.jfr", "threads.txt", "threads.json", "perf.map"} {
		os.Remove(filepath.Join(files, f))
	}
	sleeper.Stop()

	// Thread dumps of the Demo workload (blocked and waiting threads) and of a deadlock.
	demo := testutil.StartJVM(t, jdk, testutil.JVMOptions{Main: "Demo"})
	vm = dial(demo)
	c.run(vm, "thread-print.txt", "Thread.print")
	c.run(vm, "thread-print-l.txt", "Thread.print -l")
	c.run(vm, "thread-print-e.txt", "Thread.print -e")
	r, err = vm.Execute(ctx, "threaddump", "-l")
	if err != nil {
		t.Fatal(err)
	}
	c.write("threaddump.txt", string(r.Output))
	demo.Stop()

	classes := testutil.CompileFiles(t, jdk, filepath.Join("testdata", "Deadlock.java"))
	dl := testutil.StartJVM(t, jdk, testutil.JVMOptions{Main: "Deadlock", ClassPath: classes})
	vm = dial(dl)
	c.run(vm, "thread-print-deadlock.txt", "Thread.print -l")
	dl.Stop()

	// On-demand debugging: onjcmd=y exists up to JDK 23 (JDK-8336401 removed it in 24).
	jdwp := "-agentlib:jdwp=transport=dt_socket,server=y,suspend=n,onjcmd=y,address=127.0.0.1:0"
	if jdk.Feature < 24 {
		dbg := testutil.StartJVM(t, jdk, testutil.JVMOptions{JVMArgs: []string{jdwp}})
		vm = dial(dbg)
		c.run(vm, "debugging-started.txt", "VM.start_java_debugging")
		c.run(vm, "debugging-again.txt", "VM.start_java_debugging")
		dbg.Stop()
	} else {
		out, err := exec.CommandContext(ctx, jdk.Bin("java"), jdwp, "-version").CombinedOutput()
		c.write("debugging-onjcmd-rejected.txt", fmt.Sprintf("$ java %s -version\n%s(%v)\n", jdwp, out, err))
	}
	c.write("MANIFEST", "# file\tstatus\tcommand line\n"+c.manifest.String())
}

// goldenJDKs are the directories of golden outputs, one per captured JDK.
var goldenJDKs = []string{"jdk17", "jdk25"}

func golden(t testing.TB, jdk, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", jdk, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func goldenFiles(t testing.TB, pattern string) []string {
	t.Helper()
	var files []string
	for _, jdk := range goldenJDKs {
		m, err := filepath.Glob(filepath.Join("testdata", jdk, pattern))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) == 0 {
		t.Fatalf("no golden file matches %s", pattern)
	}
	return files
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// manifest maps the golden files of a JDK to the command lines that produced them.
func manifest(t testing.TB, jdk string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, l := range strings.Split(golden(t, jdk, "MANIFEST"), "\n") {
		f := strings.SplitN(l, "\t", 3)
		if len(f) == 3 && !strings.HasPrefix(l, "#") {
			m[f[0]] = f[2]
		}
	}
	return m
}

func helpOf(t testing.TB, jdk, cmd string) *jcmd.Command {
	t.Helper()
	c, err := jcmd.ParseHelp(golden(t, jdk, "help/"+cmd+".txt"))
	if err != nil {
		t.Fatalf("%s help %s: %v", jdk, cmd, err)
	}
	return c
}

func TestParseHelpList(t *testing.T) {
	for _, jdk := range goldenJDKs {
		names, err := jcmd.ParseHelpList(golden(t, jdk, "help.txt"))
		if err != nil {
			t.Fatal(err)
		}
		listed := 0
		in := false
		for _, l := range strings.Split(golden(t, jdk, "help.txt"), "\n") {
			switch {
			case strings.HasPrefix(l, "The following"):
				in = true
			case in && l == "":
				in = false
			case in:
				listed++
			}
		}
		if len(names) != listed {
			t.Errorf("%s: %d names, %d listed", jdk, len(names), listed)
		}
		all, err := jcmd.ParseHelpList(golden(t, jdk, "help-all.txt"))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(names, all); diff != "" {
			t.Errorf("%s: help and help -all differ (-help +help -all):\n%s", jdk, diff)
		}
		want := map[string][]string{
			"jdk17": {"JFR.start", "Thread.print", "VM.print_touched_methods", "Compiler.perfmap"},
			"jdk25": {"JFR.start", "JFR.view", "Thread.dump_to_file", "System.map", "AOT.end_recording"},
		}[jdk]
		for _, w := range want {
			if !slices.Contains(names, w) {
				t.Errorf("%s: %s missing from %v", jdk, w, names)
			}
		}
		if slices.Contains(names, "VM.start_java_debugging") {
			t.Errorf("%s: the hidden VM.start_java_debugging is listed", jdk)
		}
	}
	for _, bad := range []string{"", "Help unavailable : 'x' : No such command\n", "java.lang.IllegalArgumentException: Unknown diagnostic command\n"} {
		if names, err := jcmd.ParseHelpList(bad); err == nil {
			t.Errorf("ParseHelpList(%q) = %v, want an error", bad, names)
		}
	}
}

var knownTypes = []string{"STRING", "BOOLEAN", "NANOTIME", "MEMORY SIZE", "JLONG", "INT", "FILE", "STRING SET"}

// TestParseHelpAll parses every command's help on both JDKs: one option per tab-indented line of
// HotSpot's layout, a type the parser knows for every option.
func TestParseHelpAll(t *testing.T) {
	for _, f := range goldenFiles(t, "help/*.txt") {
		text := readFile(t, f)
		name := strings.TrimSuffix(filepath.Base(f), ".txt")
		c, err := jcmd.ParseHelp(text)
		if strings.Contains(text, "No such command") {
			if !errors.Is(err, jcmd.ErrUnknownCommand) {
				t.Errorf("%s: %v, want ErrUnknownCommand", f, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if c.Name != name || c.Impact == "" || c.Description == "" {
			t.Errorf("%s: name %q impact %q description %q", f, c.Name, c.Impact, c.Description)
		}
		tabs := 0
		for _, l := range strings.Split(text, "\n") {
			if strings.HasPrefix(l, "\t") {
				tabs++
			}
		}
		hidden := 0
		for _, o := range c.Options {
			if o.Hidden {
				hidden++
			}
		}
		if n := len(c.Arguments) + len(c.Options) - hidden; tabs > 0 && n != tabs {
			t.Errorf("%s: %d arguments and options, %d lines", f, n, tabs)
		}
		for _, o := range slices.Concat(c.Arguments, c.Options) {
			if !slices.Contains(knownTypes, o.Type) {
				t.Errorf("%s: %s has type %q", f, o.Name, o.Type)
			}
		}
	}
}

// optionSummary renders an option as "name TYPE default [flags]" for table tests.
func optionSummary(o jcmd.Option) string {
	s := o.Name + " " + o.Type + " " + strconv.Quote(o.Default)
	for _, f := range []struct {
		on   bool
		name string
	}{{o.Required, "required"}, {o.Multiple, "multiple"}, {o.Hidden, "hidden"}} {
		if f.on {
			s += " " + f.name
		}
	}
	if len(o.Values) > 0 {
		s += " [" + strings.Join(o.Values, "|") + "]"
	}
	return s
}

func summaries(opts []jcmd.Option) []string {
	var s []string
	for _, o := range opts {
		s = append(s, optionSummary(o))
	}
	return s
}

func TestParseHelpCommands(t *testing.T) {
	jfrStart := func(filename string) []string {
		return []string{
			`delay NANOTIME "0s"`, `disk BOOLEAN "true"`, `dumponexit BOOLEAN "false"`, `duration NANOTIME "0s"`,
			`filename ` + filename + ` ""`, `maxage NANOTIME "0s"`, `maxsize MEMORY SIZE "0 (no max size)"`,
			`name STRING "system-generated default name"`, `path-to-gc-roots BOOLEAN "false"`,
			`settings STRING SET "JAVA-HOME/lib/jfr/default.jfc" multiple`, `flush-interval NANOTIME "1s" hidden`,
		}
	}
	jfrDump := func(filename string) []string {
		return []string{`begin STRING ""`, `end STRING ""`, `filename ` + filename + ` ""`, `maxage NANOTIME ""`,
			`maxsize MEMORY SIZE ""`, `name STRING ""`, `path-to-gc-roots BOOLEAN "false"`}
	}
	heapDump := []string{`-all BOOLEAN "false"`, `-gz INT "1"`, `-overwrite BOOLEAN "false"`}
	for _, tc := range []struct {
		jdk, cmd   string
		syntax     string
		permission string
		args, opts []string
		controls   []string
	}{
		{jdk: "jdk17", cmd: "JFR.start", syntax: "JFR.start [options]", permission: "java.lang.management.ManagementPermission(monitor)",
			opts: jfrStart("STRING"), controls: []string{
				`gc off|normal|detailed|high|all "normal" [off|normal|detailed|high|all]`,
				`allocation-profiling off|low|medium|high|maximum "low" [off|low|medium|high|maximum]`,
				`compiler off|normal|detailed|all "normal" [off|normal|detailed|all]`,
				`method-profiling off|normal|high|max "normal" [off|normal|high|max]`,
				`thread-dump off|once|60s|10s|1s "once" [off|once|60s|10s|1s]`,
				`exceptions off|errors|all "errors" [off|errors|all]`,
				`memory-leaks off|types|stack-traces|gc-roots "types" [off|types|stack-traces|gc-roots]`,
				`locking-threshold timespan "20 ms"`, `file-threshold timespan "20 ms"`, `socket-threshold timespan "20 ms"`,
				`class-loading true|false "false" [true|false]`,
			}},
		{jdk: "jdk25", cmd: "JFR.start", syntax: "JFR.start [options]", opts: jfrStart("FILE"), controls: []string{
			`gc off|normal|detailed|high|all "normal" [off|normal|detailed|high|all]`,
			`allocation-profiling off|low|medium|high|maximum "low" [off|low|medium|high|maximum]`,
			`compiler off|normal|detailed|all "normal" [off|normal|detailed|all]`,
			`method-profiling off|normal|high|max "normal" [off|normal|high|max]`,
			`thread-dump off|once|60s|10s|1s "once" [off|once|60s|10s|1s]`,
			`exceptions off|throttled|all "throttled" [off|throttled|all]`,
			`memory-leaks off|types|stack-traces|gc-roots "types" [off|types|stack-traces|gc-roots]`,
			`locking-threshold timespan "20ms"`, `method-timing method-filter ""`, `method-trace method-filter ""`,
			`class-loading true|false "false" [true|false]`,
		}},
		{jdk: "jdk17", cmd: "JFR.dump", syntax: "JFR.dump [options]", permission: "java.lang.management.ManagementPermission(monitor)", opts: jfrDump("STRING")},
		{jdk: "jdk25", cmd: "JFR.dump", syntax: "JFR.dump [options]", opts: jfrDump("FILE")},
		{jdk: "jdk17", cmd: "JFR.stop", syntax: "JFR.stop [options]", permission: "java.lang.management.ManagementPermission(monitor)",
			opts: []string{`filename STRING ""`, `name STRING "" required`}},
		{jdk: "jdk25", cmd: "JFR.stop", syntax: "JFR.stop [options]", opts: []string{`filename FILE ""`, `name STRING "" required`}},
		{jdk: "jdk25", cmd: "JFR.check", syntax: "JFR.check [options]", opts: []string{`name STRING ""`, `verbose BOOLEAN "false"`}},
		{jdk: "jdk17", cmd: "JFR.configure", permission: "java.lang.management.ManagementPermission(monitor)", opts: []string{
			`globalbuffercount JLONG "default determined by the value for memorysize"`,
			`globalbuffersize MEMORY SIZE "default determined by the value for memorysize"`,
			`maxchunksize MEMORY SIZE "12M"`, `memorysize MEMORY SIZE "10M"`,
			`repositorypath STRING "The default location is the temporary directory for the operating system. On Linux operating systems, the temporary directory is /tmp. On Windows, the temporary directory is specified by the TMP environment variable."`,
			`stackdepth JLONG "64"`, `thread_buffer_size MEMORY SIZE "8k"`, `samplethreads BOOLEAN "true"`, `dumppath STRING "" hidden`,
		}},
		{jdk: "jdk25", cmd: "JFR.configure", opts: []string{
			`globalbuffercount JLONG "default determined by the value for memorysize"`,
			`globalbuffersize MEMORY SIZE "default determined by the value for memorysize"`,
			`maxchunksize MEMORY SIZE "12M"`, `memorysize MEMORY SIZE "10M"`,
			`repositorypath STRING "The default location is the temporary directory for the operating system. On Linux operating systems, the temporary directory is /tmp. On Windows, the temporary directory is specified by the TMP environment variable"`,
			`dumppath STRING "The default location is the current directory"`,
			`stackdepth JLONG "64"`, `thread_buffer_size MEMORY SIZE "8k"`, `preserve-repository BOOLEAN "false"`,
			`samplethreads BOOLEAN "true" hidden`,
		}},
		{jdk: "jdk25", cmd: "JFR.view", args: []string{`view STRING "" required`}, opts: []string{
			`cell-height INT ""`, `maxage NANOTIME "10m"`, `maxsize MEMORY SIZE "32MB"`, `truncate STRING "end"`,
			`verbose BOOLEAN "false"`, `width INT "100"`}},
		{jdk: "jdk17", cmd: "GC.heap_dump", syntax: "GC.heap_dump [options] <filename>", permission: "java.lang.management.ManagementPermission(monitor)",
			args: []string{`filename STRING "" required`}, opts: heapDump},
		{jdk: "jdk25", cmd: "GC.heap_dump", syntax: "GC.heap_dump [options] <filename>",
			args: []string{`filename FILE "" required`}, opts: append(slices.Clone(heapDump), `-parallel INT "1"`)},
		{jdk: "jdk17", cmd: "Compiler.perfmap", syntax: "Compiler.perfmap", permission: "java.lang.management.ManagementPermission(monitor)"},
		{jdk: "jdk25", cmd: "Compiler.perfmap", syntax: "Compiler.perfmap [<filename>]", args: []string{`filename FILE "/tmp/perf-%p.map"`}},
		{jdk: "jdk25", cmd: "VM.flags", syntax: "VM.flags [options]", opts: []string{`-all BOOLEAN "false"`}},
		{jdk: "jdk17", cmd: "Thread.print", syntax: "Thread.print [options]", permission: "java.lang.management.ManagementPermission(monitor)",
			opts: []string{`-l BOOLEAN "false"`, `-e BOOLEAN "false"`}},
		{jdk: "jdk25", cmd: "Thread.print", syntax: "Thread.print [options]", opts: []string{`-l BOOLEAN "false"`, `-e BOOLEAN "false"`}},
		{jdk: "jdk25", cmd: "VM.system_properties", syntax: "VM.system_properties"},
		{jdk: "jdk17", cmd: "VM.start_java_debugging", syntax: "VM.start_java_debugging", permission: "java.lang.management.ManagementPermission(control)"},
		{jdk: "jdk25", cmd: "VM.set_flag", syntax: "VM.set_flag <flag name> [<string value>]",
			args: []string{`flag name STRING "" required`, `string value STRING ""`}},
		{jdk: "jdk25", cmd: "help", syntax: "help [options] [<command name>]", args: []string{`command name STRING ""`}, opts: []string{`-all BOOLEAN "false"`}},
		{jdk: "jdk25", cmd: "Thread.dump_to_file", syntax: "Thread.dump_to_file [options] <filepath>",
			args: []string{`filepath FILE "" required`}, opts: []string{`-overwrite BOOLEAN "false"`, `-format STRING "plain"`}},
	} {
		c := helpOf(t, tc.jdk, tc.cmd)
		got := struct {
			Syntax, Permission   string
			Args, Opts, Controls []string
		}{c.Syntax, c.Permission, summaries(c.Arguments), summaries(c.Options), summaries(c.Controls)}
		want := struct {
			Syntax, Permission   string
			Args, Opts, Controls []string
		}{tc.syntax, tc.permission, tc.args, tc.opts, tc.controls}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s %s (-want +got):\n%s", tc.jdk, tc.cmd, diff)
		}
		if wantES := tc.cmd == "JFR.start"; c.EventSettings != wantES {
			t.Errorf("%s %s: EventSettings %t", tc.jdk, tc.cmd, c.EventSettings)
		}
	}
}

func TestParseHelpErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "empty output"},
		{"Help unavailable : 'JFR.strat' : No such command\n", `unknown diagnostic command "JFR.strat"`}, //nolint:misspell // a misspelt command
		{"java.lang.IllegalArgumentException: Unknown diagnostic command\n", "not a command name"},
		{"VM.version\nno impact line here\n", "no Impact line"},
	} {
		_, err := jcmd.ParseHelp(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseHelp(%q) = %v, want an error with %q", tc.in, err, tc.want)
		}
	}
}

func TestSplitLine(t *testing.T) {
	for _, tc := range []struct {
		line string
		want []string
		err  string
	}{
		{"", nil, ""},
		{"   ", nil, ""},
		{"VM.version", []string{"VM.version"}, ""},
		{"  JFR.start  name=t1   settings=profile ", []string{"JFR.start", "name=t1", "settings=profile"}, ""},
		{"VM.flags\t-all", []string{"VM.flags", "-all"}, ""},
		{"JFR.start name='my rec' filename=\"/tmp/a b.jfr\"", []string{"JFR.start", "name='my rec'", `filename="/tmp/a b.jfr"`}, ""},
		{`GC.heap_dump "/tmp/x y.hprof"`, []string{"GC.heap_dump", `"/tmp/x y.hprof"`}, ""},
		{`JFR.check name="a \" b"`, []string{"JFR.check", `name="a \" b"`}, ""},
		{`JFR.check name='it"s'`, []string{"JFR.check", `name='it"s'`}, ""},
		{"JFR.check a\tb", []string{"JFR.check", "a\tb"}, ""}, // only spaces separate arguments
		{"JFR.check name='a b", nil, "unterminated ' quote"},
		{`JFR.check name="a`, nil, "unterminated \" quote"},
		{"VM.version\nVM.uptime", nil, "newline"},
	} {
		got, err := jcmd.SplitLine(tc.line)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("SplitLine(%q) = %q, %v; want error %q", tc.line, got, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("SplitLine(%q) = %q, %v; want %q", tc.line, got, err, tc.want)
		}
	}
}

func TestCheck(t *testing.T) {
	//nolint:misspell // misspelt options are the point of the test
	for _, tc := range []struct {
		jdk, cmd, line string
		option         string // "" when the line is valid
		suggestion     string
		reason         string
	}{
		// Valid lines.
		{"jdk17", "JFR.start", "", "", "", ""},
		{"jdk25", "JFR.start", "name=t1 settings=profile settings=my.jfc duration=10s maxsize=100M maxage=2d disk=true", "", "", ""},
		{"jdk17", "JFR.start", "delay=5m dumponexit=true filename=/tmp/x.jfr path-to-gc-roots=false flush-interval=2s", "", "", ""},
		{"jdk17", "JFR.start", "gc=high memory-leaks=gc-roots file-threshold=10ms socket-threshold='20 ms' exceptions=errors", "", "", ""},
		{"jdk25", "JFR.start", "gc=high method-timing=java.lang.String::length method-trace=Foo::bar exceptions=throttled class-loading=true", "", "", ""},
		{"jdk25", "JFR.start", "jdk.ThreadSleep#threshold=10ms +Custom#enabled=true", "", "", ""},
		{"jdk25", "JFR.start", "settings=my.jfc my-own-option=42", "", "", ""},
		{"jdk25", "JFR.start", "maxsize=512k maxage=100ms duration=1h delay=2d", "", "", ""},
		{"jdk25", "JFR.start", "maxsize=1g maxsize=2g", "maxsize", "", "given more than once"},
		{"jdk25", "JFR.dump", "name=t1 path-to-gc-roots=true filename='/tmp/a b.jfr' maxage=0 maxsize=0 begin=-10m", "", "", ""},
		{"jdk17", "JFR.stop", "name=t1 filename=x.jfr", "", "", ""},
		{"jdk25", "JFR.check", "verbose=true name=1", "", "", ""},
		{"jdk17", "JFR.configure", "stackdepth=128 memorysize=100M samplethreads dumppath=/tmp globalbuffercount=-1", "", "", ""},
		{"jdk25", "JFR.configure", "preserve-repository=true samplethreads=TRUE repositorypath", "", "", ""},
		{"jdk25", "JFR.view", "maxage=1h width=80 hot-methods", "", "", ""},
		{"jdk25", "GC.heap_dump", "-all -gz=1 -overwrite -parallel=4 /tmp/heap.hprof", "", "", ""},
		// JDK 17's help lists fold without [optional], but its default (true) is its value (HotSpot's
		// DCmdParser::check): jcmd runs the line.
		{"jdk17", "VM.classloaders", "show-classes", "", "", ""},
		{"jdk17", "VM.classloaders", "verbose=true", "", "", ""},
		{"jdk17", "GC.heap_dump", "'/tmp/a=b.hprof'", "", "", ""},
		{"jdk25", "Thread.print", "-l -e=false", "", "", ""},
		{"jdk17", "Thread.print", "-l=TRUE", "", "", ""},
		{"jdk25", "VM.set_flag", "PrintConcurrentLocks true", "", "", ""},
		{"jdk25", "Compiler.perfmap", "/tmp/perf.map", "", "", ""},
		{"jdk25", "VM.version", "", "", "", ""},

		// Unknown options, with the closest name.
		{"jdk25", "JFR.dump", "path-to-gc-root=true", "path-to-gc-root", "path-to-gc-roots", "unknown option"},
		{"jdk17", "JFR.start", "nmae=x", "nmae", "name", "unknown option"},
		{"jdk17", "JFR.start", "Name=x", "Name", "name", "unknown option"},
		{"jdk25", "JFR.start", "dely=1h", "dely", "delay", "unknown option"},
		{"jdk25", "JFR.start", "gcc=high", "gcc", "gc", "unknown option"},
		{"jdk25", "JFR.start", "foo=bar", "foo", "", "unknown option"},
		{"jdk25", "JFR.start", "file-threshold=10ms", "file-threshold", "", "unknown option"},
		{"jdk17", "JFR.start", "method-timing=java.lang.String::length", "method-timing", "", "unknown option"},
		{"jdk25", "JFR.start", "settings=my.jfc nmae=x", "nmae", "name", "unknown option"},
		{"jdk25", "JFR.check", "verbos=true", "verbos", "verbose", "unknown option"},
		{"jdk25", "JFR.check", "nope", "nope", "", "unknown option"},
		{"jdk17", "JFR.configure", "stack-depth=64", "stack-depth", "stackdepth", "unknown option"},
		{"jdk17", "JFR.configure", "preserve-repository=true", "preserve-repository", "", "unknown option"},
		{"jdk25", "VM.flags", "-al", "-al", "-all", "unknown option"},
		{"jdk25", "VM.uptime", "-d", "-d", "-date", "unknown option"},
		{"jdk25", "Thread.print", "-x", "-x", "", "unknown option"},
		{"jdk25", "GC.heap_dump", "-paralel=2 /tmp/x", "-paralel", "-parallel", "unknown option"},
		{"jdk25", "help", "-al", "-al", "-all", "unknown option"},
		{"jdk25", "Compiler.memory", "-minsize=1k", "-minsize", "minsize", "unknown option"},

		// Bad values.
		{"jdk25", "JFR.start", "disk=maybe", "disk", "", `invalid BOOLEAN value "maybe"`},
		{"jdk25", "JFR.check", "verbose", "verbose", "", "needs a value"},
		{"jdk17", "JFR.check", "verbose=TRUE", "verbose", "", "invalid BOOLEAN"},
		{"jdk25", "Thread.print", "-l=maybe", "-l", "", "invalid BOOLEAN"},
		{"jdk25", "JFR.start", "duration=10", "duration", "", "invalid NANOTIME"},
		{"jdk25", "JFR.start", "duration=1S", "duration", "", "invalid NANOTIME"},
		{"jdk25", "JFR.start", "duration=1.5h", "duration", "", "invalid NANOTIME"},
		{"jdk25", "JFR.start", "maxage=1w", "maxage", "", "invalid NANOTIME"},
		{"jdk25", "JFR.start", "duration=0", "duration", "", "at least 1s"},
		{"jdk25", "JFR.start", "delay=500ms", "delay", "", "at least 1s"},
		{"jdk25", "JFR.start", "name=123", "name", "", "numeric"},
		{"jdk25", "JFR.start", "settings=", "settings", "", "settings=none"},
		{"jdk25", "JFR.start", "maxsize=10q", "maxsize", "", "invalid MEMORY SIZE"},
		{"jdk25", "JFR.dump", "maxsize=-1", "maxsize", "", "invalid MEMORY SIZE"},
		{"jdk17", "JFR.configure", "memorysize=10q", "memorysize", "", "invalid MEMORY SIZE"},
		{"jdk17", "JFR.configure", "stackdepth=64x", "stackdepth", "", "invalid JLONG"},
		{"jdk17", "JFR.configure", "stackdepth=", "stackdepth", "", "invalid JLONG"},
		{"jdk25", "GC.heap_dump", "-gz=x /tmp/x", "-gz", "", "invalid INT"},
		{"jdk25", "GC.heap_dump", "-gz /tmp/x", "-gz", "", "needs a value"},
		{"jdk25", "JFR.view", "width=-1 gc", "width", "", "must not be negative"},
		{"jdk25", "JFR.start", "gc=bogus", "gc", "", "want one of off, normal, detailed, high, all"},
		{"jdk17", "JFR.start", "exceptions=throttled", "exceptions", "", "want one of off, errors, all"},
		{"jdk25", "JFR.start", "class-loading=maybe", "class-loading", "", "want one of true, false"},
		{"jdk25", "JFR.start", "locking-threshold=abc", "locking-threshold", "", "invalid timespan"},
		{"jdk25", "JFR.start", "locking-threshold=20", "locking-threshold", "", "invalid timespan"},
		{"jdk25", "JFR.start", "#enabled=true", "#enabled", "", "<event>#<setting>"},
		{"jdk25", "JFR.start", "jdk.ThreadSleep#=1", "jdk.ThreadSleep#", "", "<event>#<setting>"},
		{"jdk25", "JFR.start", "jdk.ThreadSleep#enabled", "jdk.ThreadSleep#enabled", "", "needs a value"},

		// Counts, duplicates, quoting.
		{"jdk25", "GC.heap_dump", "", "filename", "", "missing mandatory argument"},
		{"jdk25", "GC.heap_dump", "/tmp/a /tmp/b", "/tmp/b", "", "unknown argument"},
		{"jdk25", "GC.heap_dump", "/tmp/a=b.hprof", "/tmp/a=b.hprof", "", `the JVM would take only "/tmp/a" as <filename>`},
		{"jdk17", "JFR.stop", "", "name", "", "missing mandatory option"},
		{"jdk25", "JFR.view", "", "view", "", "missing mandatory argument"},
		{"jdk25", "JFR.view", "gc extra", "extra", "", "unknown argument"},
		{"jdk25", "JFR.check", "name=a name=b", "name", "", "given more than once"},
		{"jdk25", "Thread.print", "-l -l", "-l", "", "given more than once"},
		{"jdk25", "VM.version", "foo", "foo", "", "takes no arguments"},
		{"jdk17", "Compiler.perfmap", "/tmp/x", "/tmp/x", "", "takes no arguments"},
		{"jdk25", "JFR.check", "name='x'y", "name='x'y", "", `unexpected "y" after a closing quote`},
		{"jdk25", "JFR.check", "name='x", "name='x", "", "unterminated ' quote"},
		{"jdk25", "JFR.check", "=x", "=x", "", "empty option name"},
	} {
		c := helpOf(t, tc.jdk, tc.cmd)
		words, err := jcmd.SplitLine("X " + tc.line)
		if err != nil {
			words = append([]string{"X"}, strings.Fields(tc.line)...)
		}
		err = c.Check(words[1:])
		if tc.option == "" {
			if err != nil {
				t.Errorf("%s %s %s: %v", tc.jdk, tc.cmd, tc.line, err)
			}
			continue
		}
		var oe *jcmd.OptionError
		if !errors.As(err, &oe) {
			t.Errorf("%s %s %s: %v, want *OptionError", tc.jdk, tc.cmd, tc.line, err)
			continue
		}
		if oe.Command != tc.cmd || oe.Option != tc.option || oe.Suggestion != tc.suggestion || !strings.Contains(oe.Reason, tc.reason) {
			t.Errorf("%s %s %s: %+v, want option %q suggestion %q reason %q", tc.jdk, tc.cmd, tc.line, *oe, tc.option, tc.suggestion, tc.reason)
		}
	}
}

func TestOptionErrorMessage(t *testing.T) {
	for _, tc := range []struct {
		e    jcmd.OptionError
		want string
	}{
		{jcmd.OptionError{Command: "JFR.dump", Option: "path-to-gc-root", Suggestion: "path-to-gc-roots", Reason: "unknown option"},
			`JFR.dump: unknown option "path-to-gc-root"; did you mean "path-to-gc-roots"?`},
		{jcmd.OptionError{Command: "GC.heap_dump", Option: "filename", Reason: "missing mandatory argument"},
			`GC.heap_dump: missing mandatory argument "filename"`},
		{jcmd.OptionError{Command: "JFR.start", Option: "disk", Reason: `invalid BOOLEAN value "maybe": want true or false`},
			`JFR.start: "disk": invalid BOOLEAN value "maybe": want true or false`},
		{jcmd.OptionError{Command: "VM.version", Reason: "takes no arguments"}, `VM.version: takes no arguments`},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("Error() = %s, want %s", got, tc.want)
		}
	}
}

// jvmParseErrors are the messages of the JVMs' parsers. JFR's Java-side parser reports them with
// status 0, so they are told apart by their text.
var jvmParseErrors = []string{
	"Boolean parsing error", "Integer parsing error", "Parsing error memory size", "Unknown argument",
	"Format error in diagnostic command arguments", "Duplicates in diagnostic command arguments",
	"is mandatory", "Expected delimiter", "Did you mean", "can only be specified once", "should be empty",
	// Refused by JFR.start when it runs, and by Check before.
	"Name of recording can't be numeric", "must be at least 1 second", "Incorrect value", "is not a valid timespan",
	"is missing unit", "No settings specified",
	// Accepted with a warning that the option does nothing; Check refuses.
	"doesn't exist.",
}

// checkDeviations are lines on which Check knowingly disagrees with the JVM: it refuses what the JVM
// accepts but reads differently from what was meant, or not at all.
var checkDeviations = map[string]string{
	"JFR.configure memorysize=10q":   "HotSpot ignores what follows the number: 10 bytes",
	"JFR.configure maxchunksize=1x5": "HotSpot takes 1 byte",
	"GC.heap_dump /nonexistent/a=b":  "HotSpot cuts the argument at '=' and writes /nonexistent/a",
	"help -al":                       "a misspelt option taken for the command name",
	"JFR.stop":                       "JDK 25's JFR parser does not enforce the mandatory name (it then fails with \"null\")",
	"JFR.view":                       "JDK 25's JFR parser does not enforce the mandatory view",
}

// TestCheckAgainstJVM replays the lines that the JVMs judged (testdata/<jdk>/checks.json): Check must
// refuse what the JVM refused while parsing and accept what it accepted.
func TestCheckAgainstJVM(t *testing.T) {
	for _, jdk := range goldenJDKs {
		var cases []checkCase
		if err := json.Unmarshal([]byte(golden(t, jdk, "checks.json")), &cases); err != nil {
			t.Fatal(err)
		}
		helps := map[string]*jcmd.Command{}
		tested := 0
		for _, cs := range cases {
			words, splitErr := jcmd.SplitLine(cs.Line)
			jvmRefused := !cs.OK
			for _, e := range jvmParseErrors {
				if strings.Contains(cs.Output, e) {
					jvmRefused = true
				}
			}
			if strings.Contains(cs.Output, "Unknown diagnostic command") {
				continue // not a command of this JDK
			}
			var err error
			if splitErr != nil {
				err = splitErr
			} else {
				c, ok := helps[words[0]]
				if !ok {
					c = helpOf(t, jdk, words[0])
					helps[words[0]] = c
				}
				err = c.Check(words[1:])
			}
			tested++
			if reason, ok := checkDeviations[cs.Line]; ok {
				if err == nil {
					t.Errorf("%s: %q: accepted, but Check is meant to refuse it (%s)", jdk, cs.Line, reason)
				}
				continue
			}
			switch {
			case jvmRefused && err == nil:
				t.Errorf("%s: %q: the JVM refused it (%q), Check accepts it", jdk, cs.Line, strings.TrimSpace(cs.Output))
			case !jvmRefused && err != nil:
				t.Errorf("%s: %q: the JVM accepted it (%q), Check says %v", jdk, cs.Line, excerptText(cs.Output), err)
			}
		}
		if tested < 100 {
			t.Errorf("%s: only %d lines tested", jdk, tested)
		}
	}
}

func excerptText(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 100 {
		return s[:100] + "..."
	}
	return s
}

func TestParseJFRCheck(t *testing.T) {
	type rec struct {
		ID       int
		Name     string
		State    string
		Duration time.Duration
		MaxAge   time.Duration
		MaxSize  int64
	}
	want := []rec{
		{1, "1", "running", 0, 0, 250 << 20},
		{2, "t1", "running", 0, 0, 250 << 20},
		{3, "my rec", "running", 0, 0, 250 << 20},
		{4, "later", "delayed", 0, 0, 250 << 20},
		{5, "timed", "running", time.Hour, 0, 0},
		{7, "prof", "running", 0, 10 * time.Minute, 100 << 20},
		{8, "mem", "running", 0, 0, 0},
		{9, "atexit", "running", 0, 0, 250 << 20},
		{10, "gone", "stopped", time.Second, 0, 0},
	}
	strip := func(recs []jcmd.Recording) []rec {
		var out []rec
		for _, r := range recs {
			out = append(out, rec{r.ID, r.Name, r.State, r.Duration, r.MaxAge, r.MaxSize})
		}
		return out
	}
	for _, jdk := range goldenJDKs {
		recs, err := jcmd.ParseJFRCheck(golden(t, jdk, "jfr-check.txt"))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, strip(recs)); diff != "" {
			t.Errorf("%s jfr-check.txt (-want +got):\n%s", jdk, diff)
		}
		for _, r := range recs {
			if r.Settings != nil {
				t.Errorf("%s: settings without verbose: %d", jdk, len(r.Settings))
			}
		}
		verbose, err := jcmd.ParseJFRCheck(golden(t, jdk, "jfr-check-verbose.txt"))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(strip(recs), strip(verbose)); diff != "" {
			t.Errorf("%s: verbose lists other recordings (-plain +verbose):\n%s", jdk, diff)
		}
		text := golden(t, jdk, "jfr-check-verbose.txt")
		perRecording := strings.Count(text, "\n   [") / len(verbose)
		for _, r := range verbose {
			if len(r.Settings) < perRecording {
				t.Errorf("%s: recording %d has %d settings, want at least %d", jdk, r.ID, len(r.Settings), perRecording)
			}
		}
		prof, err := jcmd.ParseJFRCheck(golden(t, jdk, "jfr-check-verbose-name.txt"))
		if err != nil || len(prof) != 1 {
			t.Fatalf("%s: %v %v", jdk, prof, err)
		}
		for k, v := range map[string]string{"jdk.ActiveRecording#enabled": "true", "jdk.CPULoad#period": "1000 ms",
			"jdk.OldObjectSample#cutoff": "0 ns", "jdk.ThreadSleep#threshold": "10 ms"} {
			if got := prof[0].Settings[k]; got != v {
				t.Errorf("%s: %s = %q, want %q", jdk, k, got, v)
			}
		}
		if recs, err := jcmd.ParseJFRCheck(golden(t, jdk, "jfr-check-none.txt")); err != nil || recs == nil || len(recs) != 0 {
			t.Errorf("%s: no recordings: %v %v", jdk, recs, err)
		}
		if _, err := jcmd.ParseJFRCheck(golden(t, jdk, "jfr-check-missing.txt")); err == nil || !strings.Contains(err.Error(), "Could not find nope") {
			t.Errorf("%s: missing recording: %v", jdk, err)
		}
	}
	// Shapes the captures do not have: a method filter with commas, sizes in bytes and kB, a name
	// with a parenthesis, a filename.
	recs, err := jcmd.ParseJFRCheck("Recording 12: name=a (b) duration=90s maxsize=512 maxage=2d filename=/tmp/x.jfr (new)\n\n" +
		" Method Timing (jdk.MethodTiming)\n   [filter=Foo::a,Bar::b,enabled=true]\n\nRecording 13: name=x maxsize=1.5kB (closed)\n")
	if err != nil {
		t.Fatal(err)
	}
	wantRecs := []jcmd.Recording{
		{ID: 12, Name: "a (b)", State: "new", Duration: 90 * time.Second, MaxAge: 48 * time.Hour, MaxSize: 512,
			Destination: "/tmp/x.jfr", Settings: map[string]string{"jdk.MethodTiming#filter": "Foo::a,Bar::b", "jdk.MethodTiming#enabled": "true"}},
		{ID: 13, Name: "x", State: "closed", MaxSize: 1536},
	}
	if diff := cmp.Diff(wantRecs, recs); diff != "" {
		t.Errorf("synthetic (-want +got):\n%s", diff)
	}
	if _, err := jcmd.ParseJFRCheck("Could not find 2.\n\nUse JFR.check without options to see list of all available recordings.\n"); err == nil {
		t.Error("an error text parsed as no recordings")
	}
}

func TestParseJFRStart(t *testing.T) {
	for _, jdk := range goldenJDKs {
		for _, tc := range []struct {
			file string
			id   int
			name string
		}{
			{"jfr-start.txt", 1, "1"},
			{"jfr-start-name.txt", 2, "t1"},
			{"jfr-start-name-space.txt", 3, "my rec"},
			{"jfr-start-delay.txt", 4, "later"},
			{"jfr-start-duration.txt", 5, ""},
			{"jfr-start-short.txt", 6, ""},
			{"jfr-start-settings.txt", 7, "prof"},
			{"jfr-start-nodisk.txt", 8, "mem"},
			{"jfr-start-dumponexit.txt", 9, "atexit"},
			{"jfr-start-gone.txt", 10, ""},
		} {
			id, name, err := jcmd.ParseJFRStart(golden(t, jdk, tc.file))
			if err != nil || id != tc.id || name != tc.name {
				t.Errorf("%s %s: %d %q %v, want %d %q", jdk, tc.file, id, name, err, tc.id, tc.name)
			}
		}
		var cases []checkCase
		if err := json.Unmarshal([]byte(golden(t, jdk, "checks.json")), &cases); err != nil {
			t.Fatal(err)
		}
		started, refused := 0, 0
		for _, cs := range cases {
			if !strings.HasPrefix(cs.Line, "JFR.start") || !cs.OK {
				continue
			}
			id, _, err := jcmd.ParseJFRStart(cs.Output)
			ok := startedRecording.MatchString(cs.Output)
			switch {
			case ok && (err != nil || id == 0):
				started++
				t.Errorf("%s %q: %d %v", jdk, cs.Line, id, err)
			case ok:
				started++
			case err == nil:
				t.Errorf("%s %q: refusal %q parsed as recording %d", jdk, cs.Line, cs.Output, id)
			default:
				refused++
				if !strings.Contains(err.Error(), strings.TrimSpace(firstLineOf(cs.Output))) {
					t.Errorf("%s %q: error %v does not carry %q", jdk, cs.Line, err, cs.Output)
				}
			}
		}
		if started < 10 || refused < 5 {
			t.Errorf("%s: %d started, %d refused", jdk, started, refused)
		}
	}
	if _, _, err := jcmd.ParseJFRStart(""); err == nil {
		t.Error("empty output accepted")
	}
}

func firstLineOf(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// quotedWord matches filename=... and the last word of the command lines in MANIFEST.
var fileArg = regexp.MustCompile(`(?:filename=|-F=)('[^']*'|\S+)|(\S+)$`)

func TestDumpedPath(t *testing.T) {
	for _, jdk := range goldenJDKs {
		lines := manifest(t, jdk)
		written := map[string]bool{
			"jfr-dump.txt": true, "jfr-dump-space.txt": true, "jfr-dump-all.txt": true, "jfr-dump-gcroots.txt": true,
			"jfr-stop-file.txt": true, "jfr-stop-space.txt": true, "gc-heap-dump.txt": true, "gc-heap-dump-gz.txt": true,
			"thread-dump-to-file.txt": true, "thread-dump-to-file-json.txt": true, "system-dump-map.txt": true,
		}
		for file, line := range lines {
			path, ok := jcmd.DumpedPath(golden(t, jdk, file))
			if !written[file] {
				if ok {
					t.Errorf("%s %s: DumpedPath = %q, but nothing was written", jdk, file, path)
				}
				continue
			}
			m := fileArg.FindStringSubmatch(line)
			want := strings.Trim(m[1]+m[2], "'")
			if file == "jfr-dump-all.txt" || !strings.Contains(line, "/") {
				want = ""
			}
			if !ok || want != "" && path != want || !strings.HasPrefix(path, "/") {
				t.Errorf("%s %s: DumpedPath = %q, %t; want %q", jdk, file, path, ok, want)
			}
		}
	}
}

func TestParseDebugging(t *testing.T) {
	for _, f := range []string{"debugging-started.txt", "debugging-again.txt"} {
		d, err := jcmd.ParseDebugging(golden(t, "jdk17", f))
		if err != nil || *d != (jcmd.Debugging{Transport: "dt_socket", Address: "127.0.0.1:0"}) {
			t.Errorf("%s: %+v %v", f, d, err)
		}
	}
	for _, tc := range []struct{ jdk, file, want string }{
		{"jdk17", "debugging-none.txt", "Could not find jdwp agent."},
		{"jdk25", "debugging-none.txt", "Unknown diagnostic command"},
	} {
		d, err := jcmd.ParseDebugging(golden(t, tc.jdk, tc.file))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %s: %+v %v, want an error with %q", tc.jdk, tc.file, d, err, tc.want)
		}
	}
	if _, err := jcmd.ParseDebugging(""); err == nil {
		t.Error("empty output accepted")
	}
}

func TestParseFlags(t *testing.T) {
	for _, jdk := range goldenJDKs {
		short, err := jcmd.ParseFlags(golden(t, jdk, "vm-flags.txt"))
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(golden(t, jdk, "vm-flags.txt"), "-XX:"); len(short) != n {
			t.Errorf("%s: %d flags, %d printed", jdk, len(short), n)
		}
		all, err := jcmd.ParseFlags(golden(t, jdk, "vm-flags-all.txt"))
		if err != nil {
			t.Fatal(err)
		}
		rows := strings.Count(golden(t, jdk, "vm-flags-all.txt"), "\n") - 1 // less "[Global flags]"
		if len(all) != rows {
			t.Errorf("%s: %d flags, %d rows", jdk, len(all), rows)
		}
		byName := map[string]jcmd.Flag{}
		for _, f := range all {
			if f.Name == "" || f.Type == "" || f.Kind == "" || f.Origin == "" {
				t.Errorf("%s: incomplete %+v", jdk, f)
			}
			byName[f.Name] = f
		}
		// The one-line form lists the flags not at their default, with the values of the table, which
		// leaves out diagnostic and experimental flags (G1EagerReclaimRemSetThreshold, ...).
		found := 0
		for _, f := range short {
			g, ok := byName[f.Name]
			if !ok {
				continue
			}
			found++
			if g.Value != f.Value || g.Origin == "default" || f.Type == "bool" && g.Type != "bool" {
				t.Errorf("%s: -XX:%s=%s is %+v in -all", jdk, f.Name, f.Value, g)
			}
		}
		if found < len(short)/2 {
			t.Errorf("%s: only %d of %d flags found in -all", jdk, found, len(short))
		}
		for name, want := range map[string]jcmd.Flag{
			"UseG1GC":                    {Name: "UseG1GC", Type: "bool", Value: "true", Kind: "product", Origin: "ergonomic"},
			"ErrorFile":                  {Name: "ErrorFile", Type: "ccstr", Value: "", Kind: "product", Origin: "default"},
			"FlightRecorder":             {Name: "FlightRecorder", Type: "bool", Value: "true", Kind: "product", Origin: "management"},
			"HeapDumpOnOutOfMemoryError": {Name: "HeapDumpOnOutOfMemoryError", Type: "bool", Value: "false", Kind: "manageable", Origin: "default"},
		} {
			if got := byName[name]; got != want {
				t.Errorf("%s: %s = %+v, want %+v", jdk, name, got, want)
			}
		}
	}
	got, err := jcmd.ParseFlags("     bool PrintGC    = true     {product} {command line}\n" +
		"    ccstr OnError    = kill -9 %p     {product} {command line}\n")
	want := []jcmd.Flag{{Name: "PrintGC", Type: "bool", Value: "true", Kind: "product", Origin: "command line"},
		{Name: "OnError", Type: "ccstr", Value: "kill -9 %p", Kind: "product", Origin: "command line"}}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("synthetic table: %+v %v", got, err)
	}
	got, err = jcmd.ParseFlags("-XX:OnError=kill -9 %p -XX:-UseCompressedOops \n")
	want = []jcmd.Flag{{Name: "OnError", Value: "kill -9 %p"}, {Name: "UseCompressedOops", Type: "bool", Value: "false"}}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("synthetic line: %+v %v", got, err)
	}
	if _, err := jcmd.ParseFlags("java.lang.IllegalArgumentException: Unknown argument 'x' in diagnostic command.\n"); err == nil {
		t.Error("an error text parsed as flags")
	}
}

// storeProperties writes props the way java.util.Properties.store does (escUnicode true), with a
// comment and a date line, for the round trip.
func storeProperties(props map[string]string) string {
	esc := func(s string, key bool) string {
		var b strings.Builder
		for i, r := range s {
			switch {
			case r == ' ' && (key || i == 0):
				b.WriteString(`\ `)
			case r == '\t':
				b.WriteString(`\t`)
			case r == '\n':
				b.WriteString(`\n`)
			case r == '\r':
				b.WriteString(`\r`)
			case r == '\f':
				b.WriteString(`\f`)
			case strings.ContainsRune(`=:#!\`, r):
				b.WriteByte('\\')
				b.WriteRune(r)
			case r < 0x20 || r > 0x7e:
				for _, u := range utf16.Encode([]rune{r}) {
					fmt.Fprintf(&b, `\u%04X`, u)
				}
			default:
				b.WriteRune(r)
			}
		}
		return b.String()
	}
	var b strings.Builder
	b.WriteString("#a comment\n#Sat Nov 21 13:19:33 UTC 2026\n")
	for _, k := range slices.Sorted(maps.Keys(props)) {
		b.WriteString(esc(k, true) + "=" + esc(props[k], false) + "\n")
	}
	return b.String()
}

func TestParseProperties(t *testing.T) {
	for _, jdk := range goldenJDKs {
		for _, f := range []string{"vm-system-properties.txt", "properties.txt"} {
			text := golden(t, jdk, f)
			props, err := jcmd.ParseProperties(text)
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(text, "\n") - 1; len(props) != n {
				t.Errorf("%s %s: %d properties, %d lines", jdk, f, len(props), n)
			}
			feature := strings.TrimPrefix(jdk, "jdk")
			for k, v := range map[string]string{"java.specification.version": feature, "line.separator": "\n",
				"path.separator": ":", "file.separator": "/"} {
				if props[k] != v {
					t.Errorf("%s %s: %s = %q, want %q", jdk, f, k, props[k], v)
				}
			}
			if !strings.HasPrefix(props["java.vm.version"], feature) || !strings.Contains(props["java.library.path"], ":/") {
				t.Errorf("%s %s: java.vm.version %q, java.library.path %q", jdk, f, props["java.vm.version"], props["java.library.path"])
			}
		}
	}
	want := map[string]string{
		"plain": "value", "with space": " leading space and = : # ! \\ signs", "tabs\tand\nnewlines": "a\tb\r\nc\f",
		"unicode": "é ü 日本 🎉", "": "empty key", "empty": "", "#not a comment": "!", "a:b=c": "d=e:f",
	}
	text := storeProperties(want)
	got, err := jcmd.ParseProperties(text)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("round trip of\n%s(-want +got):\n%s", text, diff)
	}
	// What Properties.load reads besides what store writes.
	got, err = jcmd.ParseProperties("! bang comment\r\n  # indented comment\n\n" +
		"key1 value1\nkey2:value2\n  key3 = value3  \nlong = first, \\\n       second, \\\n\tthird\n" +
		"odd\\\\=even\\\\\nnoValue\nlast=end\\")
	want = map[string]string{"key1": "value1", "key2": "value2", "key3": "value3  ", "long": "first, second, third",
		`odd\`: `even\`, "noValue": "", "last": "end"}
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("load forms (-want +got):\n%s", diff)
	}
	for _, bad := range []string{`a=\u12`, `a=\uXYZW`, `\u00`} {
		if p, err := jcmd.ParseProperties(bad); err == nil {
			t.Errorf("ParseProperties(%q) = %q, want an error", bad, p)
		}
	}
}

func TestParseThreadDump(t *testing.T) {
	for _, f := range goldenFiles(t, "thread*.txt") {
		if strings.Contains(f, "dump-to-file") {
			continue // Thread.dump_to_file only reports the file
		}
		text := readFile(t, f)
		td, err := jcmd.ParseThreadDump(text)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		headers := 0
		for _, l := range strings.Split(text, "\n") {
			if strings.HasPrefix(l, `"`) && strings.Contains(l, " tid=") {
				headers++
			}
		}
		if len(td.Threads) != headers {
			t.Errorf("%s: %d threads, %d thread lines", f, len(td.Threads), headers)
		}
		if !strings.Contains(td.Header, "Full thread dump OpenJDK 64-Bit Server VM") || strings.Count(td.Header, "\n") != 1 {
			t.Errorf("%s: header %q", f, td.Header)
		}
		byName := map[string]jcmd.Thread{}
		for _, th := range td.Threads {
			byName[th.Name] = th
			if th.TID == "" || th.NID == "" || th.Status == "" || strings.Contains(th.Status, "[0x") {
				t.Errorf("%s: %+v", f, th)
			}
			if (th.Number >= 0) != (th.State != "") {
				t.Errorf("%s: %q: number %d but state %q", f, th.Name, th.Number, th.State)
			}
		}
		main, vmThread := byName["main"], byName["VM Thread"]
		if main.Number < 1 || main.Daemon || main.Priority != 5 || len(main.Frames) == 0 || main.State != "TIMED_WAITING (sleeping)" {
			t.Errorf("%s: main %+v", f, main)
		}
		if vmThread.Number != -1 || vmThread.Priority != -1 || vmThread.State != "" || len(vmThread.Frames) != 0 {
			t.Errorf("%s: VM Thread %+v", f, vmThread)
		}
		if strings.Contains(f, "deadlock") {
			if !strings.HasPrefix(td.Deadlocks, "Found one Java-level deadlock:") || !strings.HasSuffix(td.Deadlocks, "Found 1 deadlock.") ||
				!strings.Contains(td.Deadlocks, `"jvmkit-deadlock-a"`) {
				t.Errorf("%s: deadlocks %q", f, td.Deadlocks)
			}
			for _, n := range []string{"jvmkit-deadlock-a", "jvmkit-deadlock-b"} {
				th := byName[n]
				if th.State != "BLOCKED (on object monitor)" || !hasPrefixIn(th.Locks, "waiting to lock <") || !hasPrefixIn(th.Locks, "locked <") {
					t.Errorf("%s: %s %+v", f, n, th)
				}
			}
			continue
		}
		if td.Deadlocks != "" {
			t.Errorf("%s: deadlocks %q", f, td.Deadlocks)
		}
		for _, tc := range []struct {
			name, state, status, lock string
		}{
			{"demo-lock-holder", "TIMED_WAITING (sleeping)", "waiting on condition", "locked <"},
			{"demo-blocked", "BLOCKED (on object monitor)", "waiting for monitor entry", "waiting to lock <"},
			{"demo-waiter", "WAITING (on object monitor)", "in Object.wait()", "waiting on <"},
		} {
			th, ok := byName[tc.name]
			if !ok || !th.Daemon || th.State != tc.state || th.Status != tc.status || !hasPrefixIn(th.Locks, tc.lock) ||
				!slices.ContainsFunc(th.Frames, func(s string) bool { return strings.HasPrefix(s, "Demo.") }) {
				t.Errorf("%s: %s = %+v, want state %q status %q lock %q", f, tc.name, th, tc.state, tc.status, tc.lock)
			}
		}
		for _, n := range []string{"demo-hasher", "demo-builder", "Reference Handler", "Finalizer", "Signal Dispatcher"} {
			if _, ok := byName[n]; !ok {
				t.Errorf("%s: no thread %q", f, n)
			}
		}
	}
	// Names with quotes, ownable synchronizers, a carrier of a virtual thread.
	td, err := jcmd.ParseThreadDump("2026-01-01 00:00:00\nFull thread dump X:\n\n" +
		"\"a \"quoted\" name\" #30 [1234] prio=5 os_prio=0 cpu=1ms elapsed=1s tid=0x01 nid=1234 waiting on condition  [0x02]\n" +
		"   java.lang.Thread.State: WAITING (parking)\n" +
		"\tat jdk.internal.misc.Unsafe.park(java.base@25/Native Method)\n" +
		"\t- parking to wait for  <0x03> (a java.util.concurrent.locks.ReentrantLock$NonfairSync)\n\n" +
		"   Locked ownable synchronizers:\n\t- <0x04> (a java.util.concurrent.locks.ReentrantLock$NonfairSync)\n\n" +
		"\"ForkJoinPool-1-worker-1\" #31 daemon prio=5 os_prio=0 cpu=1ms elapsed=1s tid=0x05 nid=1235 waiting on condition  [0x06]\n" +
		"   Carrying virtual thread #29\n   java.lang.Thread.State: RUNNABLE\n\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []jcmd.Thread{
		{Name: `a "quoted" name`, Number: 30, Priority: 5, TID: "0x01", NID: "1234", Status: "waiting on condition",
			State: "WAITING (parking)", Frames: []string{"jdk.internal.misc.Unsafe.park(java.base@25/Native Method)"},
			Locks:         []string{"parking to wait for  <0x03> (a java.util.concurrent.locks.ReentrantLock$NonfairSync)"},
			Synchronizers: []string{"<0x04> (a java.util.concurrent.locks.ReentrantLock$NonfairSync)"}},
		{Name: "ForkJoinPool-1-worker-1", Number: 31, Daemon: true, Priority: 5, TID: "0x05", NID: "1235",
			Status: "waiting on condition", State: "RUNNABLE"},
	}
	if diff := cmp.Diff(want, td.Threads); diff != "" || td.Header != "2026-01-01 00:00:00\nFull thread dump X:" {
		t.Errorf("synthetic dump, header %q (-want +got):\n%s", td.Header, diff)
	}
	if _, err := jcmd.ParseThreadDump("java.lang.IllegalArgumentException: Unknown argument '-x' in diagnostic command.\n"); err == nil {
		t.Error("an error text parsed as a thread dump")
	}
}

func hasPrefixIn(list []string, prefix string) bool {
	return slices.ContainsFunc(list, func(s string) bool { return strings.HasPrefix(s, prefix) })
}

// The fuzz targets start from the golden outputs; the parsers must never panic and keep a few
// invariants.

func addGolden(f *testing.F, pattern string) {
	f.Helper()
	for _, p := range goldenFiles(f, pattern) {
		f.Add(readFile(f, p))
	}
}

func FuzzParseHelp(f *testing.F) {
	addGolden(f, "help/*.txt")
	addGolden(f, "help*.txt")
	f.Fuzz(func(t *testing.T, out string) {
		if names, err := jcmd.ParseHelpList(out); err == nil && len(names) == 0 {
			t.Error("no names and no error")
		}
		c, err := jcmd.ParseHelp(out)
		if err != nil {
			return
		}
		if c.Name == "" {
			t.Error("command without a name")
		}
		for _, words := range [][]string{nil, strings.Fields(out), {"x=y", "-all", "name=a b"}} {
			checkInvariant(t, c, words)
		}
	})
}

// checkInvariant runs Check and insists on its error type.
func checkInvariant(t *testing.T, c *jcmd.Command, words []string) {
	err := c.Check(words)
	if err == nil {
		return
	}
	var oe *jcmd.OptionError
	if !errors.As(err, &oe) || oe.Command != c.Name || oe.Reason == "" || err.Error() == "" {
		t.Errorf("Check(%q) = %#v", words, err)
	}
}

func FuzzCheck(f *testing.F) {
	commands := map[string][]*jcmd.Command{}
	for i, jdk := range goldenJDKs {
		for _, p := range goldenFiles(f, "help/*.txt") {
			if !strings.Contains(p, jdk) {
				continue
			}
			c, err := jcmd.ParseHelp(readFile(f, p))
			if err != nil {
				continue
			}
			commands[jdk] = append(commands[jdk], c)
		}
		var cases []checkCase
		if err := json.Unmarshal([]byte(golden(f, jdk, "checks.json")), &cases); err != nil {
			f.Fatal(err)
		}
		for _, cs := range cases {
			f.Add(uint8(i), cs.Line)
		}
	}
	f.Fuzz(func(t *testing.T, jdk uint8, line string) {
		list := commands[goldenJDKs[int(jdk)%len(goldenJDKs)]]
		words, err := jcmd.SplitLine(line)
		if err != nil || len(words) == 0 {
			return
		}
		c := list[len(words[0])%len(list)]
		for _, cand := range list {
			if cand.Name == words[0] {
				c = cand
			}
		}
		checkInvariant(t, c, words[1:])
	})
}

func FuzzSplitLine(f *testing.F) {
	for _, jdk := range goldenJDKs {
		var cases []checkCase
		if err := json.Unmarshal([]byte(golden(f, jdk, "checks.json")), &cases); err != nil {
			f.Fatal(err)
		}
		for _, cs := range cases {
			f.Add(cs.Line)
		}
	}
	f.Fuzz(func(t *testing.T, line string) {
		words, err := jcmd.SplitLine(line)
		if err != nil {
			return
		}
		// Joined with single spaces, the words split the same again.
		again, err := jcmd.SplitLine(strings.Join(words, " "))
		if err != nil || !slices.Equal(words, again) {
			t.Errorf("SplitLine(%q) = %q, then %q, %v", line, words, again, err)
		}
		for i, w := range words {
			if w == "" || i > 0 && strings.HasPrefix(w, " ") {
				t.Errorf("SplitLine(%q): word %d is %q", line, i, w)
			}
		}
	})
}

func FuzzParseJFRCheck(f *testing.F) {
	addGolden(f, "jfr-check*.txt")
	f.Add("Recording 12: name=a (b) duration=90s maxsize=512 maxage=2d filename=/tmp/x.jfr (new)\n\n" +
		" Method Timing (jdk.MethodTiming)\n   [filter=Foo::a,Bar::b,enabled=true]\n")
	f.Fuzz(func(t *testing.T, out string) {
		recs, err := jcmd.ParseJFRCheck(out)
		if err == nil && recs == nil {
			t.Error("nil list without an error")
		}
		for _, r := range recs {
			if r.ID < 0 || r.State == "" || r.MaxSize < 0 || r.Duration < 0 || r.MaxAge < 0 {
				t.Errorf("%+v", r)
			}
		}
	})
}

func FuzzParseProperties(f *testing.F) {
	addGolden(f, "*properties.txt")
	f.Add(storeProperties(map[string]string{"with space": " = : # !", "unicode": "é 日本 🎉", "": ""}))
	f.Add("long = first, \\\n       second\nodd\\\\=even\\\\\r\nlast=end\\")
	f.Fuzz(func(t *testing.T, out string) {
		props, err := jcmd.ParseProperties(out)
		if err != nil {
			return
		}
		for k, v := range props {
			if !utf8.ValidString(k) || !utf8.ValidString(v) {
				return // the round trip below is for text only
			}
		}
		again, err := jcmd.ParseProperties(storeProperties(props))
		if err != nil || !maps.Equal(props, again) {
			t.Errorf("round trip of %q: %q, %v", props, again, err)
		}
	})
}

func FuzzParseThreadDump(f *testing.F) {
	addGolden(f, "thread-print*.txt")
	addGolden(f, "threaddump.txt")
	f.Fuzz(func(t *testing.T, out string) {
		td, err := jcmd.ParseThreadDump(out)
		if err != nil {
			return
		}
		if len(td.Threads) == 0 {
			t.Error("no threads and no error")
		}
		for _, th := range td.Threads {
			if th.TID == "" || th.NID == "" || th.Number < -1 {
				t.Errorf("%+v", th)
			}
		}
	})
}

// FuzzParseOutputs covers the parsers of the smaller outputs: JFR.start, DumpedPath,
// VM.start_java_debugging, VM.flags.
func FuzzParseOutputs(f *testing.F) {
	addGolden(f, "*.txt")
	f.Fuzz(func(t *testing.T, out string) {
		if id, _, err := jcmd.ParseJFRStart(out); err == nil && id < 0 {
			t.Errorf("recording id %d", id)
		}
		if p, ok := jcmd.DumpedPath(out); ok && strings.TrimSpace(p) == "" {
			t.Error("empty path")
		}
		if d, err := jcmd.ParseDebugging(out); err == nil && d == nil {
			t.Error("nil result without an error")
		}
		if flags, err := jcmd.ParseFlags(out); err == nil {
			for _, fl := range flags {
				if strings.ContainsAny(fl.Name, " \n") {
					t.Errorf("flag %+v", fl)
				}
			}
		}
	})
}
