//go:build linux

package testutil_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/internal/testutil"
)

func TestJDKs(t *testing.T) {
	jdks := testutil.JDKs(t)
	sel := os.Getenv(testutil.TestJDKsEnv)
	if (sel == "" || sel == "all" || sel == "host") && !slices.ContainsFunc(jdks, func(j testutil.JDK) bool { return j.Feature == 17 }) {
		t.Fatalf("JDKs() = %v, no JDK 17", jdks)
	}
	seen := make(map[string]bool)
	for i, jdk := range jdks {
		t.Logf("%s", jdk)
		if i > 0 && jdks[i-1].Feature > jdk.Feature {
			t.Errorf("JDKs() not sorted by feature: %v", jdks)
		}
		if real, err := filepath.EvalSymlinks(jdk.Home); err != nil || real != jdk.Home {
			t.Errorf("%s: Home is not a real path (%q, %v)", jdk, real, err)
		}
		java, err := filepath.EvalSymlinks(jdk.Bin("java"))
		if err != nil {
			t.Errorf("%s: %v", jdk, err)
		}
		if seen[java] {
			t.Errorf("%s: java %s listed twice", jdk, java)
		}
		seen[java] = true
		if jdk.Version == "" || !strings.HasPrefix(jdk.Name(), "jdk"+strconv.Itoa(jdk.Feature)) {
			t.Errorf("%s: bad Version or Name", jdk)
		}
		if (jdk.Root == "") != (jdk.JavaHome() == jdk.Home) || !strings.HasSuffix(jdk.Home, jdk.JavaHome()) {
			t.Errorf("%s: JavaHome %s does not fit Home %s and Root %s", jdk, jdk.JavaHome(), jdk.Home, jdk.Root)
		}
	}
	// The launcher agrees with the release file.
	for _, jdk := range jdks {
		out, err := exec.Command(jdk.Bin("java"), "-version").CombinedOutput()
		if err != nil {
			t.Fatalf("%s: java -version: %v\n%s", jdk, err, out)
		}
		if !strings.Contains(string(out), "(build "+jdk.Version) {
			t.Errorf("%s: java -version says\n%s", jdk, out)
		}
	}
}

func TestCompile(t *testing.T) {
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		dir := testutil.Compile(t, jdk, "Sleeper", "Demo")
		if again := testutil.Compile(t, jdk, "Demo", "Sleeper", "Demo"); again != dir {
			t.Errorf("Compile again = %s, want the cached %s", again, dir)
		}
		if !strings.HasPrefix(dir, "/var/tmp/jvmkit-test-") {
			t.Errorf("class dir %s is not in the /var/tmp work directory", dir)
		}
		// Every directory up to / must be searchable by other users (a JVM running as nobody).
		for d := dir; d != "/"; d = filepath.Dir(d) {
			if fi, err := os.Stat(d); err != nil || fi.Mode().Perm()&0o005 != 0o005 {
				t.Errorf("%s is not world-readable and searchable: %v, %v", d, fi.Mode(), err)
			}
		}
		var classes []string
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			want := fs.FileMode(0o644)
			if d.IsDir() {
				want = fs.ModeDir | 0o755
			} else {
				classes = append(classes, d.Name())
			}
			if fi.Mode() != want {
				t.Errorf("%s: mode %v, want %v", path, fi.Mode(), want)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(classes)
		if want := []string{"Demo$Cache.class", "Demo.class", "Sleeper.class"}; !slices.Equal(classes, want) {
			t.Errorf("compiled %v, want %v", classes, want)
		}
		// javac used the default -source: the class file version is the JDK's (feature + 44).
		class, err := os.ReadFile(filepath.Join(dir, "Sleeper.class"))
		if err != nil {
			t.Fatal(err)
		}
		if major := int(class[6])<<8 | int(class[7]); major != jdk.Feature+44 {
			t.Errorf("Sleeper.class has major version %d, want %d", major, jdk.Feature+44)
		}
	})
}

