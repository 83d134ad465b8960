package jfr

import (
	"fmt"
	"io"
	"os"
)

func openRead(f *os.File, path string) (*Recording, error) {
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	r, perr := Parse(data)
	if perr != nil {
		return r, fmt.Errorf("%s: %w", path, perr)
	}
	return r, nil
}

// Close releases the memory Open mapped. The Recording, its events and their strings must not be used
// after it.
func (r *Recording) Close() error {
	if r == nil || r.unmap == nil {
		return nil
	}
	err := r.unmap()
	r.unmap = nil
	return err
}
