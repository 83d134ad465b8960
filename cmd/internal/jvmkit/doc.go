// Package jvmkit is jvmkit's command tree, one file per subcommand: cmd/jvmkit's main calls Main with the
// subcommands defined beside it (cmd/internal/agent, cmd/internal/jfrexport), and the release tool builds
// the tree with Command to generate completions and man pages.
//
// The views read JVMs through VMStructs: vmstructs, flags (--set ... --write-memory), threads, codecache
// (--pc); every view takes a pid or a core file (--core-root for a containerised JVM's core) and prints
// JSON with --json as {"schema": "jvmkit.<view>/v1", "data": ...}. The CLI tests of every subcommand are
// here (those of the JIT log commands included); exit statuses are cmd/internal/cliutil's.
//
// Compatibility: the command line, the output, the JSON schemas (versioned in their names) and the exit
// statuses are jvmkit's interface; the Go API is internal.
package jvmkit
