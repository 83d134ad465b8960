package perfmap

import (
	"context"
	"fmt"
	"path"
	"strconv"

	"github.com/jvmkit/jvmkit/jcmd"
)

// FromJcmd has JVM pid write its own map (Compiler.perfmap, JDK 17+) and reads it. From JDK 22 on the
// JVM writes it under a fresh name in its own /tmp, which is removed afterwards; before, it writes
// /tmp/perf-<nspid>.map in its own mount namespace, and that file is removed afterwards when it did not
// exist before, so that only the maps Place writes remain.
func FromJcmd(ctx context.Context, pid int) ([]Entry, error) {
	c, err := jcmd.Dial(ctx, pid, nil)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	t := c.Target()
	feature, err := c.Feature(ctx)
	if err != nil {
		return nil, err
	}
	name := "perf-" + strconv.Itoa(t.NSPID) + ".map"
	arg := ""
	if feature >= 22 {
		name = ".jvmkit-perfmap-" + randomHex(8) + ".map"
		arg = "/tmp/" + name
	}
	existed, err := existsInJVM(t, name)
	if err != nil {
		return nil, err
	}
	if existed && arg != "" {
		return nil, fmt.Errorf("perfmap: process %d: /tmp/%s exists", pid, name)
	}
	f, err := c.PerfMap(ctx, arg)
	if !existed && (f == nil || path.Clean(f.Path) == "/tmp/"+name) {
		// Also after an error: the JVM may have written part of the file.
		defer func() { _ = removeInJVM(t, name) }()
	}
	if err != nil {
		return nil, err
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
