//go:build !linux

package jitlog_test

func jitdumpHelper() int { return 1 }
