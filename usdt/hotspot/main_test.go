package hotspot_test

import (
	"os"
	"sync"
	"testing"

	"github.com/jvmkit/jvmkit/internal/testutil"
)

// buildDir holds the jvmkit binary the signal tests build; TestMain removes it.
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
