// Package containers is the real-container tier of the test suite (issue 17): JVMs of JDK 21 and 25 in a
// Debian trixie root filesystem, entered the three ways users' containers are (podman with runc, pivot_root as
// runc does it, chroot), as uid 1000, pid 1, with a private /tmp; every command the README lists is run from
// the host, as root, against them and checked against the container's own jcmd (podman exec / nsenter) and
// the JVM's own outputs (-Xlog:gc, Compiler.perfmap, the ELF notes of its libjvm.so).
//
// The package has no code of its own: the launchers are internal/testutil's (JVMOptions.Container,
// ForEachContainerJDK, JVM.Command), the programs under test the project's binaries, built by the test.
//
// # Pending cases
//
// A case that fails today for a known reason that someone is fixing is listed in pending (tier_test.go) with
// the issue and the missing fix: it skips with that reason, which `make test` lists at the end, until
// JVMKIT_TEST_PENDING=1 runs it (for the engineer fixing it). When the fix lands, its entry goes.
//
// # Compatibility
//
// Tested on Linux 6.18 with podman 4.3.1, runc 1.1.5 and util-linux 2.38.1 (Debian 12) on cgroup v1 (hybrid),
// with Debian trixie's OpenJDK 21.0.13 and 25.0.5 (glibc 2.41). See docs/support.md for the results.
package containers
