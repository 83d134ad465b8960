package recorder_test

import (
	"os"
	"testing"

	"github.com/jvmkit/jvmkit/internal/testutil"
)

func TestMain(m *testing.M) {
	// The test binary doubles as the recorder that TestRecordJIT kills.
	if os.Getenv(helperEnv) == "recorder" {
		os.Exit(recorderHelper())
	}
	testutil.Main(m)
}

const helperEnv = "JITLOG_TEST_HELPER"
