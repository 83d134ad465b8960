// Package procfs is jvmkit's adapter over /proc: the few facts about a process that attaching,
// discovery and the test harness (internal/testutil) need (namespaced pids, ids and groups, signal
// dispositions, run state, start time, children, mapped libraries, command line, the root of a user
// namespace, listening TCP sockets), read from a
// configurable proc mount so tests can point it at a fixture tree.
//
// Parsing is pure ([ParseStatus], [MapsContain], [ParseCmdline], [ParseStat], [ParseStatStartTime],
// [ParseChildren], [ParseUIDMapRoot], [ParseNetTCP]) and fuzzed; reading goes through [FS]. github.com/prometheus/procfs was the first
// choice behind this adapter and was dropped: its package initialisation alone took 0.3 ms and 892
// allocations in every gjcmd run (GODEBUG=inittrace=1), a tenth of a warm attach, for three trivial
// files.
//
// Format sources: proc(5) and Documentation/filesystems/proc.rst in the Linux tree (status fields
// NStgid/NSpid since Linux 4.1, SigIgn/SigCgt as 64-bit hex masks where bit n-1 is signal n).
//
// Compatibility: verified on Linux 6.18. Kernels before 4.1 have no NSpid line; the namespaced pid then
// defaults to the host pid, which is right whenever caller and target share the pid namespace.
// /proc/<pid>/task/<tid>/children needs CONFIG_PROC_CHILDREN; without it [FS.Children] falls back
// to reading every process's PPid.
package procfs
