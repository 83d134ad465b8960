package cliutil_test

import (
	"bytes"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/jvmkit/jvmkit/cmd/internal/clitree"
	"github.com/jvmkit/jvmkit/cmd/internal/cliutil"
	"github.com/jvmkit/jvmkit/cmd/internal/gjcmd"
	"github.com/jvmkit/jvmkit/cmd/internal/gjmaps"
	"github.com/jvmkit/jvmkit/cmd/internal/jvmkit"
	"github.com/jvmkit/jvmkit/internal/testutil"
	"github.com/jvmkit/jvmkit/jcmd"
)

// complete runs a tool's hidden __complete command, as the shell scripts do at a TAB, and returns the
// candidates (without descriptions) and the directive.
func complete(t *testing.T, main func([]string, *bytes.Buffer, *bytes.Buffer) int, args ...string) ([]string, cobra.ShellCompDirective) {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := main(append([]string{cobra.ShellCompRequestCmd}, args...), &out, &errOut); code != 0 {
		t.Fatalf("__complete %q: exit %d\n%s", args, code, errOut.String())
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	last := lines[len(lines)-1]
	d, err := strconv.Atoi(strings.TrimPrefix(last, ":"))
	if !strings.HasPrefix(last, ":") || err != nil {
		t.Fatalf("__complete %q: no directive line in\n%s", args, out.String())
	}
	var words []string
	for _, l := range lines[:len(lines)-1] {
		w, _, _ := strings.Cut(l, "\t")
		words = append(words, w)
	}
	return words, cobra.ShellCompDirective(d)
}

func gjcmdMain(args []string, o, e *bytes.Buffer) int  { return gjcmd.Main(args, o, e) }
func gjmapsMain(args []string, o, e *bytes.Buffer) int { return gjmaps.Main(args, o, e) }
func jvmkitMain(args []string, o, e *bytes.Buffer) int { return jvmkit.Main(args, o, e) }

func mustContain(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("%s: %q missing from %q", what, w, got)
		}
	}
}

// TestCompleteStatic: subcommands and flags, which need no JVM.
func TestCompleteStatic(t *testing.T) {
	words, _ := complete(t, jvmkitMain, "")
	mustContain(t, "jvmkit <TAB>", words, "profile", "threads", "flags", "codecache", "vmstructs", "alloc", "gc", "usdt", "jfr", "fold", "flame")
	words, _ = complete(t, jvmkitMain, "profile", "--")
	mustContain(t, "jvmkit profile --<TAB>", words, "--freq", "--duration", "--output", "--format", "--threads", "--core", "--json")
	words, _ = complete(t, jvmkitMain, "jfr", "")
	mustContain(t, "jvmkit jfr <TAB>", words, "summary", "print", "flame", "leaks")
	words, _ = complete(t, gjcmdMain, "--")
	mustContain(t, "gjcmd --<TAB>", words, "--list", "--timeout", "--json", "--copy-to", "--version")
	words, _ = complete(t, gjmapsMain, "--str")
	mustContain(t, "gjmaps --str<TAB>", words, "--strategy")
	// After -f comes a file: the shell completes file names.
	if _, d := complete(t, gjcmdMain, "1", "-f", ""); d != cobra.ShellCompDirectiveDefault {
		t.Errorf("gjcmd PID -f <TAB>: directive %v, want file names", d)
	}
	// Nothing to offer for a pid that is no JVM, and no file names either.
	if words, d := complete(t, gjcmdMain, "999999999", ""); len(words) != 0 || d != cobra.ShellCompDirectiveNoFileComp {
		t.Errorf("gjcmd 999999999 <TAB>: %q, directive %v", words, d)
	}
}

