package testutil

import (
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// varTmp holds the per-binary work directory. Not /tmp: namespaced tests mount a private tmpfs over /tmp, and
// a JVM running as another uid must be able to read the classes, so the directory must be visible in every
// mount namespace and world-readable along its whole path.
const varTmp = "/var/tmp"

var (
	mainCalled atomic.Bool

	rootMu  sync.Mutex
	rootDir string // created on first use, removed by Main

	liveMu sync.Mutex
	live   = make(map[stopper]struct{}) // processes still running; Main reaps them as a last resort
)

// stopper is a process started by this package that Main must not leave behind.
type stopper interface {
	forceStop() string // kills the process and returns a description for the report
}

// Main runs the tests of a package and then removes everything the harness left: JVMs and victims still
// running (a test that forgot nothing never has any) and the work directory under /var/tmp with the compiled
// workloads, after running cleanups (the package's own leftovers). Call it from TestMain; it does not return:
//
//	func TestMain(m *testing.M) { testutil.Main(m) }
func Main(m *testing.M, cleanups ...func()) {
	mainCalled.Store(true)
	code := m.Run()
	for _, c := range cleanups {
		c() // the package's own leftovers (os.Exit below skips deferred calls)
	}

	liveMu.Lock()
	leftovers := make([]stopper, 0, len(live))
	for s := range live {
		leftovers = append(leftovers, s)
	}
	liveMu.Unlock()
	for _, s := range leftovers {
		fmt.Fprintf(os.Stderr, "testutil: %s was still running after the tests; killed it\n", s.forceStop())
		code = 1
	}

	rootMu.Lock()
	dir := rootDir
	rootDir = ""
	rootMu.Unlock()
	if dir != "" {
		if err := os.RemoveAll(dir); err != nil {
			fmt.Fprintf(os.Stderr, "testutil: remove work directory: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

func track(s stopper) {
	liveMu.Lock()
	defer liveMu.Unlock()
	live[s] = struct{}{}
}

func untrack(s stopper) {
	liveMu.Lock()
	defer liveMu.Unlock()
	delete(live, s)
}

// workDir returns the per-binary work directory, creating it on first use. It fails the test when the
// package's TestMain does not call Main, because nothing else would remove the directory.
func workDir(t testing.TB) string {
	t.Helper()
	if !mainCalled.Load() {
		t.Fatalf("testutil: the package's TestMain must call testutil.Main(m), " +
			"which removes the JVMs' work directory under /var/tmp when the tests end:\n" +
			"\tfunc TestMain(m *testing.M) { testutil.Main(m) }")
	}
	rootMu.Lock()
	defer rootMu.Unlock()
	if rootDir != "" {
		return rootDir
	}
	pruneStaleWorkDirs()
	dir, err := os.MkdirTemp(varTmp, "jvmkit-test-*")
	if err != nil {
		t.Fatalf("testutil: create work directory: %v", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatalf("testutil: create work directory: %v", err)
	}
	owner, err := ownerRecord(os.Getpid())
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, ownerFile), []byte(owner), 0o644)
	}
	if err != nil {
		t.Fatalf("testutil: create work directory: %v", err)
	}
	rootDir = dir
	return dir
}

// ownerFile in a work directory identifies the test binary that owns it: "pid starttime".
const ownerFile = "owner"

func ownerRecord(pid int) (string, error) {
	start, err := processStartTime(pid)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d %d\n", pid, start), nil
}

// pruneStaleWorkDirs removes the work directories of test binaries that died without running Main's cleanup
// (killed by a timeout, a crash, SIGKILL). A directory is stale when its owner process is gone or its pid now
// belongs to another process. Directories without an owner record are left alone unless they are an hour old:
// their owner may be between MkdirTemp and writing the record.
func pruneStaleWorkDirs() {
	dirs, _ := filepath.Glob(filepath.Join(varTmp, "jvmkit-test-*"))
	for _, dir := range dirs {
		data, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			if fi, err := os.Lstat(dir); err == nil && fi.IsDir() && time.Since(fi.ModTime()) > time.Hour {
				_ = os.RemoveAll(dir)
			}
			continue
		}
		pidText, _, _ := strings.Cut(string(data), " ")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 {
			continue
		}
		if current, err := ownerRecord(pid); err == nil && current == string(data) {
			continue // still running
		} else if err != nil && !processGone(err) {
			continue // cannot tell
		}
		_ = os.RemoveAll(dir)
	}
}

// newRunDir creates a fresh world-readable directory under the work directory.
// RunDir creates a fresh directory (os.MkdirTemp pattern) in the per-binary work directory under
// /var/tmp, world-readable, that Main removes: for what a package's tests build once and share.
func RunDir(t testing.TB, pattern string) string {
	t.Helper()
	return newRunDir(t, pattern)
}

func newRunDir(t testing.TB, pattern string) string {
	t.Helper()
	dir, err := os.MkdirTemp(workDir(t), pattern)
	if err == nil {
		err = os.Chmod(dir, 0o755)
	}
	if err != nil {
		t.Fatalf("testutil: create run directory: %v", err)
	}
	return dir
}

// ReadGzip returns the uncompressed content of a gzipped fixture, such as a recording in testdata.
func ReadGzip(t testing.TB, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	b, err := io.ReadAll(z)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return b
}
