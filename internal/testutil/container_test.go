//go:build linux

package testutil_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jvmkit/jvmkit/internal/testutil"
)

func TestContainers(t *testing.T) {
	probe, err := os.CreateTemp("/tmp", "jvmkit-probe-*")
	if err != nil {
		t.Fatal(err)
	}
	probe.Close()
	t.Cleanup(func() { os.Remove(probe.Name()) })

	testutil.ForEachContainerJDK(t, func(t *testing.T, kind testutil.ContainerKind, jdk testutil.JDK) {
		j := testutil.StartJVM(t, jdk, testutil.JVMOptions{Container: kind, UID: 1000, GID: 1000})
		if j.NSPID != 1 || j.PID == 1 {
			t.Errorf("PID %d, NSPID %d: want pid 1 in its namespace", j.PID, j.NSPID)
		}
		if got := statusField(t, j.PID, "Uid"); got != "1000\t1000\t1000\t1000" {
			t.Errorf("Uid %q, want 1000", got)
		}
		if exists(j.HostPath(probe.Name())) {
			t.Errorf("the JVM sees the host's %s: its /tmp is not private", probe.Name())
		}
		if !exists(j.HostPath("/tmp/hsperfdata_app/1")) {
			t.Errorf("no hsperfdata_app/1 in the container's /tmp")
		}
		assertOwnNamespaces(t, j.PID, "mnt", "pid")
		// The host sees the JVM's files at the container's paths, except for chroot, whose mount namespace keeps
		// the host's root: there they are the host's full paths, and /proc/<pid>/root + path is wrong.
		libjvm, cwd := filepath.Join(jdk.JavaHome(), "lib/server/libjvm.so"), j.Dir
		if kind == testutil.Chroot {
			libjvm, cwd = filepath.Join(jdk.Home, "lib/server/libjvm.so"), filepath.Join(jdk.Root, j.Dir)
		}
		if got, _ := os.Readlink(fmt.Sprintf("/proc/%d/cwd", j.PID)); got != cwd {
			t.Errorf("cwd %s, want %s (the host's path, bind-mounted)", got, cwd)
		}
		maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", j.PID))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(maps), " "+libjvm+"\n") {
			t.Errorf("/proc/%d/maps has no %s", j.PID, libjvm)
		}

		// The container's own jcmd, as the JVM's user, and the JDK's jcmd from the host agree that it attaches.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, err := j.Command(ctx, filepath.Join(jdk.JavaHome(), "bin/jcmd"), "1", "VM.version").CombinedOutput()
		if err != nil || !strings.Contains(string(out), jdk.Version) {
			t.Errorf("the container's jcmd 1 VM.version: %v\n%s", err, out)
		}
		if out := jcmd(t, jdk, j.PID, "VM.version"); !strings.Contains(out, jdk.Version) {
			t.Errorf("jcmd %d VM.version from the host:\n%s", j.PID, out)
		}
		if out, err := j.Command(ctx, "/usr/bin/id", "-u").CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "1000" {
			t.Errorf("Command runs as %q (%v), want uid 1000", out, err)
		}

		// The root filesystem is shared by every test: nothing the container does may change it.
		home := filepath.Join(jdk.Root, "home/app")
		err = j.Command(ctx, "/bin/sh", "-c", "echo x > /home/app/jvmkit-probe").Run()
		if kind != testutil.Podman && err == nil {
			t.Errorf("the container wrote into the root filesystem's /home/app")
		}
		if exists(filepath.Join(home, "jvmkit-probe")) {
			os.Remove(filepath.Join(home, "jvmkit-probe"))
			t.Errorf("a file the container wrote is in the shared root filesystem %s", jdk.Root)
		}

		id := j.ContainerID(t) // "" outside podman
		j.Stop()
		if j.Alive() {
			t.Errorf("%s still alive after Stop", j)
		}
		if id != "" {
			// This container: other test binaries may have theirs.
			if out, err := exec.Command("podman", "ps", "--all", "--filter", "id="+id, "--format", "{{.Names}}").Output(); err != nil || len(out) > 0 {
				t.Errorf("podman container %s after Stop: %q, %v", id, out, err)
			}
		}
	})
}
