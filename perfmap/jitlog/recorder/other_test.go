//go:build !linux

package recorder_test

func recorderHelper() int { return 1 }
