package recorder

import "sync/atomic"

// MissSizes has one load in every n look its size up as though the code cache did not have its blob
// yet, until the returned function is called.
func MissSizes(n int64) (restore func()) {
	var loads atomic.Int64
	testMissSize = func() bool { return loads.Add(1)%n == 0 }
	return func() { testMissSize = nil }
}
