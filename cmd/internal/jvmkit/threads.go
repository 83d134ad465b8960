package jvmkit

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/jvmkit/jvmkit/vmstructs"
)

// threadsJSON is the data of schema jvmkit.threads/v1.
type threadsJSON struct {
	Threads []vmstructs.Thread `json:"threads"`
	// Skipped counts list entries that could not be read (threads exiting while they were read).
	Skipped int `json:"skipped"`
}

func (a *jvmkit) threadsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "threads <pid|core>",
		Short: "List the JVM's Java threads: tid, name, VM state",
		Long: `threads lists the JVM's Java threads from its memory, without attaching, stopping it or asking for a
safepoint. One line per thread:

  tid "name" vm-state java-state [daemon]

The tid is the thread's id in the JVM's own pid namespace (jstack's nid); for a JVM in a container
the id on this host follows as host=<tid>. The VM state is HotSpot's JavaThreadState (in_Java,
in_vm, in_native, blocked, new, ..._trans); the Java state is java.lang.Thread.State. A name shown
with "..." at its end is truncated: when libjvm.so has no symbol table, names come from the kernel's
15-byte thread names.

With --json: {"schema": "jvmkit.threads/v1", "data": {"threads": [...], "skipped": n}}. Threads that
exit while they are read are skipped, counted and reported on stderr; the exit status stays 0.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			j, err := a.openTarget(cmd.Context(), args[0], true)
			if err != nil {
				return err
			}
			defer j.Close()
			threads, err := j.Threads()
			var skip *vmstructs.SkippedThreadsError
			skipped := 0
			if errors.As(err, &skip) {
				skipped = skip.Skipped
				fmt.Fprintf(a.stderr, "jvmkit: %v\n", err)
			} else if err != nil {
				return err
			}
			if a.json {
				if threads == nil {
					threads = []vmstructs.Thread{}
				}
				return a.printJSON("jvmkit.threads/v1", threadsJSON{Threads: threads, Skipped: skipped})
			}
			for _, t := range threads {
				fmt.Fprintln(a.stdout, formatThread(t))
			}
			return nil
		},
	}
}

// formatThread is one line of the text output.
func formatThread(t vmstructs.Thread) string {
	var b strings.Builder
	b.WriteString(strconv.Itoa(t.TID))
	if t.HostTID != 0 && t.HostTID != t.TID {
		b.WriteString(" host=" + strconv.Itoa(t.HostTID))
	}
	name := t.Name
	if t.NameTruncated {
		name += "..."
	}
	b.WriteString(" " + strconv.Quote(name) + " " + t.State)
	if t.JavaState != "" {
		b.WriteString(" " + t.JavaState)
	}
	if t.Daemon {
		b.WriteString(" daemon")
	}
	return b.String()
}
