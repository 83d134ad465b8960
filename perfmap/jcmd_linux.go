package perfmap

import (
	"context"
	"fmt"
	"path"
	"strconv"

	"github.com/jvmkit/jvmkit/jcmd"
)

// FromJcmd has JVM pid write its own map (Compiler.perfmap, JDK 17+) and reads it. The JVM writes
// /tmp/perf-<nspid>.map in its own mount namespace; that file is removed afterwards when it did not exist
// before, so that only the maps Place writes remain.
func FromJcmd(ctx context.Context, pid int) ([]Entry, error) {
	c, err := jcmd.Dial(ctx, pid, nil)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	t := c.Target()
	name := "perf-" + strconv.Itoa(t.NSPID) + ".map"
	existed, err := existsInJVM(t, name)
	if err != nil {
		return nil, err
	}
	f, err := c.PerfMap(ctx, "")
	if err != nil {
		return nil, err
	}
	if !existed && path.Clean(f.Path) == "/tmp/"+name {
		defer func() { _ = removeInJVM(t, name) }()
	}
	r, err := jcmd.OpenInJVM(t, f.Path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	entries, err := Parse(r)
	if err != nil {
		return nil, fmt.Errorf("perfmap: map of process %d: %w", pid, err)
	}
	return entries, nil
}
