package unwind

import (
	"errors"

	"github.com/jvmkit/jvmkit/internal/procerr"
)

var (
	// ErrProcessExited is returned by Sampler.Run and Walker.Profile when the sampled process exited.
	// It is the project's ErrProcessGone (attach.ErrProcessGone, vmstructs.ErrProcessGone).
	ErrProcessExited = procerr.ErrProcessGone
	// ErrNotSupported: stacks are walked on linux/amd64 only (the frame rules and the perf register
	// layout are x86-64's); elsewhere StopThread and Profile return it.
	ErrNotSupported = procerr.ErrNotSupported
	// ErrThreadGone is returned for a thread that exited before or while it was stopped.
	ErrThreadGone = errors.New("thread exited")
)
