//go:build !linux

package rootfs

import "crypto/rand"

// randomBytes fills b with random bytes.
func randomBytes(b []byte) { _, _ = rand.Read(b) } // never fails (Go 1.24+)
