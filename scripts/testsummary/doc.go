// Command testsummary runs `go test -json` and prints what a person needs from it: one line per package as
// it finishes (like go test without -v), the whole output of every failed test, and at the end every skipped
// test with its reason, the slowest tests and the totals. `make test` runs the suite through it, so a
// newcomer sees what was not tested without reading -v output.
//
//	testsummary [-json FILE] [-slowest N] -- go test -json -p 1 ./...
//
// The exit status is the command's, and 1 when any test or package failed even if the command said 0.
// With -json, the raw events are also written to FILE (test2json's format, one event per line).
//
// # Skip reasons
//
// A skip's reason is the last message the test logged before its "--- SKIP" line: t.Skip's arguments, or
// the last t.Log before a bare t.SkipNow. testutil's Skipf messages name the missing prerequisite.
//
// # Compatibility
//
// The event format is cmd/test2json's (Go 1.26: Action run, pause, cont, pass, fail, skip, output, bench,
// start, build-output, build-fail). Events it does not know are ignored.
package main
