// Package faults is jvmkit's fault tier: tests only, run by `make test` like every package, against real
// JVMs and the real tools (built once per run). Each case puts a tool in a hostile or unlucky situation
// and asserts the whole outcome: exit status, message, the files left, and the JVM's state afterwards.
//
//   - hostile /tmp: symbolic links, hard links, FIFOs, other users' files and directories planted by uid
//     65534 (with setpriv) at every path a tool writes or asks the JVM to write, with
//     fs.protected_symlinks, protected_hardlinks, protected_regular and protected_fifos set to 0 for the
//     test and restored afterwards: a root-owned victim file must never change;
//   - N-way concurrency of every writer of a JVM's map;
//   - the target killed or stopped (SIGSTOP) and the tool interrupted or killed (SIGINT, SIGTERM,
//     SIGKILL) at random points, the seed printed: trigger and temporary files are removed by the next
//     run, the JVM is alive and unchanged;
//   - corrupt and truncated inputs of every file gjcmd and gjmaps read.
//
// docs/reliability.md lists the categories, what each proves and the case counts.
//
// Compatibility: Linux, as root, with setpriv (util-linux) and JDK 17 and 25; the cases run on every
// JDK the harness finds.
package faults
