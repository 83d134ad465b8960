package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/jvmkit/jvmkit/internal/testutil"
)

func TestPackageVersion(t *testing.T) {
	d := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	for in, want := range map[string]string{
		"v1.2.3":                  "1.2.3",
		"v1.2.3-4-gabcdef0":       "1.2.3+4.gabcdef0",
		"v1.2.3-4-gabcdef0-dirty": "1.2.3+4.gabcdef0.dirty",
		"abcdef0":                 "0.0.0~git20261124.abcdef0",
		"abcdef0-dirty":           "0.0.0~git20261124.abcdef0.dirty",
	} {
		got, err := packageVersion(stamp{Version: in, Date: d})
		if err != nil || got != want {
			t.Errorf("packageVersion(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "latest", "v1.2", "1.2.3 x"} {
		if _, err := packageVersion(stamp{Version: bad, Date: d}); err == nil {
			t.Errorf("packageVersion(%q): no error", bad)
		}
	}
}

// TestReproducible: a second run on one commit gives the same bytes (amd64, see builtDist), and
// SHA256SUMS lists every file and verifies.
func TestReproducible(t *testing.T) {
	a, b := builtDist(t, 0), builtDist(t, 1)
	sums := func(dir string) map[string]string {
		data, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for l := range strings.Lines(string(data)) {
			sum, name, ok := strings.Cut(strings.TrimSpace(l), "  ")
			if !ok {
				t.Fatalf("%s: SHA256SUMS line %q", dir, l)
			}
			m[name] = sum
		}
		return m
	}
	sa, sb := sums(a), sums(b)
	if len(sb) != 4 {
		t.Errorf("the amd64 run wrote %d files, want 4: %v", len(sb), sb)
	}
	for name, sum := range sb {
		if sa[name] != sum {
			t.Errorf("%s differs between two runs: %s, %s", name, sa[name], sum)
		}
	}
	for _, pat := range []string{"*_linux_amd64.tar.gz", "*_linux_arm64.tar.gz", "*_amd64.deb", "*_arm64.deb",
		"*.x86_64.rpm", "*.aarch64.rpm", "*_linux_amd64.oci.tar", "*_linux_arm64.oci.tar"} {
		if _, ok := sa[filepath.Base(distFile(t, a, pat))]; !ok {
			t.Errorf("SHA256SUMS lacks %s", pat)
		}
	}
	if len(sa) != 8 {
		t.Errorf("SHA256SUMS lists %d files, want 8", len(sa))
	}
	cmd := exec.Command("sha256sum", "--strict", "-c", "SHA256SUMS")
	cmd.Dir = a
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("sha256sum -c: %v\n%s", err, out)
	}
	for name := range sa {
		if st, err := os.Stat(filepath.Join(a, name)); err == nil {
			t.Logf("%s  %d bytes  %s", sa[name], st.Size(), name)
		}
	}
}

// commandPaths lists every available command of the tools' trees ("jvmkit jfr print"): each has a man page.
func commandPaths(arch string) []string {
	var out []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		out = append(out, c.CommandPath())
		for _, s := range c.Commands() {
			if s.IsAvailableCommand() && !s.IsAdditionalHelpTopicCommand() {
				walk(s)
			}
		}
	}
	for _, t := range trees(arch) {
		walk(t)
	}
	return out
}

