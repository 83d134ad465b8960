//go:build !linux

package jitlog_test

func jitdumpHelper() int { return 1 }

func recorderHelper() int { return 1 }
