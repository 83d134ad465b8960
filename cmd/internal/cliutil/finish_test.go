//go:build !windows

package cliutil_test

import (
	"context"
	"os"
	"os/signal"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/cmd/internal/cliutil"
)

// TestSignalContext: SIGINT and SIGTERM cancel the context, and a second one while the command ends is
// taken too (the process lives), as with signal.NotifyContext.
func TestSignalContext(t *testing.T) {
	// SignalContext's handler goes in in the background; until it is in, the signal's default action
	// would end this test binary. A handler of the test's own keeps the process alive meanwhile.
	// It stays in for the rest of the binary: a signal sent to ourselves may reach a thread only after
	// both handlers are gone, and the default action would then end the binary (seen once, as a package
	// FAIL with no test failed).
	own := make(chan os.Signal, 16)
	signal.Notify(own, unix.SIGINT, unix.SIGTERM)
	for _, sig := range []unix.Signal{unix.SIGINT, unix.SIGTERM} {
		ctx, stop := cliutil.SignalContext()
		// Signal until the context ends (the handler is in by then), as a user who presses Ctrl-C again
		// would.
		tick := time.NewTicker(10 * time.Millisecond)
		for ctx.Err() == nil {
			if err := unix.Kill(unix.Getpid(), sig); err != nil {
				t.Fatal(err)
			}
			select {
			case <-ctx.Done():
			case <-tick.C:
			}
		}
		tick.Stop()
		if err := unix.Kill(unix.Getpid(), sig); err != nil { // a second signal: taken, not fatal
			t.Fatal(err)
		}
		stop()
		if ctx.Err() != context.Canceled {
			t.Errorf("%v: context %v", sig, ctx.Err())
		}
	}
}

// TestLazySignalContext: no handler until arm (stop without it ends the context at once); after arm, SIGINT
// cancels the context; arm twice is arm once.
func TestLazySignalContext(t *testing.T) {
	own := make(chan os.Signal, 16) // the default action would end the test binary before arm; kept, as above
	signal.Notify(own, unix.SIGINT)

	ctx, _, stop := cliutil.LazySignalContext()
	stop()
	if ctx.Err() != context.Canceled {
		t.Fatalf("unarmed, after stop: %v", ctx.Err())
	}

	ctx, arm, stop := cliutil.LazySignalContext()
	defer stop()
	arm()
	arm()
	if err := unix.Kill(unix.Getpid(), unix.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("armed: SIGINT did not cancel the context within 10 s")
	}
}
