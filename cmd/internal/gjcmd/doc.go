// Package gjcmd is gjcmd's command tree, the drop-in jcmd: cmd/gjcmd's main calls Main, and the release
// tool builds the tree with Command to generate completions and man pages. It imports attach, jcmd,
// internal/hsperf and cmd/internal/cliutil only, so that gjcmd starts as little as it runs (go list -deps
// ./cmd/gjcmd has no eBPF, pprof, unwinder or VMStructs); the CLI tests that run the binary are in
// cmd/gjcmd.
//
// Compatibility: gjcmd's command line, output and exit statuses follow the JDK's jcmd (README.md says
// where they differ); the Go API is internal.
package gjcmd