// TestArchives: each archive holds the binaries (static, for its architecture), README, completions for
// bash, zsh and fish, and a man page per command; all owned by root, dated by the commit.
func TestArchives(t *testing.T) {
	dir := builtDist(t, 0)
	s := testStamp(t)
	for _, arch := range []string{"amd64", "arm64"} {
		f, err := os.Open(distFile(t, dir, "*_linux_"+arch+".tar.gz"))
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(zr)
		got := map[string]bool{}
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if h.Uid != 0 || h.Gid != 0 || h.Uname != "root" || !h.ModTime.Equal(s.Date) {
				t.Errorf("%s: %s owned by %d/%s, dated %v; want root and %v", arch, h.Name, h.Uid, h.Uname, h.ModTime, s.Date)
			}
			_, rest, _ := strings.Cut(h.Name, "/")
			got[rest] = true
		}
		f.Close()
		want := []string{"README.md", "gjcmd", "gjmaps", "jvmkit"}
		for _, tool := range tools {
			want = append(want, "completions/bash/"+tool, "completions/zsh/_"+tool, "completions/fish/"+tool+".fish")
		}
		for _, p := range commandPaths(arch) {
			want = append(want, "man/man1/"+strings.ReplaceAll(p, " ", "-")+".1.gz")
		}
		for _, w := range want {
			if !got[w] {
				t.Errorf("%s archive lacks %s", arch, w)
			}
		}
		if _, err := os.Stat("../../LICENSE"); err == nil && !got["LICENSE"] {
			t.Errorf("%s archive lacks LICENSE", arch)
		}
		t.Logf("%s: %d entries, %d man pages", arch, len(got), len(commandPaths(arch)))
	}
}

// TestArm64Binaries: the arm64 binaries are static arm64 executables that run (under qemu-user-static) and
// say what they are; the arm64 jvmkit refuses profile at once (exit 6) with what works instead.
func TestArm64Binaries(t *testing.T) {
	qemu := testutil.MustHaveTool(t, "qemu-aarch64-static")
	x := distBinaries(t, "arm64")
	s := testStamp(t)
	out, err := exec.Command(qemu, filepath.Join(x, "gjcmd"), "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("arm64 gjcmd --version: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "gjcmd "+s.Version+"\n") || !strings.Contains(string(out), s.Commit) ||
		!strings.Contains(string(out), " linux/arm64\n") {
		t.Errorf("arm64 gjcmd --version:\n%s", out)
	}
	t.Logf("arm64 gjcmd --version:\n%s", out)
	cmd := exec.Command(qemu, filepath.Join(x, "jvmkit"), "profile", "1")
	out, _ = cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 6 || !strings.Contains(string(out), "not available on linux/arm64") {
		t.Errorf("arm64 jvmkit profile 1: exit %d\n%s", cmd.ProcessState.ExitCode(), out)
	}
	if out, err := exec.Command("file", filepath.Join(x, "jvmkit")).Output(); err == nil {
		t.Logf("%s", out)
	}
}

