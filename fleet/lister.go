package fleet

import (
	"context"
	"errors"
	"os"

	"github.com/jvmkit/jvmkit/attach"
	"github.com/jvmkit/jvmkit/internal/procfs"
	"github.com/jvmkit/jvmkit/jcmd"
)

// Lister finds the JVMs on the machine as jcmd.List does (jcmd.Inspect of every process), but
// inspects each process once, not at every window: on a node with hundreds of processes, and
// JVMs with maps of thousands of lines, a full jcmd.List takes seconds of CPU. A process is named by
// its pid, start time and executable, so that neither pid reuse nor an exec (an entrypoint script
// that ends in "exec java") goes unnoticed. A process is taken for "not a JVM" only when two passes
// found it so: the java launcher maps libjvm.so a moment after exec, and a pass may look in between.
// The cache holds only processes that still exist. A Lister is not safe for concurrent use.
type Lister struct {
	seen map[procKey]*seenProc
}

type procKey struct {
	pid   int
	start uint64
	exe   string
}

type seenProc struct {
	jvm    *jcmd.JVM // nil: not a JVM
	passes int       // passes that found it not a JVM
}

// NewLister returns an empty Lister.
func NewLister() *Lister { return &Lister{seen: map[procKey]*seenProc{}} }

// List returns the JVMs visible now, sorted by pid.
func (l *Lister) List(ctx context.Context) ([]jcmd.JVM, error) {
	pids, err := procfs.Default.Pids()
	if err != nil {
		return nil, err
	}
	self := os.Getpid()
	next := make(map[procKey]*seenProc, len(l.seen))
	var out []jcmd.JVM
	for _, pid := range pids {
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		if pid == self {
			continue
		}
		exe, err := os.Readlink(procfs.Default.Path(pid, "exe"))
		if err != nil {
			continue // a kernel thread, gone, or not ours to read: jcmd.List skips those too
		}
		start, err := procfs.Default.StartTime(pid)
		if err != nil {
			continue
		}
		k := procKey{pid, start, exe}
		sp := l.seen[k]
		if sp == nil || (sp.jvm == nil && sp.passes < 2) {
			j, err := jcmd.Inspect(ctx, pid)
			switch {
			case err == nil:
				sp = &seenProc{jvm: &j}
			case errors.Is(err, attach.ErrNotJVM):
				if sp == nil {
					sp = &seenProc{}
				}
				sp.passes++
			default:
				continue // gone or not inspectable now: ask again next time
			}
		}
		next[k] = sp
		if sp.jvm != nil {
			out = append(out, *sp.jvm)
		}
	}
	l.seen = next
	return out, nil
}
