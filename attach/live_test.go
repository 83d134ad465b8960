//go:build linux

package attach_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/attach"
	"github.com/jvmkit/jvmkit/internal/testutil"
)

func dial(t *testing.T, pid int, opts *attach.Options) *attach.VM {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	vm, err := attach.Dial(ctx, pid, opts)
	if err != nil {
		t.Fatalf("Dial(%d): %v", pid, err)
	}
	t.Cleanup(func() { vm.Close() })
	return vm
}

func jcmdOut(t *testing.T, vm *attach.VM, line string) string {
	t.Helper()
	out, err := vm.Jcmd(context.Background(), line)
	if err != nil {
		t.Fatalf("jcmd %q: %v", line, err)
	}
	return out
}

// jdkJcmd runs the JDK's own jcmd and strips its "<pid>:" header.
func jdkJcmd(t *testing.T, jdk testutil.JDK, pid int, args ...string) string {
	t.Helper()
	out, err := exec.Command(jdk.Bin("jcmd"), append([]string{strconv.Itoa(pid)}, args...)...).Output()
	if err != nil {
		t.Fatalf("jcmd %v: %v", args, err)
	}
	return strings.TrimPrefix(string(out), strconv.Itoa(pid)+":\n")
}

// assertClean checks that attaching left nothing behind in the target's cwd and /tmp.
func assertClean(t *testing.T, j *testutil.JVM) {
	t.Helper()
	name := ".attach_pid" + strconv.Itoa(j.NSPID)
	for _, dir := range []string{fmt.Sprintf("/proc/%d/cwd", j.PID), fmt.Sprintf("/proc/%d/root/tmp", j.PID)} {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			t.Errorf("trigger file %s left in %s", name, dir)
		}
	}
	if strings.Contains(j.Stdout(), "Full thread dump") {
		t.Errorf("the JVM printed a thread dump (the signal was not taken as an attach request):\n%s", j.Stdout())
	}
}

func TestAttach(t *testing.T) {
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		j := testutil.StartJVM(t, jdk, testutil.JVMOptions{})
		if _, err := os.Lstat(fmt.Sprintf("/tmp/.java_pid%d", j.NSPID)); err == nil {
			t.Fatal("listener already running before the first attach")
		}
		start := time.Now()
		var log bytes.Buffer
		vm := dial(t, j.PID, &attach.Options{Logger: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))})
		first := time.Since(start)
		got := jcmdOut(t, vm, "VM.version")
		want := jdkJcmd(t, jdk, j.PID, "VM.version")
		if got != want {
			t.Errorf("VM.version:\n got %q\nwant %q", got, want)
		}
		t.Logf("first attach (listener start) %v", first)
		wantProto := attach.ProtocolV1
		if jdk.Feature >= 24 {
			wantProto = attach.ProtocolV2
		}
		if p := vm.Protocol(); p != wantProto {
			t.Errorf("negotiated protocol %d, want %d", p, wantProto)
		}
		// Every JDK here has its release file: those before 24 get protocol 1 without a protocol 2
		// request first (one connection less per gjcmd run).
		if jdk.Feature < 24 && (!strings.Contains(log.String(), "by its release file") || strings.Contains(log.String(), "to protocol 2")) {
			t.Errorf("JDK %d: protocol 1 not chosen from the release file:\n%s", jdk.Feature, log.String())
		}
		assertClean(t, j)

		// Without the hint (no release file), a JVM before JDK 24 answers a protocol 2 request with
		// an error and gets the operation again in protocol 1.
		log.Reset()
		vm1 := dial(t, j.PID, &attach.Options{Logger: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))})
		attach.NoReleaseHint(vm1)
		if got := jcmdOut(t, vm1, "VM.version"); got != want {
			t.Errorf("VM.version negotiated without the hint:\n got %q\nwant %q", got, want)
		}
		if p := vm1.Protocol(); p != wantProto || jdk.Feature < 24 && !strings.Contains(log.String(), "to protocol 2") {
			t.Errorf("negotiated without the hint: protocol %d, want %d; log:\n%s", p, wantProto, log.String())
		}

		// A second Dial finds the listener running.
		vm2 := dial(t, j.PID, nil)
		if out := jcmdOut(t, vm2, "VM.uptime"); !strings.HasSuffix(strings.TrimSpace(out), " s") {
			t.Errorf("VM.uptime: %q", out)
		}
		// Several commands in one operation, separated by newlines.
		if out := jcmdOut(t, vm2, "VM.uptime\nVM.version"); !strings.Contains(out, "JDK "+strconv.Itoa(jdk.Feature)) {
			t.Errorf("two commands: %q", out)
		}
		// Unknown commands are the JVM's error, status -1.
		_, err := vm2.Jcmd(context.Background(), "No.such_command")
		var je *attach.JVMError
		if !errors.As(err, &je) || je.Code != -1 || !strings.Contains(je.Message, "Unknown diagnostic command") {
			t.Errorf("unknown command: %v", err)
		}
		// Protocol limits: 1024 bytes per argument before JDK 24, none after.
		long := "JFR.check name=" + strings.Repeat("x", 5000)
		out, err := vm2.Jcmd(context.Background(), long)
		if jdk.Feature >= 24 {
			// The JVM truncates the name in its message; more than the v1 limit got through.
			if err != nil || strings.Count(out, "x") <= attach.V1MaxArg {
				t.Errorf("5000-byte command over protocol 2: %.200q, %v", out, err)
			}
		} else if !errors.Is(err, attach.ErrRequestTooLarge) {
			t.Errorf("5000-byte command over protocol 1: error %v, want ErrRequestTooLarge", err)
		}
		// A command that echoes its whole argument on every JDK (JFR.check name=... does not before JDK 17 while
		// no recording runs), so that the output proves the whole argument arrived.
		name := strings.Repeat("y", attach.V1MaxArg-len("help "))
		if out, err := vm2.Jcmd(context.Background(), "help "+name); err != nil || !strings.Contains(out, "'"+name+"'") {
			t.Errorf("1024-byte command: %q, %v", out, err)
		}
		if !j.Alive() {
			t.Fatal("JVM died")
		}
	})
}

