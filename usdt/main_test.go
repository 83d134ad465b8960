package usdt_test

import (
	"sync"
	"testing"

	"github.com/jvmkit/jvmkit/internal/testutil"
)

func TestMain(m *testing.M) { testutil.Main(m) }

var shared struct {
	sync.Mutex
	path string
}

// sharedDir returns the directory for what the tests build once per test binary (fixtures), created
// on first use in testutil's work directory, which testutil.Main removes.
func sharedDir(t testing.TB) string {
	t.Helper()
	shared.Lock()
	defer shared.Unlock()
	if shared.path == "" {
		shared.path = testutil.RunDir(t, "usdt-*")
	}
	return shared.path
}