// jcmd runs the JDK's jcmd against pid as an independent oracle for "the JVM is attachable".
func jcmd(t *testing.T, jdk testutil.JDK, pid int, command ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	args := append([]string{"-J-XX:-UsePerfData", strconv.Itoa(pid)}, command...)
	out, err := exec.CommandContext(ctx, jdk.Bin("jcmd"), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("jcmd %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func threadNames(t *testing.T, pid int) []string {
	t.Helper()
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/comm", pid))
	if err != nil || len(tasks) == 0 {
		t.Fatalf("list threads of %d: %v", pid, err)
	}
	var names []string
	for _, comm := range tasks {
		if data, err := os.ReadFile(comm); err == nil {
			names = append(names, strings.TrimSpace(string(data)))
		}
	}
	return names
}

// statusField returns a field of /proc/<pid>/status.
func statusField(t *testing.T, pid int, field string) string {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		if value, ok := strings.CutPrefix(line, field+":"); ok {
			return strings.TrimSpace(value)
		}
	}
	t.Fatalf("/proc/%d/status has no %s", pid, field)
	return ""
}

func sigMask(t *testing.T, pid int, field string) uint64 {
	t.Helper()
	mask, err := strconv.ParseUint(statusField(t, pid, field), 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	return mask
}

// assertOwnNamespaces checks that pid has namespaces of its own, not the test's.
func assertOwnNamespaces(t *testing.T, pid int, kinds ...string) {
	t.Helper()
	for _, ns := range kinds {
		mine, _ := os.Readlink("/proc/self/ns/" + ns)
		its, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", pid, ns))
		if mine == its {
			t.Errorf("process %d shares the %s namespace %s", pid, ns, mine)
		}
	}
}

func bit(sig unix.Signal) uint64 { return 1 << (uint(sig) - 1) }

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// assertStopped checks that j is gone and left nothing behind.
func assertStopped(t *testing.T, j *testutil.JVM, namespaced bool) {
	t.Helper()
	if j.Alive() {
		t.Errorf("%s still alive after Stop", j)
	}
	leftovers := []string{filepath.Join(j.Dir, fmt.Sprintf(".attach_pid%d", j.NSPID))}
	if !namespaced {
		leftovers = append(leftovers,
			fmt.Sprintf("/tmp/.attach_pid%d", j.PID),
			fmt.Sprintf("/tmp/.java_pid%d", j.PID))
		hsperf, _ := filepath.Glob(fmt.Sprintf("/tmp/hsperfdata_*/%d", j.PID))
		leftovers = append(leftovers, hsperf...)
	}
	for _, path := range leftovers {
		if exists(path) {
			t.Errorf("%s left %s behind", j, path)
		}
	}
}

func TestStartJVM(t *testing.T) {
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		j := testutil.StartJVM(t, jdk, testutil.JVMOptions{})
		if j.PID <= 1 || j.NSPID != j.PID {
			t.Errorf("PID %d, NSPID %d: want equal host pids", j.PID, j.NSPID)
		}
		if !j.Alive() {
			t.Fatalf("%s not alive", j)
		}
		if got := j.Stdout(); got != "ready\n" {
			t.Errorf("stdout %q, want %q", got, "ready\n")
		}
		if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", j.PID)); exe != filepath.Join(jdk.JavaHome(), "bin", "java") {
			t.Errorf("exe %s, want %s", exe, filepath.Join(jdk.JavaHome(), "bin", "java"))
		}
		if cwd, _ := os.Readlink(fmt.Sprintf("/proc/%d/cwd", j.PID)); cwd != j.Dir {
			t.Errorf("cwd %s, want %s", cwd, j.Dir)
		}
		if caught, ignored, err := testutil.SigQuitState(j.PID); err != nil || !caught || ignored {
			t.Errorf("SIGQUIT caught %v, ignored %v, %v: want caught", caught, ignored, err)
		}
		if names := threadNames(t, j.PID); !slices.Contains(names, "jvmkit-worker") {
			t.Errorf("no thread jvmkit-worker in %v", names)
		}
		if !exists(fmt.Sprintf("/tmp/hsperfdata_root/%d", j.PID)) {
			t.Errorf("no hsperfdata file for %s", j)
		}
		if out := jcmd(t, jdk, j.PID, "VM.version"); !strings.Contains(out, jdk.Version) {
			t.Errorf("jcmd VM.version:\n%s", out)
		}
		if !exists(fmt.Sprintf("/tmp/.java_pid%d", j.PID)) {
			t.Errorf("no attach socket after jcmd")
		}
		j.Stop()
		j.Stop() // idempotent
		assertStopped(t, j, false)
	})
}