// TestCompleteJVM: `gjcmd <TAB>` offers the JVM the test started, `gjcmd PID <TAB>` the diagnostic commands
// that JVM's own help lists (the JDK's jcmd PID help is the oracle), `gjcmd PID JFR.start <TAB>` its options;
// jvmkit's views and gjmaps -p complete pids too.
func TestCompleteJVM(t *testing.T) {
	testutil.MustHaveRoot(t)
	jdk := testutil.JDK17(t)
	j := testutil.StartJVM(t, jdk, testutil.JVMOptions{})
	pid := strconv.Itoa(j.PID)

	words, d := complete(t, gjcmdMain, "")
	mustContain(t, "gjcmd <TAB>", words, pid)
	if d != cobra.ShellCompDirectiveNoFileComp {
		t.Errorf("gjcmd <TAB>: directive %v, want no file names", d)
	}
	words, _ = complete(t, gjcmdMain, pid[:1])
	mustContain(t, "gjcmd "+pid[:1]+"<TAB>", words, pid)
	for _, w := range words {
		if !strings.HasPrefix(w, pid[:1]) {
			t.Errorf("gjcmd %s<TAB> offers %q", pid[:1], w)
		}
	}

	out, err := exec.Command(jdk.Bin("jcmd"), pid, "help").Output()
	if err != nil {
		t.Fatalf("jcmd %s help: %v", pid, err)
	}
	want, err := jcmd.ParseHelpList(string(out))
	if err != nil || len(want) < 10 {
		t.Fatalf("jcmd's help: %v (%d commands)", err, len(want))
	}
	words, _ = complete(t, gjcmdMain, pid, "")
	want = append(want, "PerfCounter.print", "-f")
	slices.Sort(want)
	slices.Sort(words)
	if !slices.Equal(words, want) {
		t.Errorf("gjcmd %s <TAB>:\n got %q\nwant %q (jcmd %s help)", pid, words, want, pid)
	}
	// With --timeout before the target, as a user types it.
	words, _ = complete(t, gjcmdMain, "--timeout", "5s", pid, "VM.")
	mustContain(t, "gjcmd --timeout 5s PID VM.<TAB>", words, "VM.version", "VM.flags")

	words, d = complete(t, gjcmdMain, pid, "JFR.start", "")
	mustContain(t, "gjcmd PID JFR.start <TAB>", words, "name=", "settings=", "duration=", "filename=")
	if d&cobra.ShellCompDirectiveNoSpace == 0 {
		t.Errorf("gjcmd PID JFR.start <TAB>: directive %v, want no space after name=", d)
	}
	words, _ = complete(t, gjcmdMain, pid, "JFR.start", "name=x", "")
	if slices.Contains(words, "name=") {
		t.Errorf("gjcmd PID JFR.start name=x <TAB> offers name= again: %q", words)
	}
	words, _ = complete(t, gjcmdMain, pid, "VM.flags", "-a")
	if !slices.Equal(words, []string{"-all"}) {
		t.Errorf("gjcmd PID VM.flags -a<TAB>: %q, want -all", words)
	}
	words, _ = complete(t, gjcmdMain, pid, "GC.heap_dump", "-all=")
	if !slices.Equal(words, []string{"-all=true", "-all=false"}) {
		t.Errorf("gjcmd PID GC.heap_dump -all=<TAB>: %q", words)
	}

	words, _ = complete(t, jvmkitMain, "threads", "")
	mustContain(t, "jvmkit threads <TAB>", words, pid)
	words, _ = complete(t, gjmapsMain, "-p", "1,")
	mustContain(t, "gjmaps -p 1,<TAB>", words, "1,"+pid)
}

// TestVersion: --version names the version, the commit and the toolchain with os/arch.
func TestVersion(t *testing.T) {
	for tool, main := range map[string]func([]string, *bytes.Buffer, *bytes.Buffer) int{"gjcmd": gjcmdMain, "gjmaps": gjmapsMain, "jvmkit": jvmkitMain} {
		var out, errOut bytes.Buffer
		if code := main([]string{"--version"}, &out, &errOut); code != 0 {
			t.Fatalf("%s --version: exit %d: %s", tool, code, errOut.String())
		}
		lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		if len(lines) != 3 || lines[0] != tool+" "+cliutil.BuildVersion() || !strings.HasPrefix(lines[1], "commit: ") ||
			lines[2] != "go:     "+runtime.Version()+" linux/"+runtime.GOARCH {
			t.Errorf("%s --version:\n%s", tool, out.String())
		}
	}
}

// TestArchLimits: on arm64 the commands that need the x86-64 stack walker say so at once, with exit status
// 6 and what works instead, whatever the arguments; --help marks them. On amd64 the arm64 marks are applied
// to the tree to check the same.
func TestArchLimits(t *testing.T) {
	build := func() *cobra.Command {
		root := jvmkit.Command(new(bytes.Buffer), new(bytes.Buffer))
		if runtime.GOARCH == "amd64" {
			clitree.MarkArch(root, "arm64")
		}
		return root
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"profile", "1"}, "profile is not available on linux/arm64"},
		{[]string{"profile"}, "profile is not available on linux/arm64"},
		{[]string{"profile", "--core", "core.1"}, "profile is not available on linux/arm64"},
		{[]string{"alloc", "--stacks", "1"}, "alloc --stacks is not available on linux/arm64"},
	} {
		var out, errOut bytes.Buffer
		code := clitree.Run("jvmkit", build(), tc.args, &out, &errOut, false)
		if code != cliutil.ExitUnsupported || !strings.Contains(errOut.String(), tc.want) || !strings.Contains(errOut.String(), "Instead: ") {
			t.Errorf("jvmkit %q: exit %d, stderr %q; want %d and %q", tc.args, code, errOut.String(), cliutil.ExitUnsupported, tc.want)
		}
	}
	// alloc without --stacks goes on to its own checks (a usage error here: no pid).
	var out, errOut bytes.Buffer
	if code := clitree.Run("jvmkit", build(), []string{"alloc"}, &out, &errOut, false); code != cliutil.ExitUsage {
		t.Errorf("jvmkit alloc: exit %d, want %d: %s", code, cliutil.ExitUsage, errOut.String())
	}
	out.Reset()
	root := build()
	root.SetOut(&out)
	root.SetArgs([]string{"--help"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "[not on arm64]") {
		t.Errorf("jvmkit --help marks nothing:\n%s", out.String())
	}
}
