// Package gjmaps is gjmaps' command tree: perf maps (/tmp/perf-<pid>.map) for running HotSpot JVMs, and
// with --log the JIT log. cmd/gjmaps' main calls Main; the release tool builds the tree with Command to
// generate completions and man pages. The CLI tests that run the binary are in cmd/gjmaps.
//
// Compatibility: gjmaps' command line, output (its --json schema) and exit statuses are its interface
// (README.md); the Go API is internal.
package gjmaps