func TestStartJVMNamespace(t *testing.T) {
	testutil.MustHaveRoot(t)
	probe, err := os.CreateTemp("/tmp", "jvmkit-probe-*")
	if err != nil {
		t.Fatal(err)
	}
	probe.Close()
	t.Cleanup(func() { os.Remove(probe.Name()) })

	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		j := testutil.StartJVM(t, jdk, testutil.JVMOptions{Namespace: true})
		if j.NSPID != 1 || j.PID == 1 {
			t.Errorf("PID %d, NSPID %d: want NSPID 1 and a host pid", j.PID, j.NSPID)
		}
		root := fmt.Sprintf("/proc/%d/root", j.PID)
		if exists(filepath.Join(root, probe.Name())) {
			t.Errorf("the JVM sees the host's %s: its /tmp is not private", probe.Name())
		}
		if !exists(filepath.Join(root, "tmp/hsperfdata_root/1")) {
			t.Errorf("no hsperfdata_root/1 in the JVM's /tmp")
		}
		assertOwnNamespaces(t, j.PID, "mnt", "pid")
		if caught, ignored, err := testutil.SigQuitState(j.PID); err != nil || !caught || ignored {
			t.Errorf("SIGQUIT caught %v, ignored %v, %v: want caught", caught, ignored, err)
		}
		// The host's jcmd reaches the JVM through /proc/<pid>/root, as it would in a container.
		if out := jcmd(t, jdk, j.PID, "VM.version"); !strings.Contains(out, jdk.Version) {
			t.Errorf("jcmd VM.version:\n%s", out)
		}
		wrapper, err := strconv.Atoi(statusField(t, j.PID, "PPid"))
		if err != nil {
			t.Fatal(err)
		}
		if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", wrapper)); filepath.Base(exe) != "unshare" {
			t.Errorf("parent of the JVM is %s, want unshare", exe)
		}
		j.Stop()
		assertStopped(t, j, true)
		if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", wrapper)); err == nil && filepath.Base(exe) == "unshare" {
			t.Errorf("unshare %d still running after Stop", wrapper)
		}
	})
}

func TestStartJVMUser(t *testing.T) {
	testutil.MustHaveRoot(t)
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		j := testutil.StartJVM(t, jdk, testutil.JVMOptions{UID: 65534, GID: 65534})
		for field, want := range map[string]string{"Uid": "65534\t65534\t65534\t65534", "Gid": "65534\t65534\t65534\t65534", "Groups": ""} {
			if got := statusField(t, j.PID, field); got != want {
				t.Errorf("%s: %q, want %q", field, got, want)
			}
		}
		if caught, ignored, err := testutil.SigQuitState(j.PID); err != nil || !caught || ignored {
			t.Errorf("SIGQUIT caught %v, ignored %v, %v: want caught", caught, ignored, err)
		}
		hsperf := fmt.Sprintf("/tmp/hsperfdata_nobody/%d", j.PID)
		if !exists(hsperf) {
			t.Errorf("no %s", hsperf)
		}
		j.Stop()
		assertStopped(t, j, false)
	})
}

func TestStartJVMReadOnlyCwd(t *testing.T) {
	testutil.MustHaveRoot(t)
	jdk := testutil.JDK17(t)
	j := testutil.StartJVM(t, jdk, testutil.JVMOptions{ReadOnlyCwd: true})
	if j.NSPID != j.PID {
		t.Errorf("PID %d, NSPID %d: ReadOnlyCwd alone must not make a pid namespace", j.PID, j.NSPID)
	}
	err := os.WriteFile(fmt.Sprintf("/proc/%d/cwd/probe", j.PID), nil, 0o644)
	if !errors.Is(err, unix.EROFS) {
		t.Errorf("create a file in the JVM's cwd: %v, want EROFS", err)
	}
	// The host's view of the same directory is writable: only the JVM's mount namespace has the read-only bind.
	if err := os.WriteFile(filepath.Join(j.Dir, "probe"), nil, 0o644); err != nil {
		t.Errorf("create a file in the host's view of the cwd: %v", err)
	}
	if out := jcmd(t, jdk, j.PID, "VM.version"); !strings.Contains(out, jdk.Version) {
		t.Errorf("jcmd VM.version (trigger file in /tmp):\n%s", out)
	}
	j.Stop()
	assertStopped(t, j, false)
}

