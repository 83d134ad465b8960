// Package agent is the command line of `jvmkit agent` (package fleet), in a package of its own so
// that only the jvmkit binary links its HTTP and protobuf clients, not the tests of package jvmkit's tree.
package agent

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/jvmkit/jvmkit/cmd/internal/cliutil"
	"github.com/jvmkit/jvmkit/fleet"
	"github.com/jvmkit/jvmkit/internal/procfs"
	"github.com/jvmkit/jvmkit/internal/rootfs"
	"github.com/jvmkit/jvmkit/jcmd"
)

type agentFlags struct {
	config        string
	window        time.Duration
	freq          int
	otlp          []string
	otlpHeaders   []string
	pyroscope     []string
	pyroHeaders   []string
	dir           string
	dirMax        string
	buffer        string
	memLimit      string
	metricsAddr   string
	host          string
	pids          []int
	duration      time.Duration
	exportTimeout time.Duration
	logLevel      string
	perThread     bool
}

// Command is `jvmkit agent`, for jvmkit.Main (cmd/jvmkit).
func Command(stdout, stderr io.Writer) *cobra.Command {
	a := &app{stdout: stdout, stderr: stderr}
	var af agentFlags
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Profile every JVM on this node continuously and push the profiles to OTLP, Pyroscope or a directory",
		Long: `agent keeps profiling the CPU of every HotSpot JVM it can see, on the host and in containers,
with jvmkit's agentless profiler (nothing is loaded into the JVMs), and pushes one profile per JVM per
window to the backends given: an OpenTelemetry Collector or any OTLP profiles endpoint (--otlp, HTTP
protobuf, the development profiles signal: experimental), Grafana Pyroscope (--pyroscope), a directory
of gzipped pprof files bounded in size (--dir); several at once. New JVMs are found at each window's
end; JVMs that exit are dropped; a JVM that cannot be read is skipped with a reason and tried again.

Profiles are labelled with service.name (-Dotel.service.name, OTEL_SERVICE_NAME or
OTEL_RESOURCE_ATTRIBUTES of the JVM, else its main class or jar), host.name, process.pid,
process.runtime.version, container.id and k8s.pod.uid (from the JVM's cgroup). Frames are named as
` + "`jvmkit profile`" + ` names them.

While a backend is down, windows wait in a bounded buffer (--buffer-size per backend; the oldest are
dropped and counted) and exports are retried with exponential backoff. SIGTERM or SIGINT sends the last,
partial window and exits 0. --metrics-addr serves the agent's health as Prometheus text on /metrics.

A config file (--config) holds the same settings as the flags, one "name: value" per line (the long
flag names; repeat a name for several values; # starts a comment); flags given on the command line win.

It samples with one cpu-clock event per CPU whose BPF program keeps the samples of the JVMs profiled,
so its cost does not grow with their threads; where the kernel refuses that (no CAP_BPF), or with
--per-thread, it samples each JVM's threads with events of their own.

It needs root (perf_event_open on other users' processes and per CPU, BPF, /proc/<pid>/mem).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if af.config != "" {
				if err := applyAgentConfig(cmd.Flags(), af.config); err != nil {
					return err
				}
			}
			return a.runAgent(cmd.Context(), &af)
		},
	}
	f := cmd.Flags()
	f.StringVar(&af.config, "config", "", "read settings from this file (flag names, \"name: value\" per line)")
	f.DurationVar(&af.window, "window", time.Minute, "how long each profile covers")
	f.IntVarP(&af.freq, "freq", "F", 99, "samples per second per thread (on-CPU time)")
	f.StringArrayVar(&af.otlp, "otlp", nil, "OTLP/HTTP endpoint, e.g. http://collector:4318 (the path "+fleet.OTLPPath+" is added when the URL has none)")
	f.StringArrayVar(&af.otlpHeaders, "otlp-header", nil, "header for OTLP requests, \"Name=value\" (repeatable)")
	f.StringArrayVar(&af.pyroscope, "pyroscope", nil, "Pyroscope URL, e.g. http://pyroscope:4040")
	f.StringArrayVar(&af.pyroHeaders, "pyroscope-header", nil, "header for Pyroscope requests, e.g. \"X-Scope-OrgID=team\" (repeatable)")
	f.StringVar(&af.dir, "dir", "", "write each profile as a .pb.gz file into this directory")
	f.StringVar(&af.dirMax, "dir-max-size", "256MiB", "bound of the directory's profile files; the oldest are removed")
	f.StringVar(&af.buffer, "buffer-size", "16MiB", "per backend: unsent profiles kept while it is down")
	f.StringVar(&af.memLimit, "memory-limit", "100MiB", "soft limit of the agent's Go heap (GOMEMLIMIT); 0 for none")
	f.StringVar(&af.metricsAddr, "metrics-addr", "", "serve Prometheus metrics on this address, e.g. :9464 or 127.0.0.1:9464")
	f.StringVar(&af.host, "host", "", "host.name label (default: the hostname; in Kubernetes pass the node name)")
	f.IntSliceVarP(&af.pids, "pid", "p", nil, "profile only these JVMs (repeatable; default: every JVM)")
	f.DurationVar(&af.duration, "duration", 0, "stop after this long, like SIGTERM (default: run until stopped)")
	f.DurationVar(&af.exportTimeout, "export-timeout", 30*time.Second, "bound of one export request")
	f.StringVar(&af.logLevel, "log-level", "info", "debug, info, warn or error (logs go to stderr)")
	f.BoolVar(&af.perThread, "per-thread", false, "sample each JVM's threads with events of their own instead of one BPF-filtered event per CPU (the fallback when the kernel refuses BPF; costs more per JVM)")
	return cmd
}

type app struct {
	stdout, stderr io.Writer
}

func (a *app) runAgent(ctx context.Context, af *agentFlags) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(af.logLevel)); err != nil {
		return cliutil.UsageErrorf("--log-level %q: debug, info, warn or error", af.logLevel)
	}
	if af.window < time.Second {
		return cliutil.UsageErrorf("--window %v: at least 1s", af.window)
	}
	if af.freq <= 0 || af.freq > 10000 {
		return cliutil.UsageErrorf("-F %d: the rate must be between 1 and 10000 Hz", af.freq)
	}
	sizes := map[string]int64{}
	for name, v := range map[string]string{"dir-max-size": af.dirMax, "buffer-size": af.buffer, "memory-limit": af.memLimit} {
		n, err := parseSize(v)
		if err != nil {
			return cliutil.UsageErrorf("--%s: %v", name, err)
		}
		sizes[name] = n
	}
	log := slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: level}))
	v := cliutil.BuildVersion()
	var sinks []fleet.Sink
	otlpHeaders, err := parseHeaders("otlp-header", af.otlpHeaders)
	if err != nil {
		return err
	}
	pyroHeaders, err := parseHeaders("pyroscope-header", af.pyroHeaders)
	if err != nil {
		return err
	}
	for _, u := range af.otlp {
		s := &fleet.OTLP{Endpoint: u, Headers: otlpHeaders, Version: v}
		if _, err := s.URL(); err != nil {
			return cliutil.UsageErrorf("--otlp: %v", err)
		}
		sinks = append(sinks, s)
	}
	for _, u := range af.pyroscope {
		if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			return cliutil.UsageErrorf("--pyroscope %q: want http(s)://host:port", u)
		}
		sinks = append(sinks, &fleet.Pyroscope{URL: u, Headers: pyroHeaders})
	}
	if af.dir != "" {
		sinks = append(sinks, &fleet.Dir{Path: af.dir, MaxBytes: sizes["dir-max-size"]})
	}
	if len(sinks) == 0 {
		return cliutil.UsageErrorf("no backend: give --otlp URL, --pyroscope URL or --dir DIR")
	}
	if lim := sizes["memory-limit"]; lim > 0 {
		debug.SetMemoryLimit(lim)
	}
	opts := fleet.Options{
		Window: af.window, Frequency: af.freq, Sinks: sinks, BufferBytes: int(sizes["buffer-size"]),
		ExportTimeout: af.exportTimeout, Host: af.host, Version: v, Logger: log, PerThread: af.perThread,
	}
	if len(af.pids) > 0 {
		pids := map[int]bool{}
		for _, p := range af.pids {
			pids[p] = true
		}
		opts.Select = func(j jcmd.JVM) bool { return pids[j.PID] }
	}
	agent, err := fleet.New(opts)
	if err != nil {
		return err
	}
	if af.metricsAddr != "" {
		ln, err := net.Listen("tcp", af.metricsAddr)
		if err != nil {
			return fmt.Errorf("--metrics-addr: %w", err)
		}
		mux := http.NewServeMux()
		mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
			_ = agent.WriteMetrics(w)
		})
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		defer func() { _ = srv.Close() }()
		log.Info("agent: metrics", "url", "http://"+ln.Addr().String()+"/metrics")
	}
	if af.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, af.duration)
		defer cancel()
	}
	log.Info("agent: started", "window", af.window, "freq", af.freq, "backends", len(sinks), "version", v)
	// Without CAP_SYS_PTRACE other users' JVMs are not even seen; without CAP_PERFMON (or
	// CAP_SYS_ADMIN) none is sampled.
	for _, h := range []string{procfs.RootWithout(procfs.CapSysPtrace), procfs.RootWithoutAny(procfs.CapPerfmon, procfs.CapSysAdmin)} {
		if h != "" {
			log.Warn("agent: some or all JVMs cannot be profiled", "reason", h)
		}
	}
	err = agent.Run(ctx)
	// The last window went out (or was counted as dropped): a stop by signal or --duration is a
	// normal end for a daemon.
	_ = agent.WriteMetrics(&logWriter{log: log})
	return err
}

// logWriter puts the final metrics into the log at debug level.
type logWriter struct{ log *slog.Logger }

func (w *logWriter) Write(p []byte) (int, error) {
	w.log.Debug("agent: final metrics\n" + string(p))
	return len(p), nil
}

func parseHeaders(flag string, hs []string) (map[string]string, error) {
	out := map[string]string{}
	for _, h := range hs {
		k, v, ok := strings.Cut(h, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, cliutil.UsageErrorf("--%s %q: want Name=value", flag, h)
		}
		out[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return out, nil
}

// parseSize reads "16MiB", "256M", "1GiB", "4096" (bytes).
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1}} {
		if rest, ok := strings.CutSuffix(t, u.suffix); ok {
			t, mult = strings.TrimSpace(rest), u.m
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || n > (1<<50)/mult {
		return 0, fmt.Errorf("%q is not a size (e.g. 16MiB, 512K, 4096)", s)
	}
	return n * mult, nil
}

// parseAgentConfig reads the agent's config file: "name: value" per line, names the long flag
// names, values optionally quoted, '#' comments and blank lines ignored; a name may repeat.
func parseAgentConfig(b []byte) ([][2]string, error) {
	var out [][2]string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		k = strings.TrimSpace(k)
		if !ok || k == "" || strings.ContainsAny(k, " \t\"'") {
			return nil, fmt.Errorf("line %d: want \"name: value\", got %q", n, line)
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		} else if i := strings.Index(v, " #"); i >= 0 {
			v = strings.TrimSpace(v[:i])
		}
		out = append(out, [2]string{k, v})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// applyAgentConfig sets the flags the command line did not set from the config file.
func applyAgentConfig(fs *pflag.FlagSet, path string) error {
	b, err := readConfig(path)
	if err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	kvs, err := parseAgentConfig(b)
	if err != nil {
		return cliutil.UsageErrorf("--config %s: %v", path, err)
	}
	changed := map[string]bool{}
	fs.Visit(func(f *pflag.Flag) { changed[f.Name] = true })
	for _, kv := range kvs {
		f := fs.Lookup(kv[0])
		if f == nil || kv[0] == "config" {
			return cliutil.UsageErrorf("--config %s: unknown setting %q (the settings are the flags' long names)", path, kv[0])
		}
		if changed[kv[0]] {
			continue
		}
		if err := fs.Set(kv[0], kv[1]); err != nil {
			return cliutil.UsageErrorf("--config %s: %s: %v", path, kv[0], err)
		}
	}
	return nil
}

// readConfig reads the agent's configuration file, which decides where every JVM's stacks are sent: it
// must be a regular file of root or the agent's user that nobody else can write (a Kubernetes ConfigMap's
// files are root's, 0644, behind links, which are followed). It is opened without blocking, so a FIFO
// at the path cannot hang the agent, and never as a controlling terminal.
func readConfig(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|openConfigFlags, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := rootfs.ReadRegular(f, path, 1<<20)
	if err != nil {
		return nil, err
	}
	uid, perm, err := ownerAndPerm(f)
	if err != nil {
		return nil, err
	}
	if uid > 0 && uid != os.Geteuid() {
		return nil, fmt.Errorf("%s belongs to uid %d: give a file of root or uid %d that nobody else can write", path, uid, os.Geteuid())
	}
	if perm&0o022 != 0 {
		return nil, fmt.Errorf("%s can be changed by users other than its owner: give a file of root or uid %d that nobody else can write", path, os.Geteuid())
	}
	return b, nil
}
