//go:build !linux

package cliutil

// CapsNote is "" where capabilities are not Linux's.
func CapsNote(error) string { return "" }
