//go:build !linux

package jitlog

import (
	"time"

	"github.com/jvmkit/jvmkit/perfmap"
)

var start = time.Now()

// monotonicNow is a stand-in: jitdump files are for perf, which is Linux only.
func monotonicNow() uint64 { return uint64(time.Since(start)) }

// JitdumpFile is a jitdump file mapped executable for perf; Linux only.
type JitdumpFile struct{ *JitdumpWriter }

// CreateJitdump returns ErrNotSupported: perf is Linux only.
func CreateJitdump(dir string, opts JitdumpOptions) (*JitdumpFile, error) {
	return nil, perfmap.ErrNotSupported
}

// Path returns "".
func (f *JitdumpFile) Path() string { return "" }

// Close does nothing.
func (f *JitdumpFile) Close() error { return nil }

// ReadCode returns ErrNotSupported.
func ReadCode(pid int, addr, size uint64) ([]byte, error) { return nil, perfmap.ErrNotSupported }