func TestForcedProtocol(t *testing.T) {
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		j := testutil.StartJVM(t, jdk, testutil.JVMOptions{})
		v1 := dial(t, j.PID, &attach.Options{Protocol: attach.ProtocolV1})
		want := jcmdOut(t, v1, "VM.version")
		v2 := dial(t, j.PID, &attach.Options{Protocol: attach.ProtocolV2})
		out, err := v2.Jcmd(context.Background(), "VM.version")
		if jdk.Feature >= 24 {
			if err != nil || out != want {
				t.Errorf("v2: %q %v, want %q", out, err, want)
			}
			// streaming=1 and streaming=0 give the same bytes.
			s := dial(t, j.PID, &attach.Options{Streaming: true})
			if got := jcmdOut(t, s, "VM.flags -all"); got != jcmdOut(t, v2, "VM.flags -all") {
				t.Error("streaming and buffered VM.flags -all differ")
			}
		} else {
			var je *attach.JVMError
			if !errors.As(err, &je) || je.Code != attach.StatusBadVersion || !strings.Contains(je.Message, "JDK 24") {
				t.Errorf("v2 against JDK %d: %v, want status 101 saying protocol 2 needs JDK 24", jdk.Feature, err)
			}
		}
	})
}

func TestRawOperations(t *testing.T) {
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		j := testutil.StartJVM(t, jdk, testutil.JVMOptions{})
		vm := dial(t, j.PID, nil)
		ctx := context.Background()
		run := func(op string, args ...string) string {
			t.Helper()
			r, err := vm.Execute(ctx, op, args...)
			if err != nil {
				t.Fatalf("%s %q: %v", op, args, err)
			}
			return string(r.Output)
		}
		if out := run("properties"); !strings.Contains(out, "java.vm.version=") {
			t.Errorf("properties: %.200q", out)
		}
		if out := run("agentProperties"); !strings.Contains(out, "sun.jvm.args") && !strings.Contains(out, "sun.java.command") {
			t.Errorf("agentProperties: %.300q", out)
		}
		if out := run("threaddump"); !strings.Contains(out, "Full thread dump") || !strings.Contains(out, "jvmkit-worker") {
			t.Errorf("threaddump: %.300q", out)
		}
		if out := run("threaddump", "-l"); !strings.Contains(out, "Locked ownable synchronizers") {
			t.Errorf("threaddump -l: %.300q", out)
		}
		if out := run("printflag", "MaxHeapSize"); !strings.HasPrefix(out, "-XX:MaxHeapSize=") {
			t.Errorf("printflag: %q", out)
		}
		// A manageable flag can be set (and is restored); others are refused with status -1.
		run("setflag", "HeapDumpOnOutOfMemoryError", "1")
		if out := run("printflag", "HeapDumpOnOutOfMemoryError"); !strings.Contains(out, "+HeapDumpOnOutOfMemoryError") {
			t.Errorf("after setflag: %q", out)
		}
		run("setflag", "HeapDumpOnOutOfMemoryError", "0")
		var je *attach.JVMError
		if _, err := vm.Execute(ctx, "setflag", "MaxHeapSize", "1"); !errors.As(err, &je) || je.Code != -1 {
			t.Errorf("setflag on a non-manageable flag: %v", err)
		}
		if _, err := vm.Execute(ctx, "nosuchop"); !errors.As(err, &je) || !strings.Contains(je.Message, "not recognized") {
			t.Errorf("unknown operation: %v", err)
		}
		if out := run("inspectheap", "-all"); !strings.Contains(out, "java.lang.String") {
			t.Errorf("inspectheap: %.300q", out)
		}
		dump := filepath.Join(t.TempDir(), "heap.hprof")
		run("dumpheap", dump, "-all")
		if st, err := os.Stat(dump); err != nil || st.Size() == 0 {
			t.Errorf("dumpheap: %v", err)
		}
		run("datadump")
		out, err := vm.Execute(ctx, "getversion", "options")
		if jdk.Feature >= 24 {
			if err != nil || !strings.HasPrefix(string(out.Output), "2") {
				t.Errorf("getversion: %v %v", out, err)
			}
		} else if !errors.As(err, &je) {
			t.Errorf("getversion on JDK %d: %v", jdk.Feature, err)
		}
		if !j.Alive() {
			t.Fatal("JVM died")
		}
	})
}

