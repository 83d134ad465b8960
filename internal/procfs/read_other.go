//go:build !linux

package procfs

import "os"

// readFile reads a file whole.
func readFile(path string) ([]byte, error) { return os.ReadFile(path) }
