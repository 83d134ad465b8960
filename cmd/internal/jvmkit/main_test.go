package jvmkit

import (
	"os"
	"testing"

	"github.com/jvmkit/jvmkit/internal/testutil"
)

// ToolEnv makes the test binary run jvmkit with its arguments, for the tests that signal the command
// (jitlog_record_linux_test.go).
const ToolEnv = "JVMKIT_CMDTEST_TOOL"

func TestMain(m *testing.M) {
	if os.Getenv(ToolEnv) == "jvmkit" {
		os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
	}
	testutil.Main(m)
}