// buildAgent compiles testdata/testagent.c against the JDK's jvmti.h.
func buildAgent(t *testing.T, jdk testutil.JDK) string {
	t.Helper()
	cc := testutil.MustHaveTool(t, "gcc")
	out := filepath.Join(t.TempDir(), "libtestagent.so")
	src, _ := filepath.Abs("testdata/testagent.c")
	cmd := exec.Command(cc, "-shared", "-fPIC", "-O2", "-I", filepath.Join(jdk.Home, "include"),
		"-I", filepath.Join(jdk.Home, "include", "linux"), "-o", out, src)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build agent: %v\n%s", err, b)
	}
	return out
}

func TestLoad(t *testing.T) {
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		agent := buildAgent(t, jdk)
		j := testutil.StartJVM(t, jdk, testutil.JVMOptions{})
		vm := dial(t, j.PID, nil)
		ctx := context.Background()
		if err := vm.Load(ctx, agent, true, ""); err != nil {
			t.Errorf("load ok agent: %v", err)
		}
		// Loading the same library twice calls Agent_OnAttach again.
		err := vm.Load(ctx, agent, true, "7")
		var ae *attach.AgentError
		if !errors.As(err, &ae) || ae.ReturnCode != 7 {
			t.Errorf("agent returning 7: %v", err)
		}
		// A missing library: status -1 before JDK 21, status 0 and a message since.
		err = vm.Load(ctx, "/nonexistent/libnone.so", true, "")
		if !errors.As(err, &ae) || ae.ReturnCode != -1 || ae.Message == "" {
			t.Errorf("missing library: %v", err)
		}
		if !j.Alive() {
			t.Fatal("JVM died")
		}
	})
}

