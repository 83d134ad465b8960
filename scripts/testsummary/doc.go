// Command testsummary runs `go test -json` and prints what a person needs from it: one line per package as
// it finishes (like go test without -v), the whole output of every failed test, and at the end every skipped
// test with its reason, the slowest tests and the totals. `make test` runs the suite through it, so a
// newcomer sees what was not tested without reading -v output.
//
//	testsummary [-json FILE] [-cpu FILE] [-slowest N] -- go test -json [-exec "testsummary wrap"] -p 1 ./...
//
// The exit status is the command's, and 1 when any test or package failed even if the command said 0.
// With -json, the raw events are also written to FILE (test2json's format, one event per line).
//
// # CPU time
//
// With -cpu FILE, and go test's -exec pointing back at this program, each test binary runs through
// `testsummary wrap`: in a cgroup of its own (cgroup v2's cpu.stat, else v1's cpuacct; root), whose CPU
// counter is read at every === RUN and --- PASS/FAIL/SKIP line of the binary's output. So every test's CPU time
// includes the JVMs, compilers and tools it ran, whether they were reaped or not; FILE gets one JSON line per
// test and per binary, and the summary lists CPU time per package, per test and per JDK (the subtests named
// after one, such as TestThreads/jdk21-trixie) beside the wall time:
//
//	testsummary -cpu bin/test-cpu.json -- go test -json -exec "$PWD/bin/testsummary wrap" -p 1 ./...
//
// On a shared machine the wall time says little; CPU time over the number of cores is what a quiet machine
// needs at least. Not counted: processes that a container manager moves into cgroups of its own (podman's
// containers, under libpod_parent), and parallel tests' CPU time is counted in each that ran meanwhile.
// Without a cgroup to make (no root), the binary runs unwrapped and the summary has no CPU section.
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
