package testutil

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// WorkloadsDir returns the directory of the harness's Java workloads. It is found through the source path of
// this file, so it works from the tests of any package (but not in binaries built with -trimpath).
func WorkloadsDir() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("find workloads: no caller information")
	}
	dir := filepath.Join(filepath.Dir(file), "workloads")
	if _, err := os.Stat(dir); err != nil {
		return "", fmt.Errorf("find workloads (built with -trimpath?): %w", err)
	}
	return dir, nil
}

// Compile compiles the named workloads (base names of .java files in [WorkloadsDir], such as "Sleeper") with
// the JDK's javac and returns the class directory, to be used as class path. The directory lives in the
// per-binary work directory under /var/tmp, is world-readable (0755 directories, 0644 files) and is reused
// for the same JDK and sources for the life of the test binary.
func Compile(t testing.TB, jdk JDK, workloads ...string) string {
	t.Helper()
	if len(workloads) == 0 {
		t.Fatalf("testutil.Compile: no workload named")
	}
	dir, err := WorkloadsDir()
	if err != nil {
		t.Fatalf("testutil.Compile: %v", err)
	}
	files := make([]string, 0, len(workloads))
	for _, w := range workloads {
		if w == "" || strings.ContainsAny(w, `/\`) || strings.HasSuffix(w, ".java") {
			t.Fatalf("testutil.Compile: workload %q is not a base name such as \"Sleeper\"", w)
		}
		files = append(files, filepath.Join(dir, w+".java"))
	}
	return CompileFiles(t, jdk, files...)
}

// CompileFiles is [Compile] for .java files anywhere, such as a package's own testdata/ workloads. Relative
// names are relative to the test's working directory (the package directory).
func CompileFiles(t testing.TB, jdk JDK, files ...string) string {
	t.Helper()
	SkipInShort(t, "javac")
	if jdk.Root != "" {
		MustHaveRoot(t) // its javac runs in a mount namespace of its own
	}
	root := workDir(t)
	if len(files) == 0 {
		t.Fatalf("testutil.CompileFiles: no file named")
	}
	out, err := compileCached(root, jdk, files)
	if err != nil {
		t.Fatalf("compile %v with %s: %v", files, jdk, err)
	}
	return out
}

type compileResult struct {
	once sync.Once
	dir  string
	err  error
}

var (
	compileMu    sync.Mutex
	compileCache = make(map[string]*compileResult) // by key(JDK, sources)
)

func compileCached(root string, jdk JDK, files []string) (string, error) {
	abs := make([]string, 0, len(files))
	for _, f := range files {
		a, err := filepath.Abs(f)
		if err != nil {
			return "", err
		}
		abs = append(abs, a)
	}
	slices.Sort(abs)
	abs = slices.Compact(abs)

	// The key covers the sources' content, not only their names: a test binary that runs for long while
	// someone edits a workload must not run stale classes, and classes from one JDK must not be reused for
	// another (class file versions differ).
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00", jdk.Home, jdk.Version)
	for _, f := range abs {
		src, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("read workload: %w", err)
		}
		fmt.Fprintf(h, "%s\x00%d\x00", f, len(src))
		h.Write(src)
	}
	key := hex.EncodeToString(h.Sum(nil))[:16]

	compileMu.Lock()
	r, ok := compileCache[key]
	if !ok {
		r = new(compileResult)
		compileCache[key] = r
	}
	compileMu.Unlock()
	r.once.Do(func() {
		r.dir, r.err = compile(root, jdk, abs, fmt.Sprintf("%s-%s", jdk.Name(), key))
	})
	return r.dir, r.err
}

func compile(root string, jdk JDK, files []string, name string) (string, error) {
	classes := filepath.Join(root, "classes")
	if err := os.MkdirAll(classes, 0o755); err != nil {
		return "", err
	}
	if err := os.Chmod(classes, 0o755); err != nil { // MkdirAll is subject to the umask
		return "", err
	}
	tmp, err := os.MkdirTemp(classes, ".javac-*")
	if err != nil {
		return "", err
	}
	defer func() { _ = os.RemoveAll(tmp) }() // only left when something failed: renamed away on success

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// C1 only and no parallel GC threads: javac runs for a second or two, on a shared 2-core machine.
	args := []string{"-J-XX:TieredStopAtLevel=1", "-J-XX:+UseSerialGC", "-encoding", "UTF-8", "-g", "-nowarn", "-d", tmp}
	cmd := exec.CommandContext(ctx, jdk.Bin("javac"), append(args, files...)...)
	cmd.Env = javaEnv(nil)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("javac: %w\n%s", err, out)
	}
	err = filepath.WalkDir(tmp, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		mode := fs.FileMode(0o644)
		if d.IsDir() {
			mode = 0o755
		}
		return os.Chmod(path, mode)
	})
	if err != nil {
		return "", fmt.Errorf("make classes world-readable: %w", err)
	}
	out := filepath.Join(classes, name)
	if err := os.Rename(tmp, out); err != nil {
		return "", err
	}
	return out, nil
}

// javaEnv is the environment of every java and javac the harness starts: the test's environment without the
// variables that make the launcher pick up options or classes behind the test's back (and print "Picked up
// ..." on stderr), plus extra, which wins over inherited values.
func javaEnv(extra []string) []string {
	env := make([]string, 0, len(os.Environ())+len(extra))
	for _, kv := range os.Environ() {
		switch k, _, _ := strings.Cut(kv, "="); k {
		case "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "CLASSPATH":
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}