func TestContainersAndUsers(t *testing.T) {
	testutil.MustHaveRoot(t)
	for _, tc := range []struct {
		name string
		opts testutil.JVMOptions
	}{
		{"namespace", testutil.JVMOptions{Namespace: true}},
		{"other-uid", testutil.JVMOptions{UID: 65534, GID: 65534}},
		{"namespace-other-uid", testutil.JVMOptions{Namespace: true, UID: 65534, GID: 65534}},
		{"readonly-cwd", testutil.JVMOptions{ReadOnlyCwd: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
				j := testutil.StartJVM(t, jdk, tc.opts)
				vm := dial(t, j.PID, nil)
				if vm.Target.NSPID != j.NSPID {
					t.Errorf("NSPID %d, want %d", vm.Target.NSPID, j.NSPID)
				}
				if out := jcmdOut(t, vm, "VM.version"); !strings.Contains(out, "JDK "+strconv.Itoa(jdk.Feature)) {
					t.Errorf("VM.version: %q", out)
				}
				if tc.opts.UID != 0 && vm.Target.UID != tc.opts.UID {
					t.Errorf("target uid %d", vm.Target.UID)
				}
				assertClean(t, j)
				// The socket lives in the JVM's own /tmp, not in ours.
				if tc.opts.Namespace {
					if _, err := os.Lstat(fmt.Sprintf("/tmp/.java_pid%d", j.NSPID)); err == nil && j.NSPID != j.PID {
						t.Errorf("socket appeared in the host /tmp")
					}
				}
				vm2 := dial(t, j.PID, nil)
				jcmdOut(t, vm2, "VM.uptime")
			})
		})
	}
}

