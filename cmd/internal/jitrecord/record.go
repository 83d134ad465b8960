// Package jitrecord runs the JIT log recorder for the commands that write a log (jvmkit jitlog record,
// gjmaps --log) and reports on standard error what it recorded, the same way for both.
//
// Compatibility: the lines it prints are part of both commands' output; the Go API is internal.
package jitrecord

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jvmkit/jvmkit/internal/rootfs"
	"github.com/jvmkit/jvmkit/perfmap/jitlog"
	"github.com/jvmkit/jvmkit/perfmap/jitlog/recorder"
)

// logFlushInterval bounds what a killed recorder loses: the records of the last interval.
const logFlushInterval = 200 * time.Millisecond

// Record records the JIT code of pids into a new log file until ctx is done or the duration has
// passed, with a line on stderr once the log names the JVMs' code and a summary at the end, as
// jvmkit jitlog record and gjmaps --log print them (tool names the command in each line).
func Record(ctx context.Context, stderr io.Writer, tool, path string, pids []int, opts recorder.Options) (recorder.Stats, error) {
	w, err := jitlog.Create(path, jitlog.WriterOptions{FlushInterval: logFlushInterval})
	if err != nil {
		return recorder.Stats{}, err
	}
	created, _ := w.Stat()
	opts.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	opts.Ready = func() {
		fmt.Fprintf(stderr, "%s: recording the JIT code of %s into %s\n", tool, joinInts(pids), path)
	}
	st, err := recorder.Record(ctx, pids, w, opts)
	err = errors.Join(err, w.Close())
	recorded := func(j recorder.JVMStats) bool { return j.Err == "" || j.Loads+j.Snapshot > 0 }
	if err != nil && created != nil && !slices.ContainsFunc(st.JVMs, recorded) {
		// A log of nothing but its header would only stand in the way of the next try (-o must not
		// exist); the error says why. Removed only if the name still holds the file created.
		_ = rootfs.RemoveSame(path, created)
		return st, err
	}
	for _, j := range st.JVMs {
		if !recorded(j) {
			fmt.Fprintf(stderr, "%s: %d: not recorded: %s\n", tool, j.PID, j.Err)
			continue
		}
		fmt.Fprintf(stderr, "%s: %d: %d snapshot entries (%s), %d loads (%d with stubs), %d unloads, %d events lost\n",
			tool, j.PID, j.Snapshot, j.Source, j.Loads, j.FullSize, j.Unloads, j.Drops)
		if j.Err != "" {
			fmt.Fprintf(stderr, "%s: %d: %s\n", tool, j.PID, j.Err)
		}
	}
	if st.Jitdump != "" {
		fmt.Fprintf(stderr, "%s: jitdump %s (perf inject --jit; perf must have recorded this process, pid in the name)\n", tool, st.Jitdump)
	}
	return st, err
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}
