package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/internal/testutil"
)

// TestConfigRefused: the file decides where every JVM's stacks go. One that others can write is
// refused, a FIFO neither blocks nor is read, and neither is another user's file.
func TestConfigRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.conf")
	if err := os.WriteFile(path, []byte("window: 30s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := applyAgentConfig(Command(os.Stdout, os.Stderr).Flags(), path); err != nil {
		t.Fatalf("the agent's own 0600 config: %v", err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := applyAgentConfig(Command(os.Stdout, os.Stderr).Flags(), path); err == nil || !strings.Contains(err.Error(), "can be changed by users") {
		t.Errorf("a config every user can write: %v", err)
	}
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := applyAgentConfig(Command(os.Stdout, os.Stderr).Flags(), fifo); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a FIFO config: %v", err)
	}
}

// TestConfigOfAnotherUser: a config file of another user (root can read it) is refused.
func TestConfigOfAnotherUser(t *testing.T) {
	testutil.MustHaveRoot(t) // chown
	path := filepath.Join(t.TempDir(), "agent.conf")
	if err := os.WriteFile(path, []byte("window: 30s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := applyAgentConfig(Command(os.Stdout, os.Stderr).Flags(), path); err == nil || !strings.Contains(err.Error(), "belongs to uid 65534") {
		t.Errorf("another user's config: %v", err)
	}
}
