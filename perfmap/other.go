//go:build !linux

package perfmap

import (
	"context"
	"fmt"
)

// WriteFileAtomic writes a map file. Only Linux is supported: elsewhere it fails with ErrNotSupported.
func WriteFileAtomic(dir, name string, _ []Entry, _, _ int) error {
	return fmt.Errorf("perfmap: write %s/%s: %w", dir, name, ErrNotSupported)
}

// Paths returns where Place writes maps. Only Linux is supported.
func Paths(pid int) ([]string, error) {
	return nil, fmt.Errorf("perfmap: process %d: %w", pid, ErrNotSupported)
}

// Place writes the map of a process where perf looks. Only Linux is supported.
func Place(_ context.Context, pid int, _ []Entry) ([]string, error) {
	return nil, fmt.Errorf("perfmap: process %d: %w", pid, ErrNotSupported)
}

// PlaceOwned is Place with an owner. Only Linux is supported.
func PlaceOwned(_ context.Context, pid int, _ []Entry, _, _ int) ([]string, error) {
	return nil, fmt.Errorf("perfmap: process %d: %w", pid, ErrNotSupported)
}

// PlaceOptions say who owns the maps Place writes.
type PlaceOptions struct {
	UID, GID            int
	JVMOwnsContainerMap bool
	Note                func(string)
}

// PlaceWith writes the map of a process where perf looks. Only Linux is supported.
func PlaceWith(_ context.Context, pid int, _ []Entry, _ PlaceOptions) ([]string, error) {
	return nil, fmt.Errorf("perfmap: process %d: %w", pid, ErrNotSupported)
}

// Clean removes maps Place wrote. Only Linux is supported.
func Clean(_ context.Context, pid int) ([]string, error) {
	return nil, fmt.Errorf("perfmap: process %d: %w", pid, ErrNotSupported)
}

// FromJcmd has the JVM write its map. Only Linux is supported.
func FromJcmd(_ context.Context, pid int) ([]Entry, error) {
	return nil, fmt.Errorf("perfmap: process %d: %w", pid, ErrNotSupported)
}

// FromJcmdNotes has the JVM write its map. Only Linux is supported.
func FromJcmdNotes(_ context.Context, pid int) ([]Entry, []string, error) {
	return nil, nil, fmt.Errorf("perfmap: process %d: %w", pid, ErrNotSupported)
}

// CleanOwned removes maps PlaceOwned wrote. Only Linux is supported.
func CleanOwned(_ context.Context, pid, _ int) ([]string, error) {
	return nil, fmt.Errorf("perfmap: process %d: %w", pid, ErrNotSupported)
}
