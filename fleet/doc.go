// Package fleet is jvmkit's continuous profiler for a node: an [Agent] finds every HotSpot JVM on
// the host and in its containers (jcmd.List), samples each one's CPU with the agentless profiler
// (unwind: perf_event cpu-clock samples walked through the JVM's VMStructs, nothing loaded into the
// JVM), cuts a profile per JVM per window (default 60 s) and hands the windows to its sinks: [OTLP]
// (OpenTelemetry profiles over HTTP), [Pyroscope] (its Connect Push API) and [Dir] (a size-bounded
// directory of .pb.gz files), several at once.
//
// # Windows
//
// Each window of a JVM is a pprof profile with two sample types, samples/count and cpu/nanoseconds
// (a sample is one period, 1/Frequency s, of on-CPU time), frames named exactly as `jvmkit profile`
// names them ([unwind.Frame.Label]: "pkg.Class.method", "_[j]" for compiled, "_[i]" for inlined,
// "_[k]" for kernel frames; a stack that could not be walked to its thread's root ends in a frame
// naming the reason). A JVM found at the end of window n is sampled from window n+1; a JVM that
// exits is sent with what it had and then forgotten; one that cannot be opened (no permission,
// not HotSpot, VMStructs unreadable) is skipped with a reason, counted, and tried again at the next
// window; none of them blocks the others. An idle JVM (no sample in a window) sends nothing for it.
//
// # Sampling
//
// One cpu-clock event per CPU samples every JVM profiled ([unwind.CPUSampler]): a BPF program on each
// event keeps the samples of the JVMs' process ids (a map the agent updates as JVMs come and go) and
// drops the rest before any stack is copied. One goroutine reads the per-CPU rings (1 MiB each) ten
// times a second and walks each sample with its JVM's walker at once, before the code it ran can be
// unloaded. Nothing is kept per thread and no thread list is polled: the agent's cost grows with the
// samples taken, not with the JVMs' threads, and a thread started at any time is sampled from its
// first tick. A JVM's exit is seen through a pidfd. The kernel's lost samples (a ring read too late)
// are counted. Where the per-CPU way is not open to the agent — it runs in a pid namespace of its own
// (no hostPID: its pids are not the kernel's), no pidfds (Linux < 5.3), the kernel refuses the BPF
// program (Linux < 4.9, no CAP_BPF or CAP_SYS_ADMIN) — or with Options.PerThread, each JVM's threads
// get an event and ring of their own, found by polling /proc/<pid>/task, as `jvmkit profile` does;
// the metric jvmkit_agent_sampling says which.
//
// # Labels
//
// [Target] carries the labels a service owner searches by, as OpenTelemetry resource attributes
// (semantic conventions): service.name ([ServiceName]: -Dotel.service.name, OTEL_SERVICE_NAME,
// service.name in otel.resource.attributes / OTEL_RESOURCE_ATTRIBUTES — the JVM's command line,
// JAVA_TOOL_OPTIONS, JDK_JAVA_OPTIONS and environment as the JVM started with them — else the main
// class or the jar's base name), host.name, process.pid, process.runtime.version (the VM release),
// process.command (main class or jar), container.id, container.runtime and k8s.pod.uid (from the
// cgroup path, procfs.ContainerOf). Pyroscope gets the same as labels with '_' for '.'
// (service_name, host_name, ...).
//
// # OTLP
//
// The profiles signal is in development; the agent speaks the version of
// go.opentelemetry.io/proto/slim/otlp/profiles/v1development v0.4.1 (pinned: the OpenTelemetry
// Collector v0.165.0 takes it), posts to /v1development/profiles, and says so in its User-Agent and
// scope attribute ([OTLPProtoVersion]). [ToOTLP] is the pprof→OTLP conversion: one request, one
// dictionary shared by every profile in it (strings, mappings, functions, locations, stacks,
// attributes each once, index 0 the zero value as the spec requires), one ResourceProfiles per
// JVM, and one OTLP Profile per pprof sample type (the signal has one value type per profile).
//
// # Production manners
//
// Each sink has its own bounded buffer (Options.BufferBytes, counting the gzipped pprof): while a
// backend is down, exports are retried with exponential backoff, new windows queue, and when the
// buffer is full the oldest are dropped and counted. Permanent refusals (4xx other than 408/429)
// drop the batch at once ([ErrRejected]). A window's distinct stacks are bounded
// (Options.MaxStacks), frame names are interned per window, and the walker's caches are bounded
// (frames by pc) or dropped every second (its code cache view), so memory stays flat over time. When Run's context ends the last, partial window
// is cut and sent within Options.FlushTimeout. [Agent.WriteMetrics] reports the agent's health as
// Prometheus text (windows, profiles, samples, JVMs, skips by reason, per-sink sent, dropped,
// rejected, errors and buffer bytes, RSS).
//
// # Compatibility
//
// Linux x86-64 (the unwinder's platform); elsewhere the package builds and JVMs are skipped with
// reason "not-supported". Per-CPU sampling needs Linux 5.3+ and the host's pid namespace (see
// Sampling); per-thread sampling works on any kernel with perf_event_open. Tested on Linux 6.18 with OpenJDK 17 (Debian) and Temurin 25, against an
// OpenTelemetry Collector v0.165.0 (otlpreceiver, fileexporter, --feature-gates=service.profilesSupport)
// and Grafana Pyroscope v1.9.0, both built by scripts/build-backends.
package fleet
