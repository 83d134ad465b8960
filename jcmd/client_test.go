package jcmd_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jvmkit/jvmkit/internal/procfs"
	"github.com/jvmkit/jvmkit/internal/testutil"
	"github.com/jvmkit/jvmkit/jcmd"
)

func dialClient(t *testing.T, pid int) *jcmd.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := jcmd.Dial(ctx, pid, nil)
	if err != nil {
		t.Fatalf("Dial(%d): %v", pid, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// jfrPrint runs the JDK's jfr tool on a recording.
func jfrPrint(t *testing.T, jdk testutil.JDK, args ...string) string {
	t.Helper()
	out, err := exec.Command(jdk.Bin("jfr"), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("jfr %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// TestLeakChain: a recording with Old Object Sample enabled, dumped with path-to-gc-roots=true,
// names the chain from a GC root to the leaked objects (checked with the JDK's jfr tool). Plain
// JVM and a JVM in its own pid+mount namespace with a private /tmp, whose file is copied out.
func TestLeakChain(t *testing.T) {
	testutil.MustHaveRoot(t)
	for _, ns := range []bool{false, true} {
		t.Run(fmt.Sprintf("namespace=%t", ns), func(t *testing.T) {
			testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
				t.Parallel() // two JDKs at a time: what this checks does not depend on the machine's load
				j := testutil.StartJVM(t, jdk, testutil.JVMOptions{Main: "Leak", JVMArgs: []string{"-Xmx64m"}, Namespace: ns})
				c := dialClient(t, j.PID)
				ctx := context.Background()
				rec, err := c.StartJFR(ctx, jcmd.JFRStart{Name: "leak", Settings: []string{"profile"}})
				if err != nil {
					t.Fatal(err)
				}
				if rec.Name != "leak" || rec.State != "running" {
					t.Errorf("started %+v", rec)
				}
				// Chains appear once leaked items were sampled and are still alive: dump until one shows.
				dir := t.TempDir()
				deadline := time.Now().Add(90 * time.Second)
				for attempt := 1; ; attempt++ {
					f, err := c.DumpJFR(ctx, jcmd.JFRDump{Name: "leak", Filename: "leak.jfr", PathToGCRoots: jcmd.Bool(true)})
					if err != nil {
						t.Fatal(err)
					}
					if ns != strings.HasPrefix(f.HostPath, "/proc/") && ns {
						t.Errorf("host path %q", f.HostPath)
					}
					dst, n, err := c.CopyOut(ctx, f, dir, true)
					if err != nil {
						t.Fatal(err)
					}
					if n == 0 || filepath.Dir(dst) != dir {
						t.Fatalf("copied %d bytes to %s", n, dst)
					}
					out := jfrPrint(t, jdk, "print", "--events", "jdk.OldObjectSample", dst)
					if testutil.LeakChainInPrint(jdk.Feature, []byte(out)) {
						break
					}
					if time.Now().After(deadline) {
						t.Errorf("no reference chain from a GC root to the leak in %d dumps; the last has %d bytes of jfr print output", attempt, len(out))
						break
					}
					time.Sleep(time.Second) // poll interval: the JVM samples at its own pace
				}
				if _, err := c.StopJFR(ctx, "leak", ""); err != nil {
					t.Error(err)
				}
			})
		})
	}
}

func TestJFRRoundTrip(t *testing.T) {
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		j := testutil.StartJVM(t, jdk, testutil.JVMOptions{})
		c := dialClient(t, j.PID)
		ctx := context.Background()
		recs, err := c.CheckJFR(ctx, "")
		if err != nil || len(recs) != 0 {
			t.Fatalf("before: %v %v", recs, err)
		}
		one := jcmd.JFRStart{Name: "one", Duration: time.Hour, MaxSize: 10 << 20,
			Options: map[string]string{"jdk.ThreadSleep#enabled": "true"}}
		if jdk.Feature < 17 {
			if _, err := c.StartJFR(ctx, one); err == nil || !strings.Contains(err.Error(), "only from JDK 17") {
				t.Errorf("event settings on JDK %d: %v, want the JDK named", jdk.Feature, err)
			}
			one.Options = nil
		}
		r1, err := c.StartJFR(ctx, one)
		if err != nil {
			t.Fatal(err)
		}
		r2, err := c.StartJFR(ctx, jcmd.JFRStart{Name: "two words", Delay: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		recs, err = c.CheckJFR(ctx, "")
		if err != nil || len(recs) != 2 {
			t.Fatalf("check: %d recordings, %v", len(recs), err)
		}
		for _, r := range recs {
			switch r.ID {
			case r1.ID:
				if r.Name != "one" || r.State != "running" || r.Duration != time.Hour || r.MaxSize != 10<<20 {
					t.Errorf("recording one: %s %s %v %d", r.Name, r.State, r.Duration, r.MaxSize)
				}
			case r2.ID:
				if r.Name != "two words" || r.State != "delayed" {
					t.Errorf("recording two: %s %s", r.Name, r.State)
				}
			default:
				t.Errorf("unexpected recording %+v", r)
			}
		}
		f, err := c.StopJFR(ctx, "one", "one.jfr")
		if err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(f.HostPath)
		if err != nil || st.Size() == 0 {
			t.Errorf("stopped recording file %s: %v", f.HostPath, err)
		}
		os.Remove(f.HostPath)
		// The JVM refuses to stop a delayed recording, with status 0 and a message: an error here.
		if _, err := c.StopJFR(ctx, "two words", ""); err == nil || !strings.Contains(err.Error(), "must be started") {
			t.Errorf("stopping a delayed recording: %v", err)
		}
		if recs, _ := c.CheckJFR(ctx, ""); len(recs) != 1 || recs[0].Name != "two words" {
			t.Errorf("after stop: %d recordings", len(recs))
		}
		// Invalid options are refused before anything is sent.
		_, err = c.RunChecked(ctx, "JFR.dump path-to-gc-root=true")
		var oe *jcmd.OptionError
		if !errors.As(err, &oe) || oe.Suggestion != "path-to-gc-roots" {
			t.Errorf("misspelt option: %v", err)
		}
		if _, err := c.RunChecked(ctx, "JFR.start duration=often"); err == nil {
			t.Error("bad NANOTIME accepted")
		}
		if _, err := c.RunChecked(ctx, "JFR.sart"); !errors.Is(err, jcmd.ErrUnknownCommand) || !strings.Contains(err.Error(), "JFR.start") {
			t.Errorf("misspelt command: %v", err)
		}
	})
}

// TestDebugging: on JDK 17 a JVM with onjcmd=y listens only after VM.start_java_debugging and then
// completes a JDWP handshake on the port it really uses; JDK 24+ removed onjcmd.
func TestDebugging(t *testing.T) {
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		ctx := context.Background()
		if jdk.Feature >= 24 {
			j := testutil.StartJVM(t, jdk, testutil.JVMOptions{})
			_, err := dialClient(t, j.PID).StartDebugging(ctx)
			if !errors.Is(err, jcmd.ErrDebuggingUnsupported) || !strings.Contains(err.Error(), "JDK 24") {
				t.Errorf("JDK %d: %v", jdk.Feature, err)
			}
			return
		}
		j := testutil.StartJVM(t, jdk, testutil.JVMOptions{JVMArgs: []string{
			"-agentlib:jdwp=transport=dt_socket,server=y,suspend=n,onjcmd=y,address=127.0.0.1:0"}})
		before, err := procfs.Default.ListeningTCP(j.PID)
		if err != nil {
			t.Fatal(err)
		}
		if len(before) != 0 {
			t.Fatalf("listening before VM.start_java_debugging: %v", before)
		}
		d, err := dialClient(t, j.PID).StartDebugging(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if d.Transport != "dt_socket" || len(d.Listening) != 1 {
			t.Fatalf("debugger %+v", d)
		}
		conn, err := net.DialTimeout("tcp", d.Listening[0].String(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := conn.Write([]byte("JDWP-Handshake")); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 14)
		if _, err := io.ReadFull(conn, buf); err != nil || !bytes.Equal(buf, []byte("JDWP-Handshake")) {
			t.Errorf("handshake: %q %v", buf, err)
		}
	})
}

// TestHeapDumpInContainer: a heap dump written inside a container is reported with a path that
// works from the host.
func TestHeapDumpInContainer(t *testing.T) {
	testutil.MustHaveRoot(t)
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		j := testutil.StartJVM(t, jdk, testutil.JVMOptions{Namespace: true, UID: 65534, GID: 65534})
		c := dialClient(t, j.PID)
		f, err := c.HeapDump(context.Background(), "/tmp/heap.hprof", false, 0)
		if err != nil {
			t.Fatal(err)
		}
		if f.Path != "/tmp/heap.hprof" {
			t.Errorf("path %q", f.Path)
		}
		b := make([]byte, 12)
		fh, err := os.Open(f.HostPath)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		if _, err := fh.Read(b); err != nil || !strings.HasPrefix(string(b), "JAVA PROFILE") {
			t.Errorf("%s is not a heap dump: %q %v", f.HostPath, b, err)
		}
		if _, err := os.Stat("/tmp/heap.hprof"); err == nil && j.NSPID != j.PID {
			t.Error("the dump landed in the host's /tmp")
		}
	})
}

func TestStructuredCommands(t *testing.T) {
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		j := testutil.StartJVM(t, jdk, testutil.JVMOptions{Main: "Demo"})
		c := dialClient(t, j.PID)
		ctx := context.Background()
		td, err := c.ThreadPrint(ctx, true, false)
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]string{}
		for _, th := range td.Threads {
			names[th.Name] = th.State
		}
		if !strings.HasPrefix(names["demo-blocked"], "BLOCKED") || !strings.HasPrefix(names["demo-waiter"], "WAITING") {
			t.Errorf("thread states: blocked=%q waiter=%q", names["demo-blocked"], names["demo-waiter"])
		}
		flags, err := c.Flags(ctx, true)
		if err != nil || len(flags) < 500 {
			t.Fatalf("VM.flags -all: %d flags, %v", len(flags), err)
		}
		props, err := c.SystemProperties(ctx)
		if err != nil || props["java.vm.specification.version"] != fmt.Sprint(jdk.Feature) {
			t.Errorf("system properties: %v %v", props["java.vm.specification.version"], err)
		}
		if f, err := c.Feature(ctx); err != nil || f != jdk.Feature {
			t.Errorf("Feature = %d, %v", f, err)
		}
		f, err := c.PerfMap(ctx, "")
		if jdk.Feature < 17 {
			if !errors.Is(err, jcmd.ErrUnknownCommand) || !strings.Contains(err.Error(), fmt.Sprintf("JDK %d has no Compiler.perfmap", jdk.Feature)) {
				t.Errorf("Compiler.perfmap on JDK %d: %v, want the JDK named", jdk.Feature, err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		defer os.Remove(f.HostPath)
		if b, err := os.ReadFile(f.HostPath); err != nil || !bytes.Contains(b, []byte("Interpreter")) {
			t.Errorf("perf map %s: %v", f.HostPath, err)
		}
		_, err = c.PerfMap(ctx, "/tmp/x.map")
		if jdk.Feature < 22 && (err == nil || !strings.Contains(err.Error(), "JDK 22")) {
			t.Errorf("Compiler.perfmap filename on JDK %d: %v", jdk.Feature, err)
		}
		if jdk.Feature >= 22 {
			if err != nil {
				t.Error(err)
			}
			os.Remove("/tmp/x.map")
		}
	})
}
