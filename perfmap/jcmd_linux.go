package perfmap

import (
	"bytes"
	"context"
	"fmt"

	"github.com/jvmkit/jvmkit/jcmd"
)

// FromJcmd has JVM pid write its own map (Compiler.perfmap, JDK 17+) and reads it (see
// jcmd.Client.PerfMapData): from a file made for the JVM just before, never through a link another user
// planted, never a stale map of an earlier run. Notes say what was done to the JVM's /tmp on the way
// (a link or someone else's file replaced).
//
// The caller holds jcmd.LockMap when other writers of the map may run (gjmaps does).
func FromJcmd(ctx context.Context, pid int) ([]Entry, error) {
	entries, _, err := FromJcmdNotes(ctx, pid)
	return entries, err
}

// FromJcmdNotes is FromJcmd with the notes.
func FromJcmdNotes(ctx context.Context, pid int) ([]Entry, []string, error) {
	c, err := jcmd.Dial(ctx, pid, nil)
	if err != nil {
		return nil, nil, err
	}
	defer c.Close()
	data, f, err := c.PerfMapData(ctx)
	var notes []string
	if f != nil {
		notes = f.Notes
	}
	if err != nil {
		return nil, notes, fmt.Errorf("perfmap: process %d: %w", pid, err)
	}
	entries, err := Parse(bytes.NewReader(data))
	if err != nil {
		return nil, notes, fmt.Errorf("perfmap: map of process %d: %w", pid, err)
	}
	if len(entries) == 0 {
		return nil, notes, fmt.Errorf("perfmap: process %d: Compiler.perfmap wrote an empty map", pid)
	}
	return entries, notes, nil
}