func TestBadTargets(t *testing.T) {
	jdk := testutil.JDK17(t)
	ctx := context.Background()
	short := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, 3*time.Second) }

	t.Run("dead-pid", func(t *testing.T) {
		cmd := exec.Command("true")
		if err := cmd.Run(); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err := attach.Dial(ctx, cmd.Process.Pid, nil)
		if !errors.Is(err, attach.ErrProcessGone) {
			t.Errorf("dead pid: %v", err)
		}
		if d := time.Since(start); d > 100*time.Millisecond {
			t.Logf("dead pid took %v", d)
		}
	})
	t.Run("non-java", func(t *testing.T) {
		p := testutil.StartProcess(t, "sleep", "600")
		caught, ignored, err := testutil.SigQuitState(p.Process.Pid)
		if err != nil || caught || ignored {
			t.Fatalf("victim must have the default SIGQUIT disposition: caught=%t ignored=%t %v", caught, ignored, err)
		}
		_, err = attach.Dial(ctx, p.Process.Pid, nil)
		if !errors.Is(err, attach.ErrNotJVM) {
			t.Errorf("non-Java process: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
		if err := p.Process.Signal(unix.Signal(0)); err != nil {
			t.Errorf("the non-Java process did not survive: %v", err)
		}
		if _, err := os.Lstat(fmt.Sprintf("/tmp/.attach_pid%d", p.Process.Pid)); err == nil {
			t.Error("trigger file left behind")
		}
	})
	t.Run("Xrs", func(t *testing.T) {
		j := testutil.StartJVM(t, jdk, testutil.JVMOptions{JVMArgs: []string{"-Xrs"}})
		c, ign, _ := testutil.SigQuitState(j.PID)
		if c || ign {
			t.Fatalf("-Xrs JVM catches=%t ignores=%t SIGQUIT; the test needs the default disposition", c, ign)
		}
		// -Xrs starts the listener at startup, so attaching needs no signal at all.
		vm := dial(t, j.PID, nil)
		jcmdOut(t, vm, "VM.version")
		time.Sleep(50 * time.Millisecond)
		if !j.Alive() {
			t.Fatal("-Xrs JVM died")
		}
	})
	t.Run("Xrs-socket-removed", func(t *testing.T) {
		j := testutil.StartJVM(t, jdk, testutil.JVMOptions{JVMArgs: []string{"-Xrs"}})
		sock := fmt.Sprintf("/tmp/.java_pid%d", j.NSPID)
		if err := os.Remove(sock); err != nil {
			t.Fatal(err)
		}
		c, cancel := short()
		defer cancel()
		_, err := attach.Dial(c, j.PID, nil)
		if !errors.Is(err, attach.ErrNoListener) {
			t.Errorf("-Xrs without socket: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
		if !j.Alive() {
			t.Fatal("-Xrs JVM died")
		}
		assertClean(t, j)
	})
	t.Run("attach-disabled", func(t *testing.T) {
		j := testutil.StartJVM(t, jdk, testutil.JVMOptions{JVMArgs: []string{"-XX:+DisableAttachMechanism"}})
		start := time.Now()
		_, err := attach.Dial(ctx, j.PID, nil)
		d := time.Since(start)
		if !errors.Is(err, attach.ErrAttachDisabled) || !errors.Is(err, attach.ErrNoListener) {
			t.Errorf("attach disabled: %v", err)
		}
		if d > 100*time.Millisecond {
			t.Errorf("attach-disabled refusal took %v, want < 100ms", d)
		}
		assertClean(t, j)
	})
	t.Run("stopped", func(t *testing.T) {
		for _, warm := range []bool{false, true} {
			j := testutil.StartJVM(t, jdk, testutil.JVMOptions{})
			if warm {
				jcmdOut(t, dial(t, j.PID, nil), "VM.version")
			}
			if err := unix.Kill(j.PID, unix.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			waitState(t, j.PID, 'T')
			c, cancel := short()
			start := time.Now()
			vm, err := attach.Dial(c, j.PID, nil)
			if err == nil {
				_, err = vm.Jcmd(c, "VM.version")
			}
			cancel()
			if !errors.Is(err, attach.ErrNoListener) || !strings.Contains(err.Error(), "stopped") {
				t.Errorf("stopped JVM (warm=%t): %v", warm, err)
			}
			if d := time.Since(start); d > 3*time.Second+500*time.Millisecond {
				t.Errorf("stopped JVM: took %v, beyond the deadline", d)
			}
			_ = unix.Kill(j.PID, unix.SIGCONT)
			assertClean(t, j)
		}
	})
	t.Run("frozen", func(t *testing.T) {
		// The cgroup freezer (podman pause) leaves the JVM's threads sleeping, not stopped: an error
		// within a watch interval of the deadline-free wait, not a hang.
		for _, warm := range []bool{false, true} {
			j := testutil.StartJVM(t, jdk, testutil.JVMOptions{})
			if warm {
				jcmdOut(t, dial(t, j.PID, nil), "VM.version")
			}
			thaw := testutil.Freeze(t, j.PID)
			start := time.Now()
			vm, err := attach.Dial(context.Background(), j.PID, nil)
			if err == nil {
				_, err = vm.Jcmd(context.Background(), "VM.version")
			}
			d := time.Since(start)
			thaw()
			if !errors.Is(err, attach.ErrNoListener) || !strings.Contains(err.Error(), "frozen") {
				t.Errorf("frozen JVM (warm=%t): %v", warm, err)
			}
			t.Logf("frozen JVM (warm=%t): refused after %v", warm, d.Round(time.Millisecond))
			assertClean(t, j)
			if warm { // thawed, it answers again
				jcmdOut(t, dial(t, j.PID, nil), "VM.version")
			}
		}
	})
	t.Run("busy-listener", func(t *testing.T) {
		j := testutil.StartJVM(t, jdk, testutil.JVMOptions{})
		jcmdOut(t, dial(t, j.PID, nil), "VM.version")
		// A client that sends half a request blocks HotSpot's single listener thread.
		blocker, err := net.Dial("unix", fmt.Sprintf("/tmp/.java_pid%d", j.NSPID))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := blocker.Write([]byte("1\x00jcmd\x00")); err != nil {
			t.Fatal(err)
		}
		c, cancel := context.WithTimeout(ctx, time.Second)
		vm := dial(t, j.PID, nil)
		_, err = vm.Jcmd(c, "VM.version")
		cancel()
		if !errors.Is(err, attach.ErrNoListener) {
			t.Errorf("busy listener: %v", err)
		}
		blocker.Close()
		jcmdOut(t, vm, "VM.version")
	})
}

func waitState(t *testing.T, pid int, state byte) {
	t.Helper()
	for range 200 {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if i := strings.LastIndexByte(string(b), ')'); i > 0 && len(b) > i+2 && b[i+2] == state {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("process %d never reached state %c", pid, state)
}

func TestPlanted(t *testing.T) {
	testutil.MustHaveRoot(t)
	jdk := testutil.JDK17(t)
	ctx := context.Background()

	plantSocket := func(t *testing.T, path string, uid int) net.Listener {
		l, err := net.Listen("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close(); os.Remove(path) })
		if err := os.Chmod(path, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Lchown(path, uid, uid); err != nil {
			t.Fatal(err)
		}
		return l
	}
	t.Run("socket-other-uid", func(t *testing.T) {
		j := testutil.StartJVM(t, jdk, testutil.JVMOptions{})
		plantSocket(t, fmt.Sprintf("/tmp/.java_pid%d", j.NSPID), 65534)
		_, err := attach.Dial(ctx, j.PID, nil)
		if !errors.Is(err, attach.ErrPermission) {
			t.Errorf("socket owned by another uid: %v", err)
		}
		assertClean(t, j)
	})
	t.Run("socket-same-uid-other-process", func(t *testing.T) {
		j := testutil.StartJVM(t, jdk, testutil.JVMOptions{})
		// A trigger a killed attacher left before the socket appeared: removed even though the first
		// connection fails (the cleanup runs after the first request, or when connecting fails).
		trig := filepath.Join(fmt.Sprintf("/proc/%d/cwd", j.PID), ".attach_pid"+strconv.Itoa(j.NSPID))
		if err := os.WriteFile(trig, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(trig) })
		l := plantSocket(t, fmt.Sprintf("/tmp/.java_pid%d", j.NSPID), 0)
		got := make(chan []byte, 1)
		go func() {
			c, err := l.Accept()
			if err != nil {
				got <- nil
				return
			}
			defer c.Close()
			c.SetReadDeadline(time.Now().Add(2 * time.Second))
			b := make([]byte, 4096)
			n, _ := c.Read(b)
			got <- b[:n]
		}()
		vm, err := attach.Dial(ctx, j.PID, nil)
		if err == nil {
			_, err = vm.Jcmd(ctx, "VM.version secret")
		}
		if !errors.Is(err, attach.ErrPermission) || !strings.Contains(err.Error(), "planted") {
			t.Errorf("impostor socket: %v", err)
		}
		if _, err := os.Lstat(trig); err == nil {
			t.Error("the stale trigger file was left after a refused first connection")
		}
		if vm != nil {
			vm.Close()
		}
		l.Close()
		if b := <-got; len(b) > 0 {
			t.Errorf("the impostor received %q", b)
		}
	})
	// A socket nobody listens on, as a JVM killed by SIGKILL leaves it, under the pid of a JVM started later
	// (pids are reused: CI once gave a JDK 11 JVM of uid 65534 the pid of a root JVM killed an hour before).
	staleSocket := func(t *testing.T, path string, uid int) {
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		// A socket already there is one a JVM killed earlier left under this reused pid (other tests kill
		// JVMs while they attach).
		_ = os.Remove(path)
		err = unix.Bind(fd, &unix.SockaddrUnix{Name: path})
		unix.Close(fd) // bound, never listening: connect is refused
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(path) })
		if err := os.Chmod(path, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Lchown(path, uid, uid); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name          string
		jvmUID, owner int
	}{
		{"stale-socket-other-uid", 65534, 0}, // removed by us (the JVM may not replace it in the sticky /tmp)
		{"stale-socket-same-uid", 0, 0},      // replaced by the JVM
	} {
		t.Run(tc.name, func(t *testing.T) {
			testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
				j := testutil.StartJVM(t, jdk, testutil.JVMOptions{UID: tc.jvmUID, GID: tc.jvmUID})
				path := fmt.Sprintf("/proc/%d/root/tmp/.java_pid%d", j.PID, j.NSPID)
				staleSocket(t, path, tc.owner)
				vm := dial(t, j.PID, nil)
				if out := jcmdOut(t, vm, "VM.version"); !strings.Contains(out, "JDK "+strconv.Itoa(jdk.Feature)) {
					t.Errorf("VM.version: %q", out)
				}
				// The operation's peer was the JVM (attach checks SO_PEERCRED); the socket is its user's. Its
				// inode proves nothing: the file system may give the stale one's number to the new socket.
				var st unix.Stat_t
				if err := unix.Lstat(path, &st); err != nil || int(st.Uid) != tc.jvmUID {
					t.Errorf("after attaching, %s: %v, uid %d: want the JVM's own socket", path, err, st.Uid)
				}
				assertClean(t, j)
			})
		})
	}
	// The JVM's own listener runs, and its socket is replaced by a dead one of the same user (a JVM with
	// the same pid in another container sharing /tmp, killed): HotSpot starts its listener again when a
	// SIGQUIT finds the socket gone.
	t.Run("stale-socket-over-listener", func(t *testing.T) {
		testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
			j := testutil.StartJVM(t, jdk, testutil.JVMOptions{})
			jcmdOut(t, dial(t, j.PID, nil), "VM.version")
			path := fmt.Sprintf("/proc/%d/root/tmp/.java_pid%d", j.PID, j.NSPID)
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			staleSocket(t, path, 0)
			vm := dial(t, j.PID, nil)
			jcmdOut(t, vm, "VM.uptime")
			if _, err := os.Lstat(path); err != nil {
				t.Errorf("after attaching: %v", err)
			}
			assertClean(t, j)
		})
	})
	t.Run("socket-symlink", func(t *testing.T) {
		j := testutil.StartJVM(t, jdk, testutil.JVMOptions{})
		path := fmt.Sprintf("/tmp/.java_pid%d", j.NSPID)
		if err := os.Symlink("/dev/null", path); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(path) })
		_, err := attach.Dial(ctx, j.PID, nil)
		if !errors.Is(err, attach.ErrPermission) || !strings.Contains(err.Error(), "symbolic link") {
			t.Errorf("symlink socket: %v", err)
		}
	})
	t.Run("trigger-symlink", func(t *testing.T) {
		j := testutil.StartJVM(t, jdk, testutil.JVMOptions{})
		victim := filepath.Join(t.TempDir(), "victim")
		trig := filepath.Join(fmt.Sprintf("/proc/%d/cwd", j.PID), ".attach_pid"+strconv.Itoa(j.NSPID))
		if err := os.Symlink(victim, trig); err != nil {
			t.Fatal(err)
		}
		_ = os.Lchown(trig, 65534, 65534)
		t.Cleanup(func() { os.Remove(trig) })
		vm := dial(t, j.PID, nil) // falls back to the trigger in /tmp
		jcmdOut(t, vm, "VM.version")
		if _, err := os.Lstat(victim); err == nil {
			t.Error("the symlink was followed")
		}
		if fi, err := os.Lstat(trig); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Error("the planted symlink was touched")
		}
		if _, err := os.Lstat(fmt.Sprintf("/tmp/.attach_pid%d", j.NSPID)); err == nil {
			t.Error("trigger left in /tmp")
		}
	})
}

