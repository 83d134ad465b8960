//go:build linux

package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func TestPruneStaleWorkDirs(t *testing.T) {
	// A process that has exited and been reaped: its pid names nothing (or, rarely, a newer process, which
	// has another start time).
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	deadOwner := fmt.Sprintf("%d 1\n", dead.Process.Pid)
	liveOwner, err := ownerRecord(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	dirs := make(map[string]string)
	for name, owner := range map[string]string{"dead": deadOwner, "live": liveOwner, "unowned": ""} {
		dir, err := os.MkdirTemp(varTmp, "jvmkit-test-prune-*")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		if owner != "" {
			if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(owner), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		dirs[name] = dir
	}
	pruneStaleWorkDirs()
	for name, dir := range dirs {
		_, err := os.Stat(dir)
		if kept := err == nil; kept != (name != "dead") {
			t.Errorf("%s work directory: kept %v", name, kept)
		}
	}
}
