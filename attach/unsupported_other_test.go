//go:build !linux

package attach_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jvmkit/jvmkit/attach"
)

func TestNotSupported(t *testing.T) {
	if _, err := attach.Dial(context.Background(), 1, nil); !errors.Is(err, attach.ErrNotSupported) {
		t.Errorf("Dial: %v; want ErrNotSupported", err)
	}
	if _, err := attach.Resolve(1); !errors.Is(err, attach.ErrNotSupported) {
		t.Errorf("Resolve: %v; want ErrNotSupported", err)
	}
	vm := &attach.VM{Target: &attach.Target{PID: 1}}
	if _, err := vm.Jcmd(context.Background(), "VM.version"); !errors.Is(err, attach.ErrNotSupported) {
		t.Errorf("Jcmd: %v; want ErrNotSupported", err)
	}
}