// TestDialAsOwner checks the JDK 8 credential path without a JDK 8: the connection made on a
// dedicated thread carries the target's uid, and the rest of the process keeps root.
func TestDialAsOwner(t *testing.T) {
	testutil.MustHaveRoot(t)
	// The dialing thread runs as uid 65534: the socket must be reachable for it.
	dir, err := os.MkdirTemp("/var/tmp", "jvmkit-dialas-*")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "s")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	os.Chmod(path, 0o777)
	peer := make(chan *unix.Ucred, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			peer <- nil
			return
		}
		defer c.Close()
		raw, _ := c.(*net.UnixConn).SyscallConn()
		raw.Control(func(fd uintptr) {
			u, _ := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
			peer <- u
		})
	}()
	dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := attach.DialAs(context.Background(), dfd, "s", 65534, 65533)
	unix.Close(dfd) // DialAs connects through a copy of its own
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	u := <-peer
	if u == nil || u.Uid != 65534 || u.Gid != 65533 {
		t.Errorf("peer credentials %+v, want uid 65534 gid 65533", u)
	}
	if os.Geteuid() != 0 || os.Getegid() != 0 {
		t.Errorf("process credentials changed: euid %d egid %d", os.Geteuid(), os.Getegid())
	}
	// Other threads still have root's powers.
	if err := os.WriteFile(filepath.Join(dir, "root-only"), nil, 0o600); err != nil {
		t.Error(err)
	}
}

