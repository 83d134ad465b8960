//go:build !linux

package hotspot

func processAlive(pid int) bool { return false }
