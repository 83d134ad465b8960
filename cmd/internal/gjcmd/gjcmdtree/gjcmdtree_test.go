package gjcmdtree_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/jvmkit/jvmkit/cmd/internal/gjcmd"
	"github.com/jvmkit/jvmkit/cmd/internal/gjcmd/gjcmdtree"
)

// TestHelpAsCobra: gjcmd's own help and usage are what cobra prints for the tree the man pages and
// completions come from, so that the two cannot drift.
func TestHelpAsCobra(t *testing.T) {
	var want, got, stderr bytes.Buffer
	root := gjcmdtree.Command(&want, &stderr)
	root.SetOut(&want)
	root.SetArgs([]string{"--help"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if code := gjcmd.Main([]string{"--help"}, &got, &stderr); code != 0 {
		t.Fatalf("gjcmd --help: exit %d: %s", code, stderr.String())
	}
	if got.String() != want.String() {
		t.Errorf("gjcmd --help:\n%s\ncobra's help of the same tree:\n%s", got.String(), want.String())
	}
}

var update = flag.Bool("update", false, "rewrite gjcmd's embedded completion scripts")

// TestCompletionScripts: the scripts gjcmd embeds for `gjcmd completion SHELL` are cobra's for its tree
// (go test ./cmd/internal/gjcmd/gjcmdtree -update rewrites them), and gjcmd prints them.
func TestCompletionScripts(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		want, err := gjcmdtree.CompletionScript(shell)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("..", "completions", shell)
		if *update {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		var got, stderr bytes.Buffer
		if code := gjcmd.Main([]string{"completion", shell}, &got, &stderr); code != 0 {
			t.Fatalf("gjcmd completion %s: exit %d: %s", shell, code, stderr.String())
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Errorf("gjcmd completion %s differs from cobra's script for gjcmd's tree; run go test ./cmd/internal/gjcmd/gjcmdtree -update", shell)
		}
	}
}
