package fleet

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"runtime"
	rtmetrics "runtime/metrics"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jvmkit/jvmkit/internal/procfs"
)

// sinkStats are one sink's counters.
type sinkStats struct {
	name          string
	sent          atomic.Int64 // windows
	batches       atomic.Int64
	dropped       atomic.Int64 // windows dropped from a full buffer or at stop
	rejected      atomic.Int64 // windows the backend refused
	errors        atomic.Int64 // failed exports
	buffered      atomic.Int64 // bytes
	exportSeconds seconds
}

type seconds struct{ ns atomic.Int64 }

func (s *seconds) add(d time.Duration) { s.ns.Add(int64(d)) }

// stats are the agent's counters, read by WriteMetrics while the agent runs.
type stats struct {
	start     time.Time
	windows   atomic.Int64 // window periods cut
	profiles  atomic.Int64 // per-JVM windows made
	samples   atomic.Int64
	lost      atomic.Int64 // samples the kernel dropped (a ring was full)
	broken    atomic.Int64
	truncated atomic.Int64
	jvms      atomic.Int64 // being profiled now
	perCPU    atomic.Bool  // sampling with one event per CPU (else per thread)
	started   atomic.Int64
	exited    atomic.Int64
	sinks     []*sinkStats

	mu      sync.Mutex
	skipped map[string]int64 // JVMs that could not be profiled, by reason
	errs    map[string]int64 // by kind
}

func newStats() *stats {
	return &stats{start: time.Now(), skipped: map[string]int64{}, errs: map[string]int64{}}
}

func (s *stats) skip(reason string) {
	s.mu.Lock()
	s.skipped[reason]++
	s.mu.Unlock()
}

func (s *stats) err(kind string) {
	s.mu.Lock()
	s.errs[kind]++
	s.mu.Unlock()
}

// WriteMetrics writes the agent's health as Prometheus text (exposition format 0.0.4).
func (a *Agent) WriteMetrics(w io.Writer) error {
	s := a.stats
	bw := bufio.NewWriter(w)
	metric := func(name, typ, help string, samples ...string) {
		fmt.Fprintf(bw, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
		for _, l := range samples {
			fmt.Fprintf(bw, "%s%s\n", name, l)
		}
	}
	num := func(v int64) string { return " " + strconv.FormatInt(v, 10) }
	flt := func(v float64) string { return " " + strconv.FormatFloat(v, 'g', -1, 64) }
	metric("jvmkit_agent_windows_total", "counter", "Window periods cut.", num(s.windows.Load()))
	metric("jvmkit_agent_profiles_total", "counter", "Per-JVM profiles made (one per JVM per window).", num(s.profiles.Load()))
	metric("jvmkit_agent_samples_total", "counter", "CPU samples walked.", num(s.samples.Load()))
	metric("jvmkit_agent_samples_lost_total", "counter", "Samples the kernel dropped because a ring was full (the agent read it too late).", num(s.lost.Load()))
	mode := "per-thread"
	if s.perCPU.Load() {
		mode = "per-cpu"
	}
	metric("jvmkit_agent_sampling", "gauge", "How the agent samples: one BPF-filtered event per CPU, or events per thread.", `{mode="`+mode+`"} 1`)
	metric("jvmkit_agent_samples_broken_total", "counter", "Samples whose stack ended before its thread's root.", num(s.broken.Load()))
	metric("jvmkit_agent_samples_truncated_total", "counter", "Samples folded into a [truncated] stack (too many distinct stacks in a window).", num(s.truncated.Load()))
	metric("jvmkit_agent_jvms", "gauge", "JVMs being profiled.", num(s.jvms.Load()))
	metric("jvmkit_agent_jvms_started_total", "counter", "JVMs the agent started profiling.", num(s.started.Load()))
	metric("jvmkit_agent_jvms_exited_total", "counter", "Profiled JVMs that exited.", num(s.exited.Load()))
	s.mu.Lock()
	metric("jvmkit_agent_jvms_skipped_total", "counter", "Attempts to profile a JVM that failed, by reason.", labelled("reason", s.skipped)...)
	metric("jvmkit_agent_errors_total", "counter", "Errors, by kind.", labelled("kind", s.errs)...)
	s.mu.Unlock()
	var sent, dropped, rejected, failed, buffered []string
	for _, ss := range s.sinks {
		l := `{sink="` + ss.name + `"}`
		sent = append(sent, l+num(ss.sent.Load()))
		dropped = append(dropped, l+num(ss.dropped.Load()))
		rejected = append(rejected, l+num(ss.rejected.Load()))
		failed = append(failed, l+num(ss.errors.Load()))
		buffered = append(buffered, l+num(ss.buffered.Load()))
	}
	metric("jvmkit_agent_windows_sent_total", "counter", "Per-JVM windows a sink accepted.", sent...)
	metric("jvmkit_agent_windows_dropped_total", "counter", "Per-JVM windows dropped unsent (buffer full, or still buffered at stop).", dropped...)
	metric("jvmkit_agent_windows_rejected_total", "counter", "Per-JVM windows a backend refused for good.", rejected...)
	metric("jvmkit_agent_export_errors_total", "counter", "Failed exports (each retried unless rejected).", failed...)
	metric("jvmkit_agent_buffer_bytes", "gauge", "Bytes of profiles waiting for a sink.", buffered...)
	cpu := []rtmetrics.Sample{{Name: "/cpu/classes/total:cpu-seconds"}}
	rtmetrics.Read(cpu)
	if cpu[0].Value.Kind() == rtmetrics.KindFloat64 {
		metric("jvmkit_agent_cpu_seconds_total", "counter", "CPU time the agent used (the Go runtime's estimate).", flt(cpu[0].Value.Float64()))
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	metric("jvmkit_agent_heap_bytes", "gauge", "Go heap in use.", num(int64(ms.HeapInuse)))
	if rss, ok := residentBytes(); ok {
		metric("jvmkit_agent_resident_bytes", "gauge", "The agent's resident set size.", num(rss))
	}
	metric("jvmkit_agent_uptime_seconds", "gauge", "Seconds since the agent started.", flt(time.Since(s.start).Seconds()))
	return bw.Flush()
}

func labelled(label string, m map[string]int64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, "{"+label+"="+strconv.Quote(k)+"} "+strconv.FormatInt(m[k], 10))
	}
	return out
}

// residentBytes is the agent's own resident set size.
func residentBytes() (int64, bool) {
	st, err := procfs.Default.Status(os.Getpid())
	return st.RSS, err == nil && st.RSS > 0
}
