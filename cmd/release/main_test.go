package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jvmkit/jvmkit/internal/testutil"
)

func TestMain(m *testing.M) {
	testutil.Main(m, func() {
		for _, c := range cleanups {
			c()
		}
	})
}

// testStamp is the commit the tests build: HEAD, with its date, as make release stamps it.
func testStamp(t *testing.T) stamp {
	t.Helper()
	git := func(args ...string) string {
		out, err := exec.Command("git", args...).Output()
		if err != nil {
			testutil.Skipf(t, "git %v: %v (a git checkout is needed)", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	d, err := time.Parse(time.RFC3339, git("log", "-1", "--format=%cI"))
	if err != nil {
		t.Fatal(err)
	}
	return stamp{Version: git("describe", "--tags", "--always"), Commit: git("rev-parse", "HEAD"), Date: d.UTC()}
}

var (
	distMu   sync.Mutex
	distDirs = map[int]string{}
	binDirs  = map[string]string{}
)

// builtDist runs the release into a directory of its own and shares it between the tests: run 0 is the
// whole release (both architectures), run 1 a second run of amd64 alone, which the reproducibility test
// compares with run 0's (the arm64 half goes through the same code: only the compiler's target differs).
func builtDist(t *testing.T, n int) string {
	t.Helper()
	testutil.SkipInShort(t, "to build the release")
	distMu.Lock()
	defer distMu.Unlock()
	if d, ok := distDirs[n]; ok {
		return d
	}
	wd, _ := os.Getwd()
	root, err := findRoot(wd)
	if err != nil {
		t.Fatal(err)
	}
	// Not t.TempDir: the directory outlives the test that built it.
	dir, err := os.MkdirTemp("", "jvmkit-dist-test-*")
	if err != nil {
		t.Fatal(err)
	}
	cleanups = append(cleanups, func() { os.RemoveAll(dir) })
	arches := []string{"amd64", "arm64"}
	if n > 0 {
		arches = arches[:1]
	}
	start := time.Now()
	if _, err := dist(root, dir, arches, testStamp(t), false); err != nil {
		t.Fatal(err)
	}
	t.Logf("release run %d (%v): %v", n, arches, time.Since(start).Round(time.Millisecond))
	distDirs[n] = dir
	return dir
}

// distBinaries extracts arch's archive of run 0 (once; shared by the tests) and returns the directory
// holding its gjcmd, gjmaps and jvmkit: the tests run what a user downloads, not a build of their own.
func distBinaries(t *testing.T, arch string) string {
	t.Helper()
	archive := distFile(t, builtDist(t, 0), "*_linux_"+arch+".tar.gz")
	distMu.Lock()
	defer distMu.Unlock()
	if d, ok := binDirs[arch]; ok {
		return d
	}
	dir, err := os.MkdirTemp("", "jvmkit-dist-bin-*")
	if err != nil {
		t.Fatal(err)
	}
	cleanups = append(cleanups, func() { os.RemoveAll(dir) })
	if out, err := exec.Command("tar", "xzf", archive, "-C", dir, "--strip-components=1").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	binDirs[arch] = dir
	return dir
}

var cleanups []func()

func distFile(t *testing.T, dir, pattern string) string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil || len(m) != 1 {
		t.Fatalf("%s in %s: %v %v", pattern, dir, m, err)
	}
	return m[0]
}
