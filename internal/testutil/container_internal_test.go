//go:build linux

package testutil

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// A test binary that died leaves its podman containers; the next one removes them, and only them.
func TestPruneStaleContainers(t *testing.T) {
	MustHaveRoot(t)
	podman := MustHaveTool(t, "podman")
	jdks := rootfsJDKs(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	// A finished process's pid with its start time: the owner record of a test binary that is gone.
	done := exec.Command("true")
	if err := done.Run(); err != nil {
		t.Fatal(err)
	}
	stale := fmt.Sprintf("%d-12345", done.Process.Pid)
	containers := map[string]string{
		fmt.Sprintf("jvmkit-test-%s-1", stale):      stale,    // dead owner: removed
		containerName(t):                            owner(t), // this binary: kept
		fmt.Sprintf("jvmkit-prune-%d", os.Getpid()): stale,    // not ours by name: kept
	}
	for name, label := range containers {
		out, err := exec.CommandContext(ctx, podman, "--runtime", "runc", "create", "--name", name,
			"--label", ownerLabel+"="+label, "--network", "none", "--rootfs", jdks[0].Root+":O", "/bin/true").CombinedOutput()
		if err != nil {
			t.Fatalf("podman create %s: %v\n%s", name, err, out)
		}
		t.Cleanup(func() { _ = exec.Command(podman, "rm", "--force", "--ignore", name).Run() })
	}
	if errs := pruneStaleContainers(ctx, podman); len(errs) > 0 {
		t.Errorf("pruneStaleContainers: %v", errs)
	}
	out, err := exec.CommandContext(ctx, podman, "ps", "--all", "--format", "{{.Names}}").Output()
	if err != nil {
		t.Fatal(err)
	}
	for name, label := range containers {
		removed := !strings.Contains(string(out), name+"\n")
		if want := label == stale && strings.HasPrefix(name, "jvmkit-test-"); removed != want {
			t.Errorf("%s (owner %s): removed %v, want %v", name, label, removed, want)
		}
	}
}
