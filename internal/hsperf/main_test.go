package hsperf

import (
	"testing"

	"github.com/jvmkit/jvmkit/internal/testutil"
)

// TestMain lets testutil remove the JVMs and the work directory that TestLiveParity leaves.
func TestMain(m *testing.M) { testutil.Main(m) }
