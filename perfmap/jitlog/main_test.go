package jitlog_test

import (
	"os"
	"testing"

	"github.com/jvmkit/jvmkit/internal/testutil"
)

func TestMain(m *testing.M) {
	// The test binary doubles as the helper processes of some tests.
	switch os.Getenv(helperEnv) {
	case "writer":
		os.Exit(writerHelper())
	case "jitdump":
		os.Exit(jitdumpHelper())
	}
	testutil.Main(m)
}

const helperEnv = "JITLOG_TEST_HELPER"
