package jvmkit

import (
	"fmt"
	"strings"
	"time"

	"github.com/jvmkit/jvmkit/internal/procfs"
)

// heldPoll is how often heldWatch looks whether the JVM can run.
const heldPoll = 500 * time.Millisecond

// heldWatch measures, by looking every heldPoll, how long JVM pid could not run (stopped, or frozen
// by its cgroup: podman pause) while it was traced: a held JVM runs, samples and allocates nothing,
// which its trace's figures would not show.
type heldWatch struct {
	pid        int
	stop, done chan struct{}
	held       time.Duration
	why        string
}

func watchHeld(pid int) *heldWatch {
	h := &heldWatch{pid: pid, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(h.done)
		t := time.NewTicker(heldPoll)
		defer t.Stop()
		for {
			select {
			case <-h.stop:
				return
			case <-t.C:
				if why := procfs.Default.Held(pid); why != "" {
					h.held += heldPoll
					h.why = why
				}
			}
		}
	}()
	return h
}

// end stops the watch and returns, for command cmd, a line that says how long of window the JVM was
// held, or "" when it was not.
func (h *heldWatch) end(cmd string, window time.Duration) string {
	close(h.stop)
	<-h.done
	if h.held == 0 {
		return ""
	}
	state, _, _ := strings.Cut(h.why, ": ") // the state, without the remedy: it may run again by now
	return fmt.Sprintf("jvmkit: %s: process %d could not run for about %.1fs of the %.1fs traced (%s): it ran nothing then\n",
		cmd, h.pid, h.held.Seconds(), window.Seconds(), state)
}

// endHeld ends the watch and prints its line.
func (a *jvmkit) endHeld(h *heldWatch, cmd string, window time.Duration) {
	fmt.Fprint(a.stderr, h.end(cmd, window))
}
