//go:build linux

package vmstructs

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jvmkit/jvmkit/internal/testutil"
	"github.com/jvmkit/jvmkit/usdt"
)

// TestContainers reads JVMs in real containers from the host (podman/runc, pivot_root and chroot; the
// trixie root's JDKs as uid 1000, pid 1, with a private /tmp) and checks every reader against the
// container's own jcmd: the thread list against Thread.print, `jvmkit flags` against VM.flags -all line
// for line, the code cache against Compiler.perfmap. Under chroot the mappings show the host's full
// paths, so libjvm.so is reached through /proc/<pid>/map_files (internal/rootfs.OpenMapped); the USDT
// modules, which take the same path, are checked too.
func TestContainers(t *testing.T) {
	testutil.ForEachContainerJDK(t, func(t *testing.T, kind testutil.ContainerKind, jdk testutil.JDK) {
		t.Parallel() // two containers at a time: most of the time goes in podman and the container's jcmd
		jvm := testutil.StartJVM(t, jdk, testutil.JVMOptions{
			Container: kind, UID: 1000, GID: 1000,
			Main: "Threads", Args: []string{"10"}, JVMArgs: append(append([]string(nil), flagTestArgs...), stableArgs...),
		})
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		inJVM := func(args ...string) []byte {
			t.Helper()
			// podman exec passes no locale: without one, jcmd prints non-ASCII thread names as "?".
			out, err := jvm.Command(ctx, "/usr/bin/env", append([]string{"LANG=C.UTF-8", filepath.Join(jdk.JavaHome(), "bin/jcmd"), "1"}, args...)...).CombinedOutput()
			if err != nil {
				t.Fatalf("the container's jcmd 1 %s: %v\n%s", strings.Join(args, " "), err, out)
			}
			return out
		}
		inJVM("VM.version") // the first attach starts the "Attach Listener" thread that Thread.print will list
		vm, err := Open(ctx, jvm.PID)
		if err != nil {
			t.Fatal(err)
		}
		defer vm.Close()
		lib, err := os.Open(jvm.HostPath(vm.LibJVM))
		if kind == testutil.Chroot {
			if err == nil {
				lib.Close()
				t.Errorf("under chroot, /proc/%d/root%s exists: the test no longer covers the map_files path", jvm.PID, vm.LibJVM)
			}
		} else if err != nil {
			t.Errorf("libjvm at %s: %v", vm.LibJVM, err)
		} else {
			lib.Close()
		}

		threads, err := vm.Threads()
		if err != nil {
			t.Fatal(err)
		}
		compareThreads(t, threads, parseThreadPrint(t, inJVM("Thread.print")))

		jout := string(inJVM("VM.flags", "-all"))
		compareFlagLines(t, jout, cliFlags(t, jvm.PID), cliFlags(t, jvm.PID))

		// Compiler.perfmap writes into the container's /tmp, which the host reaches through its root.
		perfArgs, perfPath := []string{"Compiler.perfmap"}, "/tmp/perf-1.map"
		if jdk.Feature >= 22 {
			perfPath = "/tmp/jvmkit-test.map"
			perfArgs = append(perfArgs, perfPath)
		}
		inJVM(perfArgs...)
		data, err := os.ReadFile(jvm.HostPath(perfPath))
		if err != nil {
			t.Fatal(err)
		}
		blobs, err := vm.CodeBlobs()
		if err != nil {
			t.Fatal(err)
		}
		methods, methodsOK, others, othersOK, diff := ccCompare(ccParsePerfmap(t, data), blobs)
		t.Logf("%s %s: %d threads; perf map: %d/%d nmethods and %d/%d other blobs found with the same start, size and name",
			kind, jdk.Name(), len(threads), methodsOK, methods, othersOK, others)
		for i, d := range diff {
			if i == 10 {
				break
			}
			t.Log(d)
		}
		if methods == 0 || methodsOK*100 < methods*99 || others < 50 || othersOK*100 < others*99 {
			t.Errorf("the code cache agrees with Compiler.perfmap on %d of %d nmethods and %d of %d other blobs, want >= 99%%",
				methodsOK, methods, othersOK, others)
		}

		mods, err := usdt.Modules(ctx, jvm.PID)
		if err != nil {
			t.Fatal(err)
		}
		// Debian builds libjvm with its SystemTap probes (531 in 21 and 25).
		found := false
		for _, m := range mods {
			if m.Path != vm.LibJVM {
				continue
			}
			found = true
			st, err := os.Stat(m.File)
			if err != nil || len(m.Probes) == 0 {
				t.Errorf("USDT module %s at %s: %d probes, %v", m.Path, m.File, len(m.Probes), err)
			} else {
				t.Logf("libjvm's %d USDT probes read from %s (%d bytes)", len(m.Probes), m.File, st.Size())
			}
		}
		if !found {
			t.Errorf("usdt.Modules found no probes in %s", vm.LibJVM)
		}
	})
}
