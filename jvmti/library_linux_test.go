package jvmti_test

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jvmkit/jvmkit/internal/testutil"
)

// agentArches are the architectures whose agent library is committed and embedded, each with the C compiler
// that builds it on an amd64 machine (Debian's gcc and gcc-aarch64-linux-gnu).
var agentArches = map[string]string{"amd64": "gcc", "arm64": "aarch64-linux-gnu-gcc"}

// TestAgentLibraryFresh fails when a committed agent library was not rebuilt after a change of its source
// or build script (run `make agent`), and, with the compiler that built it, when a rebuild from source does
// not give the same bytes. Every architecture's library is checked, whatever this test runs on: a release
// embeds them all.
func TestAgentLibraryFresh(t *testing.T) {
	for _, name := range agentNames {
		for arch, cc := range agentArches {
			t.Run(name+"/"+arch, func(t *testing.T) { checkAgentLibrary(t, name, arch, cc) })
		}
	}
}

// agentNames are jvmkit's agents: agent/jvmkit_<name>.c builds libjvmkit-<name>-linux-<arch>.so.
var agentNames = []string{"perfmap", "heapsample"}

func checkAgentLibrary(t *testing.T, name, arch, cc string) {
	lib := "agent/libjvmkit-" + name + "-linux-" + arch + ".so"
	info, err := os.ReadFile(lib + ".buildinfo")
	if err != nil {
		t.Fatal(err)
	}
	fields := map[string]string{}
	for line := range strings.Lines(string(info)) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ": "); ok && !strings.HasPrefix(k, "#") {
			fields[k] = v
		}
	}
	for key, file := range map[string]string{
		"source-sha256":  "agent/jvmkit_" + name + ".c",
		"build-sha256":   "agent/build.sh",
		"library-sha256": lib,
	} {
		if got := fileSum(t, file); got != fields[key] {
			t.Errorf("%s has sha256 %s, %s.buildinfo says %s: run `make agent` and commit the library", file, got, lib, fields[key])
		}
	}
	checkAgentELF(t, lib, arch)

	t.Run("rebuild", func(t *testing.T) {
		cc := testutil.MustHaveTool(t, cc)
		include := "/usr/lib/jvm/java-17-openjdk-amd64/include"
		if _, err := os.Stat(filepath.Join(include, "jvmti.h")); err != nil {
			testutil.Skipf(t, "no JDK 17 headers: %v", err)
		}
		out, err := exec.Command(cc, "--version").Output()
		if err != nil {
			t.Fatal(err)
		}
		version, _, _ := strings.Cut(string(out), "\n")
		if version != fields["compiler"] {
			testutil.Skipf(t, "the library was built with %q, this machine has %q: the bytes may differ", fields["compiler"], version)
		}
		dir := t.TempDir()
		cmd := exec.Command("./agent/build.sh")
		cmd.Env = append(os.Environ(), "OUT="+dir, "CC="+cc, "JDK_INCLUDE="+include, "ARCH="+arch, "NAME="+name)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build.sh: %v\n%s", err, out)
		}
		want, err := os.ReadFile(lib)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(dir, filepath.Base(lib)))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("rebuilt library differs from %s (%d bytes, want %d): the build is not reproducible", lib, len(got), len(want))
		}
	})
}

// checkAgentELF checks what a JVM of that architecture needs to load the library: the right machine, libc
// alone (so that musl-based JVMs load it too: no glibc-only fortify or stack-protector symbols), and
// Agent_OnAttach exported.
func checkAgentELF(t *testing.T, lib, arch string) {
	t.Helper()
	f, err := elf.Open(lib)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[arch]; f.Machine != want {
		t.Errorf("%s: machine %v, want %v", lib, f.Machine, want)
	}
	libs, err := f.ImportedLibraries()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(libs, []string{"libc.so.6"}) {
		t.Errorf("%s needs %v, want libc.so.6 alone", lib, libs)
	}
	syms, err := f.DynamicSymbols()
	if err != nil {
		t.Fatal(err)
	}
	exported := false
	for _, s := range syms {
		if s.Section == elf.SHN_UNDEF && (strings.HasPrefix(s.Name, "__") && strings.HasSuffix(s.Name, "_chk") || s.Name == "__stack_chk_fail") {
			t.Errorf("%s imports %s (fortify or stack protector: musl lacks it)", lib, s.Name)
		}
		if s.Name == "Agent_OnAttach" && s.Section != elf.SHN_UNDEF {
			exported = true
		}
	}
	if !exported {
		t.Errorf("%s does not export Agent_OnAttach", lib)
	}
}

func fileSum(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
