//go:build linux

package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestLinksLittle keeps gjcmd's start small (issue 13): its package graph has none of the toolkit's heavy
// parts, nor the standard packages whose package inits run at every start for nothing gjcmd's paths do
// (encoding/json's base64 encodings, log/slog's default logger, net/netip's unique handles), and no
// regexp is reachable from its code (regexp's Unicode tables would be built at start).
func TestLinksLittle(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	for _, bad := range []string{"github.com/cilium/ebpf", "github.com/google/pprof", "github.com/spf13/cobra",
		"github.com/jvmkit/jvmkit/flame", "github.com/jvmkit/jvmkit/unwind", "github.com/jvmkit/jvmkit/usdt",
		"github.com/jvmkit/jvmkit/vmstructs", "encoding/json", "encoding/base64", "log/slog", "log", "net/netip", "net"} {
		for _, d := range deps {
			if d == bad || strings.HasPrefix(d, bad+"/") {
				t.Errorf("gjcmd links %s", d)
			}
		}
	}
	// The GOMAXPROCS updater, a goroutine started before main, stays off (main.go's //go:debug).
	if out, err := exec.Command("go", "version", "-m", gjcmdBin).CombinedOutput(); err != nil || !strings.Contains(string(out), "updatemaxprocs=0") {
		t.Errorf("go version -m gjcmd: no updatemaxprocs=0 (%v)\n%s", err, out)
	}
	bin := filepath.Join(t.TempDir(), "gjcmd-syms")
	build := exec.Command("go", "build", "-o", bin, ".") // with its symbol table
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	nm, err := exec.Command("go", "tool", "nm", bin).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool nm: %v\n%s", err, nm)
	}
	reached := false
	for line := range strings.Lines(string(nm)) {
		f := strings.Fields(line)
		if len(f) != 3 || f[1] != "T" {
			continue
		}
		// The packages are imported (by parsers gjcmd never runs), so their init tasks stay.
		if !reached && strings.HasPrefix(f[2], "regexp") && !strings.Contains(f[2], ".init") {
			t.Errorf("gjcmd reaches %s: a regular expression on one of its paths (jcmd/match.go has hand-written matchers)", f[2])
			reached = true
		}
		// jvmkit's own packages run no code before main: each init function is a page or two touched
		// at every start (about 0.01 ms each here). Sentinel errors are laid out by the compiler (see
		// internal/procerr.Error), lookups are switches, not maps.
		if packageInit.MatchString(f[2]) {
			t.Errorf("gjcmd runs %s at every start", f[2])
		}
	}
}

// packageInit matches the init functions of jvmkit's packages (not methods named init).
var packageInit = regexp.MustCompile(`^github\.com/jvmkit/[^()]*\.(init|init\.\d+|map\.init\.\d+)$`)
