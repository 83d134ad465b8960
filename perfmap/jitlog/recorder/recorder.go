package recorder

import (
	"log/slog"
	"time"
)

// Options tune Record.
type Options struct {
	// Duration ends the recording after this long; 0 records until the context is done or every JVM
	// has exited.
	Duration time.Duration
	// Jitdump, when not empty, is a directory in which Record also writes a live jitdump for perf
	// inject --jit (jitlog.CreateJitdump: jit-<recorder pid>.dump, records carrying the JVMs' pids), with the
	// code of each load read from the JVM (zeros where it could not be read). The SNAPSHOT entries go
	// in too, timestamped at the snapshot.
	Jitdump string
	// Snapshot chooses the snapshot taken after the probes are attached: "vmstructs" (the default,
	// reads the code cache from the JVM's memory; falls back to Compiler.perfmap when that fails),
	// "perfmap" (jcmd Compiler.perfmap), or "none".
	Snapshot string
	// StringSize is the most bytes copied of each probe string (class, method, signature); default
	// 1024. A cut name differs from the snapshot's name of the same code.
	StringSize int
	// Ready, when not nil, is called once every JVM's probes are attached and its snapshot appended
	// and flushed: from then on, the log names the JVMs' code.
	Ready func()
	// Logger receives warnings (a JVM that cannot be recorded, dropped events); nil discards them.
	Logger *slog.Logger
}

// Stats count what Record did, per JVM.
type Stats struct {
	JVMs []JVMStats `json:"jvms"`
	// Jitdump is the path of the jitdump file, with Options.Jitdump.
	Jitdump string `json:"jitdump,omitempty"`
}

// JVMStats count what Record did for one JVM.
type JVMStats struct {
	PID      int    `json:"pid"`
	Snapshot int    `json:"snapshot"`         // SNAPSHOT records
	Source   string `json:"source,omitempty"` // the snapshot's source
	Loads    int    `json:"loads"`
	Unloads  int    `json:"unloads"`
	// Ambiguous counts the unloads left out of the log: the recorder could not tell which code was
	// freed (none of the method's live versions left the code cache in time, or it held none). Such
	// code stays live in the log, which names nothing wrongly: freed code runs no more, and code loaded
	// where it was replaces it.
	Ambiguous int `json:"ambiguous,omitempty"`
	// FullSize counts the loads logged with the size of the whole code (the stub section included, as
	// the snapshot and Compiler.perfmap have it), read from the code cache; the others have the
	// probe's insts_size.
	FullSize int `json:"full_size"`
	// Resized counts the loads of FullSize first logged with insts_size (the code cache did not have
	// their blob yet when the event was read) and logged again with the whole size.
	Resized int `json:"resized,omitempty"`
	// CodeRead counts the jitdump loads with their code read from the JVM.
	CodeRead int `json:"code_read,omitempty"`
	// Drops are the probe events lost because the ring buffer was full: code the log may miss.
	Drops uint64 `json:"drops"`
	// Err is why this JVM was not (or not fully) recorded; the others go on.
	Err string `json:"error,omitempty"`
}
