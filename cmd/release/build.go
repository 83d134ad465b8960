package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// tools are the binaries a release ships, each a main package under cmd/.
var tools = []string{"gjcmd", "gjmaps", "jvmkit"}

// findRoot finds jvmkit's module root above dir (cmd/release runs from its own directory).
func findRoot(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && bytes.HasPrefix(b, []byte("module github.com/jvmkit/jvmkit\n")) {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no jvmkit module above %s", dir)
		}
	}
}

// buildBinaries builds the static binaries for linux/arch into dir: CGO off, -trimpath, no VCS stamping
// (the build would differ between a clean checkout and a worktree), version, commit and the commit's date
// stamped into cmd/internal/cliutil.
func buildBinaries(root, dir, arch string, s stamp) error {
	pkg := "github.com/jvmkit/jvmkit/cmd/internal/cliutil."
	ldflags := strings.Join([]string{"-s", "-w",
		"-X", pkg + "Version=" + s.Version,
		"-X", pkg + "Commit=" + s.Commit,
		"-X", pkg + "Date=" + s.Date.Format("2006-01-02T15:04:05Z"),
	}, " ")
	args := []string{"build", "-trimpath", "-buildvcs=false", "-ldflags", ldflags, "-o", dir + "/"}
	for _, t := range tools {
		args = append(args, "./cmd/"+t)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch, "GOTOOLCHAIN=local", "GOFLAGS=-buildvcs=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build for linux/%s: %w\n%s", arch, err, out)
	}
	return nil
}