// slowWriter takes its time over the first write, like a pipe to a stalled consumer.
type slowWriter struct {
	delay time.Duration
	n     int
}

func (w *slowWriter) Write(p []byte) (int, error) {
	if w.n == 0 {
		time.Sleep(w.delay)
	}
	w.n += len(p)
	return len(p), nil
}

// TestSlowConsumerDoesNotStall: JDK 25 writes a streamed thread dump into the socket from a
// safepoint; a client that stops reading would freeze the JVM (3 s measured with a naive client).
// Ours drains the socket whatever its consumer does, even with streaming on.
func TestSlowConsumerDoesNotStall(t *testing.T) {
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		t.Parallel() // two JDKs at a time: the slow consumer sleeps
		cp := testutil.CompileFiles(t, jdk, "testdata/Ticker.java")
		j := testutil.StartJVM(t, jdk, testutil.JVMOptions{Main: "Ticker", ClassPath: cp, Args: []string{"2000"}})
		for _, streaming := range []bool{false, true} {
			seen := len(j.Stdout())
			vm := dial(t, j.PID, &attach.Options{Streaming: streaming})
			w := &slowWriter{delay: 2 * time.Second}
			if err := vm.ExecuteTo(context.Background(), w, "threaddump"); err != nil {
				t.Fatal(err)
			}
			if w.n < 500_000 {
				t.Errorf("thread dump of %d bytes; the test needs a large one", w.n)
			}
			time.Sleep(200 * time.Millisecond)
			// A stalled reader would freeze the JVM for the whole 2 s delay; producing the dump of
			// 2000 threads at a safepoint takes ~150 ms by itself on this machine when streamed.
			worst := 0
			for _, line := range strings.Split(j.Stdout()[seen:], "\n") {
				if v, ok := strings.CutPrefix(line, "stall "); ok {
					if n, _ := strconv.Atoi(v); n > worst {
						worst = n
					}
				}
			}
			t.Logf("streaming=%t: %d-byte dump, worst application stall beyond 100 ms: %d ms", streaming, w.n, worst)
			if worst >= 1000 {
				t.Errorf("streaming=%t: the JVM stalled %d ms while the consumer was slow", streaming, worst)
			}
		}
	})
}

