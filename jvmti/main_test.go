package jvmti_test

import (
	"testing"

	"github.com/jvmkit/jvmkit/internal/testutil"
)

func TestMain(m *testing.M) { testutil.Main(m) }
