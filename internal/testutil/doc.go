// Package testutil is the harness that every package's tests use to run real JVMs: it finds the installed
// JDKs, compiles Java workloads, starts them plain, as another user, in container-like namespaces or with a
// read-only working directory, and cleans up after them.
//
// # Using it
//
// A package that uses the harness calls [Main] from its TestMain, which removes the per-binary work directory
// when the tests end:
//
//	func TestMain(m *testing.M) { testutil.Main(m) }
//
//	func TestThreads(t *testing.T) {
//		testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
//			jvm := testutil.StartJVM(t, jdk, testutil.JVMOptions{Main: "Demo", Namespace: true})
//			// ... attach to jvm.PID; the JVM calls itself jvm.NSPID ...
//		})
//	}
//
// Missing prerequisites (root, a tool, JDK 17) skip a test through [Skipf], which fails the test instead when
// the environment variable CI is set: CI machines are set up to run everything, so a skip there hides a bug.
// In -short mode (make check) every helper that needs a JVM, root or an external tool skips the test, CI or
// not: -short asks for the pure tests only.
//
// # JDKs
//
// [JDKs] lists the JDKs in /usr/lib/jvm, the homes in $JVMKIT_JDKS (colon-separated) and the JDKs in
// scripts/setup's cache ($JVMKIT_CACHE, default /var/cache/jvmkit): <name>-root/usr/lib/jvm/* are packages of
// another Debian release extracted with dpkg-deb -x that run on the host (JDK 11 from bullseye),
// <name>-rootfs/usr/lib/jvm/* are JDKs of a whole root filesystem (JDK 21 and 25 in Debian trixie) that need
// that root's glibc. Only entries with the set-up's stamp count. Debian installs aliases next to the real
// directory (java-1.17.0-openjdk-amd64 -> java-17-openjdk-amd64) and directories that only hold links
// (openjdk-17), so JDKs are identified by the real path of bin/java, and a directory is a JDK only if it has
// bin/java and bin/javac. The feature release and version come from the JDK's release file (JAVA_VERSION,
// JAVA_RUNTIME_VERSION), or from `java -version` when it has none. JDK 17 is required; the others are tested
// when present, and with CI set the set-up's are required.
//
// $JVMKIT_TEST_JDKS selects the JDKs that JDKs and [ForEachJDK] return: "all" (the default: make test runs on
// every JDK), "host" (the host's own, without the cache's) or names ("jdk17,jdk21-trixie"). The subtest names
// are "jdk<feature>" and, for a JDK of a root filesystem, "jdk<feature>-<root>": jdk11, jdk17, jdk21-trixie,
// jdk25 (Temurin), jdk25-trixie.
//
// # Coverage rule: every JDK in every tier, full depth where the JDK matters
//
// Every live tier runs on every selected JDK; what differs is depth. A check whose outcome depends on the JDK
// runs whole on each, through [ForEachJDK]: the attach protocol and gjcmd, VMStructs types, threads, flags and
// the code cache, the unwinder and profile, USDT probes, alloc, gc and the JIT log, the perf map strategies,
// the JFR reader on Demo and Leak recordings (and a real application's, on the newest JDK), hsperfdata, the
// fault tier, the fleet agent (one JVM per JDK at once). An application-level tier, whose cost is load and
// measurement windows while the JDK-specific parts under it are the checks above, runs through
// [ForEachJDKDepth]: at [Full] depth on the JDKs $JVMKIT_TEST_FULL_JDKS selects (same syntax; default
// "jdk17", Debian's 17), and as a [Smoke] pass on the others, still checked against its oracles: the real
// applications run Jetty only, without the full-probe second instance. [ForEachFullJDK] runs a check on the
// full-depth JDKs only, where another tier's smoke pass covers the others: the allocation sampler against
// the full probe on Jetty. The container tier ([ForEachContainerJDK]) runs every kind on every JDK of a root
// filesystem. A JDK that cannot do something a test checks says so with [SkipJDK] (JDK 11's missing USDT
// probes or Compiler.perfmap). JVMKIT_TEST_FULL_JDKS=all runs every tier whole on every JDK (about six more
// CPU minutes per JDK).
//
// A JDK of a root filesystem ([JDK.Root]) runs with its root's userland: in a private mount namespace, the
// root's /usr is stacked over the host's and the host's /etc over the root's (read-only overlays; on merged-/usr
// systems every program and library is under /usr), and everything else — /tmp, /var/tmp, /proc, the tests'
// files — is the host's. What only the host has stays visible: the real applications under /usr/share, the
// host's users. So tests run unchanged on it: [JDK.Bin] returns host-runnable wrapper scripts for its tools
// (jcmd, jfr, javac, ...) that take host paths, [StartJVM] and [StartApp] start its JVMs the same way
// (combined with Namespace, UID, ReadOnlyCwd), and the JVM's files are where they would be on the host. Its
// JVMs see the JDK at [JDK.JavaHome] (/usr/lib/jvm/java-21-openjdk-amd64), which is also what /proc/<pid>/maps
// and /proc/<pid>/exe show to the host (with the overlay's device): the library paths of such a JVM lead to
// its files only through /proc/<pid>/root, as in a container.
// All of this needs root; without it, the JDK's subtests skip.
//
// # Workloads
//
// The workloads are plain Java sources in the workloads directory next to this file (found through
// runtime.Caller, so tests of any package find them): Sleeper (idle; thread "jvmkit-worker"), Demo (CPU
// workers, allocation, a thread in Object.wait, a thread BLOCKED on a monitor) and Busy (one thread,
// "jvmkit-busy", spinning in Busy.spin). Each prints "ready" when it is set up; StartJVM waits for that line.
// [CompileFiles] compiles a package's own workloads, e.g. from its testdata/.
//
// Classes are compiled per (JDK, source content) once per test binary into a work directory created with
// os.MkdirTemp("/var/tmp", "jvmkit-test-*"). Not /tmp, and not t.TempDir, which lives in /tmp: a namespaced
// JVM has a private tmpfs over /tmp and would not see its classes, and a JVM running as uid 65534 needs every
// directory on the way to be searchable (0755) and the class files readable (0644), which t.TempDir's 0700
// directories are not. Main removes the work directory; one left by a test binary that died (timeout, crash)
// is removed by the next binary that starts, once its owner, recorded as pid and start time, is gone.
//
// # Real applications
//
// [StartApp] runs an application from Debian's packages, the way users run them, in a directory of the
// test's own and on a free port on 127.0.0.1, never the system's service or configuration: Jetty 9.4
// (jetty9: start.jar with jetty.home=/usr/share/jetty9 and jetty.base=the instance's directory, modules
// http, jsp and deploy), Tomcat 10.1 (tomcat10: Bootstrap with catalina.home=/usr/share/tomcat10 and a
// CATALINA_BASE of its own, as user tomcat through setpriv) and H2 2.1 (libh2-java: org.h2.tools.Server
// -tcp with -Dh2.bindAddress=127.0.0.1). Both servlet containers serve the web application in apps/webapp
// next to this file: index.jsp, which prints a per-instance token that the readiness check asks for (so a
// stranger's server on a recycled port is never taken for ours), and work.jsp, which builds, sorts and
// aggregates a few hundred BigDecimal items per request and renders them (the first request of each runs
// the container's JSP compiler). JVMOptions.Ready is how StartJVM waits for programs that print no "ready".
//
// [App.StartLoad] runs a bounded load: wrk (one thread, 8 connections, a Lua script rotating the pages) for
// the HTTP applications, and for H2 the JDBC client H2Load (workloads/H2Load.java, run on JDK 17 with C1
// only: batched inserts of orders with DECIMAL prices, joins with aggregates computed by the server, point
// updates, and deletes that keep the database at its 2,000 newest orders, which every query reads: the mix
// per step is the same from the first step, and a later client goes on with the database as the earlier
// one left it). [Load.Wait] reports requests and
// errors. The applications' JVMs are plain [JVM]s: stopped by pidfd in the test's cleanup.
//
// # Simulating containers and other users
//
// There is no Docker on the test machines; the harness builds the parts of a container that matter to
// attach, perf maps and hsperfdata with util-linux, as root:
//
//   - Namespace: `unshare --pid --fork --kill-child --mount-proc -- sh -c 'mount -t tmpfs jvmkit-tmp /tmp &&
//     cd DIR && exec "$@"'`. java ends up as pid 1 of a new pid namespace with its own /tmp, like a JVM in a
//     container: its socket is /tmp/.java_pid1 in that tmpfs, reachable from the host only through
//     /proc/<pid>/root. Its host pid is the only child of the unshare process (read from
//     /proc/<unshare>/task/<unshare>/children); its pid inside is the last field of NSpid in its status.
//   - UID/GID: `setpriv --reuid --regid --clear-groups`, so the JVM's files and sockets belong to that user.
//   - ReadOnlyCwd: `mount --bind -o ro DIR DIR` in a private mount namespace (`unshare --mount`), so that an
//     attacher cannot create .attach_pid<pid> in the JVM's working directory, even as root, and must fall
//     back to /tmp.
//
// The mount namespaces are private (unshare's default propagation), so none of the mounts is seen by the host.
//
// # Real containers
//
// JVMOptions.Container runs the JVM in a real container made from its JDK's root filesystem (the trixie root of
// the set-up), as pid 1 of its own pid namespace with a private /tmp, usually as the root's user app (uid
// 1000); [ForEachContainerJDK] runs a test for every [ContainerKind] and every JDK of a root filesystem:
//
//   - Podman: `podman --runtime runc run --rm --rootfs ROOT:O --tmpfs /tmp --user 1000:1000 --network none
//     ...` (podman's default crun fails here: it sets rlimits above ours without CAP_SYS_RESOURCE; runc is
//     given nofile and nproc at most our own limits and conmon's 32768). The :O overlay keeps the container's
//     writes out of the shared root. java, under env --default-signal, is the container's pid 1; its host pid
//     comes from podman inspect. The container is named jvmkit-test-<pid>-<starttime>-<n> and labelled with
//     the test binary's owner record: a later binary removes the containers of one that died, and only those.
//   - PivotRoot: as runc does it: `unshare --pid --fork --kill-child --mount`, the root bind-mounted onto
//     itself read-only, proc, tmpfs /tmp and /var/tmp, then `pivot_root . .` and a lazy unmount of the old
//     root. The host sees the JVM's files at their container paths, through /proc/<pid>/root.
//   - Chroot: the same namespaces and mounts, then `chroot ROOT`. The mount namespace's root stays the host's:
//     /proc/<pid>/maps, exe and cwd show the host's full paths (ROOT/usr/lib/jvm/...), which do not exist under
//     /proc/<pid>/root; the files are reachable through /proc/<pid>/map_files.
//
// In each, the per-binary work directory (compiled workloads) is bind-mounted read-only and the JVM's working
// directory read-write, both at their host paths, so class paths and JVM.Dir mean the same inside and out; the
// working directory belongs to the container's user. [JVM.Command] runs a program inside the container as the
// JVM's user (podman exec, or nsenter into its mount and pid namespaces and root): the container's own jcmd is
// the oracle. [JVM.HostPath] names a file of the container from the host.
//
// # Signal dispositions
//
// HotSpot's attach mechanism is triggered by SIGQUIT, and a process that neither catches nor ignores SIGQUIT
// dies of it; tests prove that attaching never kills what is not a JVM. Such a test proves nothing if the
// victim ignores SIGQUIT, and a child inherits ignored dispositions across exec: a non-interactive shell
// starts its background jobs with SIGINT and SIGQUIT ignored, and go test run from such a script passes
// SIGINT on to everything it starts (the Go runtime reinstalls its own SIGQUIT handler, but not one for an
// ignored SIGINT or for signals ignored with signal.Ignore). A JVM also keeps ignoring a SIGINT, SIGTERM or
// SIGHUP that it inherited ignored (HotSpot then installs no shutdown handler for it), so it would not stop on
// SIGTERM. So [StartJVM] and [StartProcess] run their command through `env --default-signal`,
// which resets every signal to SIG_DFL just before the exec, and check the result in /proc/<pid>/status
// (SigIgn; for victims also SigBlk, which env cannot clear).
//
// # Cleanup
//
// A JVM is stopped by a t.Cleanup, and by [JVM.Stop]. Processes are addressed by pidfd, never by a pid that
// could have been recycled, and never by name: the machines are shared, and other JVMs run next to ours.
// While the JVM runs, Stop removes the attach files that belong to it, seen through /proc/<pid>/cwd and
// /proc/<pid>/root: trigger files for its pid made after it started, and the socket /tmp/.java_pid<nspid>
// if the JVM holds it (its inode is in /proc/<pid>/net/unix, under the name HotSpot bound it to, which is
// "<path>.tmp" before its rename, and among the JVM's fds). Then SIGTERM, after which HotSpot removes its
// socket and hsperfdata file itself, and SIGKILL 2 s later. A JVM that is pid 1 of its namespace only
// receives signals it has a handler for: with -Xrs, SIGTERM is dropped and SIGKILL does the job.
// After the JVM is gone, Stop removes its hsperfdata file (found through the JVM's own mapping of it, and
// removed only if the path still names the same inode), unless it was in a namespace's tmpfs, which is gone.
// If the JVM died before Stop, Stop also removes the trigger files and the socket for its pid that appeared
// after it started, unless another process has that pid by now. Empty hsperfdata_<user> directories stay:
// other JVMs of the same user may be about to use them.
//
// If the test binary dies, the kernel kills its JVMs: their direct child has PR_SET_PDEATHSIG (SIGKILL),
// unshare passes its own death on to java (--kill-child), and setpriv re-arms the parent-death signal that
// its uid change clears (--pdeathsig).
//
// # Compatibility
//
// Tested on Linux 6.18 with util-linux 2.38.1 and coreutils 9.1, with Debian's OpenJDK 17.0.15, Eclipse
// Temurin 25.0.3, bullseye's OpenJDK 11.0.24 (extracted) and trixie's OpenJDK 21.0.13 and 25.0.5 (in their
// root filesystem, glibc 2.41; a JDK of a root filesystem needs both the host and the root to be merged-/usr);
// real applications: jetty9 9.4.57, tomcat10 10.1.60, libh2-java 2.1.214 and wrk 4.1.0 of Debian 12. Jetty
// 9.4's JSP compiler reads Java 7 source (work.jsp has no lambdas); Tomcat 10.1 needs JDK 11. The harness
// needs Linux 5.3 (pidfd_open; pidfd polling), coreutils 8.31 (env
// --default-signal), util-linux 2.33 (setpriv --pdeathsig) and 2.32 (unshare --kill-child), and a kernel
// with CONFIG_PROC_CHILDREN (else it scans /proc for the child of unshare). JDK 9+ release files carry
// JAVA_RUNTIME_VERSION; for older JDKs Version is JAVA_VERSION. On other platforms the package builds and
// its process functions skip the test.
package testutil
