//go:build !unix

package jfr

import "os"

// Open reads the recording at path and parses it (see Parse).
func Open(path string) (*Recording, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return openRead(f, path)
}
