// Package realapps is the real-application test tier (issue 12): Debian's Jetty 9.4, Tomcat 10.1 and H2 2.1
// under load, on every JDK the harness finds, with jvmkit's figures compared with oracles jvmkit did not
// write. The tests are in realapps_test.go; this package's code is the pure analysis they use.
//
// # What is compared
//
//   - jvmkit profile (10 s under load, 499 Hz; 20 s from JDK 25) vs JFR's jdk.ExecutionSample (every 1 ms,
//     with -XX:+DebugNonSafepoints; from JDK 25 the unbiased samples of jdk.CPUTimeSample, every 1 ms of CPU
//     time asked, at most one per kernel tick in effect) over the same window: the share of
//     samples walked to the thread root, the share with a frame that names nothing (reason frames,
//     "[native 0x…]", non-code mappings; stripped libraries aside), the share of samples taken in a system
//     call under a Java native method that does not make it (see [Analyze]: the kernel's __x64_sys_<name>
//     frame, else the C library's wrapper, against the table of what each native method calls), and the
//     overlap of the 15 methods most often at the top of the Java stack ([TiedOverlap], as for classes below).
//     H2's JDBC client runs unpaced for this window.
//   - jvmkit gc vs the JVM's own -Xlog:gc* (timenanos = CLOCK_MONOTONIC, so pauses are matched by time) on
//     Serial (H2), Parallel (H2 with full probes), G1 (Jetty) and ZGC (Tomcat), with a GC.run in the
//     window: every logged pause traced, full collections flagged full, duration_ns equal to the window.
//   - jvmkit alloc --switch-flags vs JFR's jdk.ObjectAllocationSample (throttle off) in the same JVM and
//     window: samples per class (the same sample points), bytes and byte shares (the same weights); and vs
//     the full-probe truth of a second instance started with -XX:+DTraceAllocProbes, loaded and traced at
//     the same time (jvmkit alloc in its exact mode, itself checked against bpftrace on the same probe):
//     top-10 classes by bytes ([TiedOverlap]: classes the sample cannot rank apart from the truth's 10th
//     count as in) and the agreement of byte shares ([ShareAgreement]: the sum of the smaller shares), with
//     JFR's own figures against the same truth beside them; the JDK's jcmd says the flag is off again
//     afterwards. The compared instances run small fixed TLABs (8 KiB: hundreds of samples a second), H2's
//     two under one JDBC rate.
//   - gjmaps --strategy vmstructs vs Compiler.perfmap on every application, and gjcmd vs the JDK's jcmd (run
//     as the JVM's user) on commands whose output is stable, on Tomcat, whose JVM is another user's.
//
// Every assertion fails the test (a comparison without the samples it needs fails too when CI is set, and is
// logged as INCONCLUSIVE otherwise), except the known gaps listed in the tests' knownGaps (the profile's
// top 15 at 12/15 against JDK 11-21's jdk.ExecutionSample, which drops samples in small compiled methods),
// whose failures are logged as KNOWN GAP with what is known of the cause. Every figure, with the oracle's
// beside it, is
// printed at the end of the run and written to $JVMKIT_REALAPPS_REPORT when set (docs/benchmarks.md's
// tables).
//
// # Compatibility
//
// Linux only (perf_event, eBPF, root). Needs the packages jetty9, tomcat10, libh2-java, wrk and bpftrace
// (installed by .ci/run). Measured on Linux 6.18 with Debian's OpenJDK 17.0.15 and Temurin 25; Tomcat 10.1
// needs JDK 11, Compiler.perfmap JDK 17.
package realapps