func TestStartJVMAllIsolation(t *testing.T) {
	testutil.MustHaveRoot(t)
	j := testutil.StartJVM(t, testutil.JDK17(t), testutil.JVMOptions{
		Namespace: true, ReadOnlyCwd: true, UID: 65534, GID: 65534, Main: "Demo", Args: []string{"10"},
	})
	if j.NSPID != 1 {
		t.Errorf("NSPID %d, want 1", j.NSPID)
	}
	if got := statusField(t, j.PID, "Uid"); got != "65534\t65534\t65534\t65534" {
		t.Errorf("Uid %q", got)
	}
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/cwd/probe", j.PID), nil, 0o644); !errors.Is(err, unix.EROFS) {
		t.Errorf("create a file in the JVM's cwd: %v, want EROFS", err)
	}
	if !exists(fmt.Sprintf("/proc/%d/root/tmp/hsperfdata_nobody/1", j.PID)) {
		t.Errorf("no hsperfdata_nobody/1 in the JVM's /tmp")
	}
	j.Stop()
	assertStopped(t, j, true)
}

func TestWorkloads(t *testing.T) {
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		t.Parallel() // two JDKs at a time
		demo := testutil.StartJVM(t, jdk, testutil.JVMOptions{Main: "Demo"})
		busy := testutil.StartJVM(t, jdk, testutil.JVMOptions{Main: "Busy"})
		names := threadNames(t, demo.PID)
		for _, want := range []string{"demo-hasher", "demo-builder", "demo-waiter", "demo-lock-holde", "demo-blocked"} {
			if !slices.Contains(names, want) { // Linux keeps 15 bytes of a thread name
				t.Errorf("Demo has no thread %s: %v", want, names)
			}
		}
		if names := threadNames(t, busy.PID); !slices.Contains(names, "jvmkit-busy") {
			t.Errorf("Busy has no thread jvmkit-busy: %v", names)
		}
		out := jcmd(t, jdk, demo.PID, "Thread.print")
		for _, want := range []string{
			`"demo-blocked"`, "java.lang.Thread.State: BLOCKED (on object monitor)",
			`"demo-waiter"`, "java.lang.Thread.State: WAITING (on object monitor)",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("Thread.print has no %q:\n%s", want, out)
			}
		}
		for _, j := range []*testutil.JVM{demo, busy} {
			j.Stop()
			assertStopped(t, j, false)
		}
	})
}

func TestStartProcess(t *testing.T) {
	cmd := testutil.StartProcess(t, "sleep", "1000")
	caught, ignored, err := testutil.SigQuitState(cmd.Process.Pid)
	if err != nil || caught || ignored {
		t.Errorf("SIGQUIT caught %v, ignored %v, %v: want the default disposition", caught, ignored, err)
	}
	if blocked := sigMask(t, cmd.Process.Pid, "SigBlk"); blocked&bit(unix.SIGQUIT) != 0 {
		t.Errorf("SIGQUIT blocked: %016x", blocked)
	}
}

// ignoredSignalsHelper marks the re-executed test binary of TestInheritedIgnoredSignals.
const ignoredSignalsHelper = "JVMKIT_TESTUTIL_IGNORED_SIGNALS_HELPER"

// TestInheritedIgnoredSignals runs the harness in a copy of the test binary that ignores SIGQUIT and SIGINT,
// as a test binary started in the background of a shell script would for SIGINT, and checks that the
// processes it starts get the default dispositions all the same.
func TestInheritedIgnoredSignals(t *testing.T) {
	if os.Getenv(ignoredSignalsHelper) == "" {
		testutil.MustHaveJava(t)
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(exe, "-test.run=^TestInheritedIgnoredSignals$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), ignoredSignalsHelper+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestInheritedIgnoredSignals") {
			t.Fatalf("helper: %v\n%s", err, out)
		}
		return
	}

	signal.Ignore(unix.SIGQUIT, unix.SIGINT) // never undone: this process exits after the test
	quitInt := bit(unix.SIGQUIT) | bit(unix.SIGINT)

	// Control: without the harness, a child inherits SIG_IGN, and this test would prove nothing.
	plain := exec.Command("sleep", "1000")
	if err := plain.Start(); err != nil {
		t.Fatal(err)
	}
	ign := sigMask(t, plain.Process.Pid, "SigIgn")
	_ = plain.Process.Kill()
	_ = plain.Wait()
	if ign&quitInt != quitInt {
		t.Fatalf("control: a plain child's SigIgn is %016x, want SIGQUIT and SIGINT ignored", ign)
	}

	victim := testutil.StartProcess(t, "sleep", "1000")
	if ign := sigMask(t, victim.Process.Pid, "SigIgn"); ign&quitInt != 0 {
		t.Errorf("StartProcess: SigIgn %016x", ign)
	}

	jdk := testutil.JDK17(t)
	j := testutil.StartJVM(t, jdk, testutil.JVMOptions{})
	if cgt := sigMask(t, j.PID, "SigCgt"); cgt&quitInt != quitInt {
		t.Errorf("JVM: SigCgt %016x, want SIGQUIT (attach) and SIGINT (shutdown hooks) caught", cgt)
	}
	xrs := testutil.StartJVM(t, jdk, testutil.JVMOptions{JVMArgs: []string{"-Xrs"}})
	if caught, ignored, err := testutil.SigQuitState(xrs.PID); err != nil || caught || ignored {
		t.Errorf("JVM with -Xrs: SIGQUIT caught %v, ignored %v, %v: want the default disposition", caught, ignored, err)
	}
}