// TestDebInstall installs the amd64 .deb with dpkg -i into a dpkg root of its own (dpkg --root: its own
// database, nothing written into the host's /usr or dpkg database, so other users of this machine and
// their PATH see nothing), uses it against a JVM the test starts (gjcmd -l, gjmaps -p PID, jvmkit threads
// PID, man gjcmd, bash completion of the installed scripts), removes it (dpkg -r; dpkg --purge if the test fails earlier) and checks that every file
// it installed is gone. The root is removed in any case.
func TestDebInstall(t *testing.T) {
	testutil.MustHaveRoot(t)
	dpkg := testutil.MustHaveTool(t, "dpkg")
	deb := distFile(t, builtDist(t, 0), "*_amd64.deb")
	root := t.TempDir()
	out, err := exec.Command("dpkg-deb", "--fsys-tarfile", deb).Output()
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	tr := tar.NewReader(bytes.NewReader(out))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if p := strings.TrimSuffix(strings.TrimPrefix(h.Name, "."), "/"); p != "" {
			files = append(files, p)
		}
	}
	dpkgIn := func(args ...string) error {
		out, err := exec.Command(dpkg, append([]string{"--root=" + root}, args...)...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("dpkg %v: %w\n%s", args, err, out)
		}
		return nil
	}
	// Registered before the install: a half-done dpkg -i is purged too.
	removed := false
	t.Cleanup(func() {
		if !removed {
			_ = dpkgIn("--purge", "jvmkit")
		}
	})
	if err := dpkgIn("-i", deb); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "usr/bin")

	j := testutil.StartJVM(t, testutil.JDK17(t), testutil.JVMOptions{})
	pid := strconv.Itoa(j.PID)
	run := func(name string, args ...string) string {
		t.Helper()
		out, err := exec.Command(name, args...).CombinedOutput()
		if err != nil {
			t.Errorf("%s %v: %v\n%s", name, args, err, out)
		}
		return string(out)
	}
	if out := run(filepath.Join(bin, "gjcmd"), "-l"); !strings.Contains(out, pid+" ") {
		t.Errorf("gjcmd -l does not list %s:\n%s", pid, out)
	}
	mapFile := "/tmp/perf-" + pid + ".map"
	t.Cleanup(func() { os.Remove(mapFile) })
	run(filepath.Join(bin, "gjmaps"), "-p", pid)
	if st, err := os.Stat(mapFile); err != nil || st.Size() == 0 {
		t.Errorf("gjmaps -p %s wrote no map: %v", pid, err)
	}
	if out := run(filepath.Join(bin, "jvmkit"), "threads", pid); !strings.Contains(out, "main") {
		t.Errorf("jvmkit threads %s:\n%s", pid, out)
	}
	if _, err := exec.LookPath("man"); err != nil {
		testutil.Skipf(t, "man gjcmd needs man-db: %v", err)
	}
	manPath := filepath.Join(root, "usr/share/man")
	if out := run("man", "-M", manPath, "-P", "cat", "gjcmd"); !strings.Contains(out, "gjcmd") || !strings.Contains(out, "--timeout") {
		t.Errorf("man gjcmd:\n%s", out)
	}
	if out := run("man", "-M", manPath, "-P", "cat", "jvmkit-profile"); !strings.Contains(out, "--freq") {
		t.Errorf("man jvmkit-profile:\n%s", out)
	}
	checkBashCompletion(t, filepath.Join(root, "usr/share/bash-completion/completions"), bin, pid)

	removed = true
	if err := dpkgIn("-r", "jvmkit"); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if _, err := os.Lstat(filepath.Join(root, f)); err == nil {
			t.Errorf("%s is left after dpkg -r", f)
		}
	}
	t.Logf("dpkg -i, use and dpkg -r: %d paths installed and removed", len(files))
}

// checkBashCompletion loads a tool's completion script in bash (with the bash-completion package, as a
// login shell has it) and presses TAB: `gjcmd <TAB>` offers the JVM, `gjcmd PID <TAB>` its commands,
// `jvmkit <TAB>` the subcommands, `jvmkit profile --<TAB>` the flags.
func checkBashCompletion(t *testing.T, scripts, bin, pid string) {
	t.Helper()
	const bashCompletion = "/usr/share/bash-completion/bash_completion"
	if _, err := os.Stat(bashCompletion); err != nil {
		testutil.Skipf(t, "bash completion needs the bash-completion package: %v", err)
	}
	tab := func(line string) []string {
		t.Helper()
		words := strings.Fields(line)
		if strings.HasSuffix(line, " ") {
			words = append(words, "")
		}
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = "'" + w + "'"
		}
		script := "source " + bashCompletion + "\nsource " + filepath.Join(scripts, words[0]) + "\n" +
			"COMP_WORDS=(" + strings.Join(quoted, " ") + ")\nCOMP_CWORD=" + strconv.Itoa(len(words)-1) + "\n" +
			"COMP_LINE='" + line + "'\nCOMP_POINT=${#COMP_LINE}\n__start_" + words[0] + "\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n"
		cmd := exec.Command("bash", "--norc", "--noprofile", "-c", script)
		cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("bash: %s<TAB>: %v\n%s", line, err, out)
		}
		var got []string
		// With descriptions, several candidates come as "word   (description)".
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if f := strings.Fields(l); len(f) > 0 {
				got = append(got, f[0])
			}
		}
		return got
	}
	has := func(line string, want ...string) {
		t.Helper()
		got := tab(line)
		for _, w := range want {
			if !slices.Contains(got, w) {
				t.Errorf("bash: %q<TAB> offers %q, not %q", line, got, w)
			}
		}
	}
	has("gjcmd ", pid)
	has("gjcmd "+pid+" ", "VM.version", "Thread.print", "GC.class_histogram", "PerfCounter.print")
	has("gjcmd "+pid+" VM.fl", "VM.flags")
	has("jvmkit ", "profile", "threads", "flags", "jfr")
	has("jvmkit profile --", "--freq", "--duration", "--output")
	has("gjmaps --str", "--strategy")
}

