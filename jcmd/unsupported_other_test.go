//go:build !linux

package jcmd_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jvmkit/jvmkit/attach"
	"github.com/jvmkit/jvmkit/jcmd"
)

func TestNotSupported(t *testing.T) {
	ctx := context.Background()
	target := &attach.Target{PID: 1, Root: "/proc/1/root", Cwd: "/proc/1/cwd"}
	_, errList := jcmd.List(ctx)
	_, errInspect := jcmd.Inspect(ctx, 1)
	_, errSelect := jcmd.Select(ctx, "0")
	_, errDial := jcmd.Dial(ctx, 1, nil)
	_, errCwd := jcmd.JVMCwd(ctx, target)
	_, errOpen := jcmd.OpenInJVM(target, "/tmp/x")
	_, _, errCopy := jcmd.CopyOut(ctx, target, "/tmp/x", t.TempDir(), false)
	for name, err := range map[string]error{
		"List": errList, "Inspect": errInspect, "Select": errSelect, "Dial": errDial, "JVMCwd": errCwd,
		"OpenInJVM": errOpen, "CopyOut": errCopy,
	} {
		if !errors.Is(err, attach.ErrNotSupported) {
			t.Errorf("%s: %v; want attach.ErrNotSupported", name, err)
		}
	}
}