// waitForFile polls for path, which the JVM creates asynchronously.
func waitForFile(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !exists(path); {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear", path)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestStopRemovesLeftovers(t *testing.T) {
	// -Xrs: SIGTERM kills the JVM without HotSpot's cleanup, so the harness must remove everything itself.
	j := testutil.StartJVM(t, testutil.JDK17(t), testutil.JVMOptions{JVMArgs: []string{"-Xrs", "-XX:+StartAttachListener"}})
	socket := fmt.Sprintf("/tmp/.java_pid%d", j.PID)
	waitForFile(t, socket)
	triggers := []string{
		filepath.Join(j.Dir, fmt.Sprintf(".attach_pid%d", j.NSPID)),
		fmt.Sprintf("/tmp/.attach_pid%d", j.NSPID),
	}
	for _, path := range triggers {
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	hsperf := fmt.Sprintf("/tmp/hsperfdata_root/%d", j.PID)
	if !exists(hsperf) {
		t.Fatalf("no %s", hsperf)
	}
	j.Stop()
	assertStopped(t, j, false)
}

func TestStopAfterJVMDied(t *testing.T) {
	jdk := testutil.JDK17(t)
	for _, namespaced := range []bool{false, true} {
		t.Run(fmt.Sprintf("namespace=%v", namespaced), func(t *testing.T) {
			if namespaced {
				testutil.MustHaveRoot(t)
			}
			j := testutil.StartJVM(t, jdk, testutil.JVMOptions{
				JVMArgs:   []string{"-XX:+StartAttachListener"},
				Namespace: namespaced,
			})
			socket := fmt.Sprintf("/proc/%d/root/tmp/.java_pid%d", j.PID, j.NSPID)
			waitForFile(t, socket)
			if err := unix.Kill(j.PID, unix.SIGKILL); err != nil {
				t.Fatal(err)
			}
			// A namespaced JVM's status comes from unshare, which cannot re-raise SIGKILL and exits with 1.
			want := "signal: killed"
			if namespaced {
				want = "exit status 1"
			}
			err := j.Wait(30 * time.Second)
			var exitErr *exec.ExitError
			if !errors.As(err, &exitErr) || exitErr.String() != want {
				t.Errorf("Wait: %v, want %s\n%s", err, want, j.Stderr())
			}
			if !namespaced && !exists(fmt.Sprintf("/tmp/.java_pid%d", j.PID)) {
				t.Fatalf("SIGKILL removed the socket: the test cannot check the harness")
			}
			j.Stop()
			assertStopped(t, j, namespaced)
		})
	}
}

func TestStopKeepsForeignFiles(t *testing.T) {
	j := testutil.StartJVM(t, testutil.JDK17(t), testutil.JVMOptions{})
	// A socket at the JVM's attach path that the JVM does not hold: someone else's.
	socket := fmt.Sprintf("/tmp/.java_pid%d", j.PID)
	if exists(socket) {
		t.Fatalf("%s exists before anything attached", socket)
	}
	ln, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close() // removes the socket file
	// A trigger older than the JVM: left by a previous process with the same pid.
	trigger := fmt.Sprintf("/tmp/.attach_pid%d", j.PID)
	if err := os.WriteFile(trigger, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(trigger)
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(trigger, old, old); err != nil {
		t.Fatal(err)
	}
	j.Stop()
	for _, path := range []string{socket, trigger} {
		if !exists(path) {
			t.Errorf("Stop removed %s, which is not the JVM's", path)
		}
	}
}

func TestStartJVMFailure(t *testing.T) {
	jdk := testutil.JDK17(t)
	fake := &fatalRecorder{TB: t}
	runAsTest(func() {
		testutil.StartJVM(fake, jdk, testutil.JVMOptions{Main: "NoSuchClass", ClassPath: testutil.Compile(t, jdk, "Sleeper")})
	})
	for _, want := range []string{"exited before printing ready", "NoSuchClass", "command:"} {
		if !strings.Contains(fake.msg, want) {
			t.Errorf("failure message lacks %q:\n%s", want, fake.msg)
		}
	}
}

func TestSkipf(t *testing.T) {
	for _, ci := range []string{"", "true"} {
		t.Setenv("CI", ci)
		fake := &fatalRecorder{TB: t}
		runAsTest(func() { testutil.Skipf(fake, "no %s here", "frobnicator") })
		if wantFatal := ci != ""; fake.fatal != wantFatal || !strings.Contains(fake.msg, "no frobnicator here") {
			t.Errorf("CI=%q: fatal %v, message %q", ci, fake.fatal, fake.msg)
		}
	}
}

// fatalRecorder is a testing.TB whose Fatalf and Skipf record the message and end the goroutine, like the
// real ones, without failing the test; everything else is the real test's.
type fatalRecorder struct {
	testing.TB
	fatal bool
	msg   string
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.fatal, f.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (f *fatalRecorder) Skipf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func runAsTest(f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	<-done
}

// orphanHelper marks the re-executed test binary of TestJVMsDieWithTestBinary.
const orphanHelper = "JVMKIT_TESTUTIL_ORPHAN_HELPER"

// TestJVMsDieWithTestBinary kills a test binary that has JVMs running (as a timeout or a crash would) and
// checks that the kernel takes them along, for each way of running them.
func TestJVMsDieWithTestBinary(t *testing.T) {
	testutil.MustHaveRoot(t)
	jdk := testutil.JDK17(t)
	if os.Getenv(orphanHelper) != "" {
		noPerf := []string{"-XX:-UsePerfData"} // SIGKILL would leave hsperfdata files behind
		for _, opts := range []testutil.JVMOptions{
			{},
			{UID: 65534, GID: 65534},
			{Namespace: true},
			{Namespace: true, UID: 65534, GID: 65534},
		} {
			opts.JVMArgs = noPerf
			j := testutil.StartJVM(t, jdk, opts)
			fmt.Printf("pid %d\nworkdir %s\n", j.PID, filepath.Dir(j.Dir))
		}
		fmt.Println("started")
		time.Sleep(time.Minute) // until the parent kills this process
		t.Fatal("not killed")
	}

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestJVMsDieWithTestBinary$", "-test.count=1", "-test.timeout=2m")
	cmd.Env = append(os.Environ(), orphanHelper+"=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pids []int
	var workDir string
	buf := make([]byte, 0, 4096)
	for !strings.Contains(string(buf), "started\n") {
		chunk := make([]byte, 1024)
		n, err := stdout.Read(chunk)
		buf = append(buf, chunk[:n]...)
		if err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("helper: %v\n%s\n%s", err, buf, stderr.String())
		}
	}
	for line := range strings.Lines(string(buf)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "pid "); ok {
			pid, err := strconv.Atoi(v)
			if err != nil {
				t.Fatal(err)
			}
			pids = append(pids, pid)
		} else if v, ok := strings.CutPrefix(strings.TrimSpace(line), "workdir "); ok {
			workDir = v
		}
	}
	exes := make(map[int]string)
	for _, pid := range pids {
		exes[pid], _ = os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if strings.HasPrefix(workDir, "/var/tmp/jvmkit-test-") {
		defer os.RemoveAll(workDir) // the killed binary could not run Main
	}

	for _, pid := range pids {
		for deadline := time.Now().Add(10 * time.Second); ; {
			exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
			if err != nil || exe != exes[pid] {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("JVM %d survived its test binary", pid)
				_ = unix.Kill(pid, unix.SIGKILL) // still ours: started by our helper
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if len(pids) != 4 {
		t.Errorf("helper reported pids %v, want 4", pids)
	}
}