// TestPackages reads every .deb and .rpm back with Debian's own tools (dpkg-deb, rpm): name, version and
// architecture as dpkg and rpm name them, the package's digests (rpm -K), and the files each installs: the
// binaries, a man page per command, and the bash, zsh and fish completions where those shells look.
func TestPackages(t *testing.T) {
	rpm := testutil.MustHaveTool(t, "rpm")
	dir := builtDist(t, 0)
	s := testStamp(t)
	version, err := packageVersion(s)
	if err != nil {
		t.Fatal(err)
	}
	lines := func(name string, args ...string) []string {
		t.Helper()
		out, err := exec.Command(name, args...).Output()
		if err != nil {
			t.Fatalf("%s %v: %v", name, args, err)
		}
		return strings.Split(strings.TrimSpace(string(out)), "\n")
	}
	for arch, rpmArch := range map[string]string{"amd64": "x86_64", "arm64": "aarch64"} {
		deb := distFile(t, dir, "*_"+arch+".deb")
		if got, want := lines("dpkg-deb", "-W", "--showformat=${Package} ${Version} ${Architecture}", deb)[0],
			"jvmkit "+version+"-1 "+arch; got != want {
			t.Errorf("%s: %q, want %q", filepath.Base(deb), got, want)
		}
		var debFiles []string
		for _, l := range lines("dpkg-deb", "-c", deb) {
			if f := strings.Fields(l); len(f) == 6 && !strings.HasSuffix(f[5], "/") {
				debFiles = append(debFiles, strings.TrimPrefix(f[5], "."))
			}
		}
		r := distFile(t, dir, "*."+rpmArch+".rpm")
		if got, want := lines(rpm, "-qp", "--qf", "%{NAME} %{VERSION}-%{RELEASE} %{ARCH}\n", r)[0],
			"jvmkit "+version+"-1 "+rpmArch; got != want {
			t.Errorf("%s: %q, want %q", filepath.Base(r), got, want)
		}
		if out, err := exec.Command(rpm, "-K", "--nosignature", r).CombinedOutput(); err != nil {
			t.Errorf("rpm -K %s: %v\n%s", filepath.Base(r), err, out)
		}
		rpmFiles := lines(rpm, "-qpl", r)
		for kind, files := range map[string][]string{"deb": debFiles, "rpm": rpmFiles} {
			zsh := "/usr/share/zsh/vendor-completions/_"
			if kind == "rpm" {
				zsh = "/usr/share/zsh/site-functions/_"
			}
			var want []string
			for _, tool := range tools {
				want = append(want, "/usr/bin/"+tool, "/usr/share/bash-completion/completions/"+tool, zsh+tool,
					"/usr/share/fish/vendor_completions.d/"+tool+".fish")
			}
			for _, p := range commandPaths(arch) {
				want = append(want, "/usr/share/man/man1/"+strings.ReplaceAll(p, " ", "-")+".1.gz")
			}
			for _, w := range want {
				if !slices.Contains(files, w) {
					t.Errorf("%s %s lacks %s", arch, kind, w)
				}
			}
			t.Logf("%s %s: %d files", arch, kind, len(files))
		}
	}
}
