//go:build !linux

package perfmap

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
)

// AgentOptions choose what FromAgent loads into the JVM and how the agent names code (see the Linux
// documentation).
type AgentOptions struct {
	Options string       // options for jvmkit's agent, perf-map-agent's words
	Library string       // host path of another JVMTI agent to load instead of jvmkit's
	Logger  *slog.Logger // debug records; nil: none
}

// ErrNoExec is returned by FromAgent when the JVM's /tmp is mounted noexec.
var ErrNoExec = errors.New("perfmap: the JVM's /tmp is mounted noexec")

// FromAgent loads a JVMTI agent into the JVM to write its map. Only Linux is supported: elsewhere it fails
// with ErrNotSupported.
func FromAgent(_ context.Context, pid int, _ AgentOptions) ([]Entry, error) {
	return nil, fmt.Errorf("perfmap: process %d: %w", pid, ErrNotSupported)
}
