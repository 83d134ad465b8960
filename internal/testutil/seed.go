package testutil

import (
	"os"
	"strconv"
	"testing"
	"time"
)

// SeedEnv names the environment variable that repeats a test's random points.
const SeedEnv = "JVMKIT_SEED"

// Seed returns the seed of a test's random points (kill and signal times, concurrent mixes) and logs it:
// $JVMKIT_SEED, when set, repeats a run.
func Seed(t testing.TB) uint64 {
	t.Helper()
	s := uint64(time.Now().UnixNano())
	if v := os.Getenv(SeedEnv); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", SeedEnv, v, err)
		}
		s = n
	}
	t.Logf("random points from seed %d (%s=%d repeats them)", s, SeedEnv, s)
	return s
}
