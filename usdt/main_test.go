package usdt_test

import (
	"os"
	"sync"
	"testing"

	"github.com/jvmkit/jvmkit/internal/testutil"
)

// buildDir holds what the tests build once per test binary (fixtures, the jvmkit binary); TestMain removes
// it.
var buildDir struct {
	sync.Mutex
	path string
}

func TestMain(m *testing.M) {
	testutil.Main(m, func() {
		buildDir.Lock()
		defer buildDir.Unlock()
		if buildDir.path != "" {
			_ = os.RemoveAll(buildDir.path)
		}
	})
}

// sharedDir returns the per-binary build directory, creating it on first use.
func sharedDir(t testing.TB) string {
	t.Helper()
	buildDir.Lock()
	defer buildDir.Unlock()
	if buildDir.path == "" {
		dir, err := os.MkdirTemp("", "jvmkit-usdt-test-*")
		if err != nil {
			t.Fatal(err)
		}
		buildDir.path = dir
	}
	return buildDir.path
}