// TestCancelledReply: a context cancelled while a long reply comes in ends ExecuteTo with the
// cancellation, never with success and the output cut short (cancelling shuts the socket down, which a
// read sees as the reply's end).
func TestCancelledReply(t *testing.T) {
	jdk := testutil.JDK17(t)
	cp := testutil.CompileFiles(t, jdk, "testdata/Ticker.java")
	j := testutil.StartJVM(t, jdk, testutil.JVMOptions{Main: "Ticker", ClassPath: cp, Args: []string{"2000"}})
	vm := dial(t, j.PID, nil)
	cancelled := 0
	for range 10 {
		ctx, cancel := context.WithCancel(context.Background())
		w := &cancellingWriter{cancel: cancel}
		err := vm.ExecuteTo(ctx, w, "threaddump")
		cancel()
		switch {
		case err == nil && w.n < 500_000: // the socket holds ~200 KB of it at a time
			t.Fatalf("cancelled at the first write: success with %d bytes of a dump of over 500,000", w.n)
		case err != nil && !errors.Is(err, context.Canceled):
			t.Fatalf("cancelled: %v, want context.Canceled", err)
		case err != nil:
			cancelled++
		}
	}
	if cancelled == 0 {
		t.Error("no reply was cut by the cancellation: the dump came whole each time; the test needs a longer one")
	}
	jcmdOut(t, vm, "VM.version") // it still answers
	assertClean(t, j)
}

// cancellingWriter cancels its context at the first write, then takes a moment over it, as a consumer
// interrupted while it writes does.
type cancellingWriter struct {
	cancel func()
	n      int
}

func (w *cancellingWriter) Write(p []byte) (int, error) {
	if w.n == 0 {
		w.cancel()
		// A slow consumer, not a wait for anything: abort (context.AfterFunc) usually runs meanwhile, and
		// any order of the two must pass.
		time.Sleep(20 * time.Millisecond)
	}
	w.n += len(p)
	return len(p), nil
}

// TestSharedVM: one VM used by many goroutines at once (the listener serves one at a time; the
// rest wait in its backlog or in our backoff).
func TestSharedVM(t *testing.T) {
	jdk := testutil.JDK17(t)
	j := testutil.StartJVM(t, jdk, testutil.JVMOptions{})
	vm := dial(t, j.PID, nil)
	errs := make(chan error, 20)
	for range 20 {
		go func() {
			out, err := vm.Jcmd(context.Background(), "VM.version")
			if err == nil && !strings.Contains(out, "JDK 17") {
				err = fmt.Errorf("output %q", out)
			}
			errs <- err
		}()
	}
	for range 20 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
