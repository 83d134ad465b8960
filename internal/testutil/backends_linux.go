package testutil

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BackendsDir is where scripts/build-backends puts the profile backends the fleet agent's tests push
// to: $JVMKIT_BACKENDS, else /var/cache/jvmkit/backends.
func BackendsDir() string {
	if d := os.Getenv("JVMKIT_BACKENDS"); d != "" {
		return d
	}
	return "/var/cache/jvmkit/backends"
}

func backendBinary(t testing.TB, rel string) string {
	t.Helper()
	SkipInShort(t, "a profile backend")
	bin := filepath.Join(BackendsDir(), rel)
	if _, err := os.Stat(bin); err != nil {
		Skipf(t, "test needs %s: run scripts/build-backends (%v)", bin, err)
	}
	return bin
}

// Backend is a profile backend server started by a test: an OpenTelemetry Collector or Pyroscope.
// It listens on 127.0.0.1 on a port chosen when it starts, kept across Stop and Start.
type Backend struct {
	// URL is the base URL of its HTTP API (http://127.0.0.1:port).
	URL string
	// Dir is its working directory: its configuration, data and log.
	Dir string

	t    testing.TB
	port int
	args func(n int) []string // the command line of the n-th start
	bin  string
	cmd  *exec.Cmd
	done chan struct{}
	n    int
}

// Collector is an OpenTelemetry Collector v0.165.0 (otlpreceiver on HTTP, fileexporter) with the
// profiles signal enabled. Every start writes what it receives to a new file, Dir/profiles-<n>.pb
// (fileexporter's proto format: each ProfilesData message after its 4-byte big-endian length), which
// CollectorFiles lists.
func StartCollector(t testing.TB) *Backend {
	t.Helper()
	b := &Backend{t: t, bin: backendBinary(t, "otelcol-0.165.0/otelcol"), Dir: newRunDir(t, "otelcol-*"), port: freePort(t)}
	b.URL = "http://127.0.0.1:" + strconv.Itoa(b.port)
	b.args = func(n int) []string {
		cfg := filepath.Join(b.Dir, fmt.Sprintf("config-%d.yaml", n))
		text := fmt.Sprintf(`receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%d
exporters:
  file:
    path: %s
    format: proto
    flush_interval: 100ms
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    profiles:
      receivers: [otlp]
      exporters: [file]
`, b.port, filepath.Join(b.Dir, fmt.Sprintf("profiles-%d.pb", n)))
		if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return []string{"--config", cfg, "--feature-gates=service.profilesSupport"}
	}
	b.Start()
	return b
}

// CollectorFiles lists the files a collector wrote, oldest first.
func (b *Backend) CollectorFiles() []string {
	var out []string
	for i := 1; i <= b.n; i++ {
		out = append(out, filepath.Join(b.Dir, fmt.Sprintf("profiles-%d.pb", i)))
	}
	return out
}

// StartPyroscope starts Grafana Pyroscope v1.9.0 in single-binary mode (-target=all) with filesystem
// storage under Dir, its HTTP API (Push, the Connect query API) on URL, every other listener (gRPC,
// memberlist) on a free loopback port too.
func StartPyroscope(t testing.TB) *Backend {
	t.Helper()
	b := &Backend{t: t, bin: backendBinary(t, "pyroscope-1.9.0/pyroscope"), Dir: newRunDir(t, "pyroscope-*"), port: freePort(t)}
	b.URL = "http://127.0.0.1:" + strconv.Itoa(b.port)
	grpc, memberlist := freePort(t), freePort(t)
	b.args = func(int) []string {
		return []string{
			"-target=all",
			"-server.http-listen-address=127.0.0.1", "-server.http-listen-port=" + strconv.Itoa(b.port),
			"-server.grpc-listen-address=127.0.0.1", "-server.grpc-listen-port=" + strconv.Itoa(grpc),
			"-memberlist.bind-addr=127.0.0.1", "-memberlist.bind-port=" + strconv.Itoa(memberlist),
			"-memberlist.advertise-addr=127.0.0.1", "-memberlist.advertise-port=" + strconv.Itoa(memberlist),
			"-ingester.min-ready-duration=0s",
			"-storage.backend=filesystem", "-storage.filesystem.dir=" + filepath.Join(b.Dir, "data"),
			"-pyroscopedb.data-path=" + filepath.Join(b.Dir, "db"),
			"-self-profiling.disable-push=true",
			"-usage-stats.enabled=false",
			// Every component's own address: the default is the first non-loopback interface's, where
			// nothing listens (the query frontend then never reaches the scheduler and queries hang).
			"-query-frontend.instance-addr=127.0.0.1", "-query-scheduler.ring.instance-addr=127.0.0.1",
			"-compactor.ring.instance-addr=127.0.0.1", "-distributor.ring.instance-addr=127.0.0.1",
			"-store-gateway.sharding-ring.instance-addr=127.0.0.1", "-overrides-exporter.ring.instance-addr=127.0.0.1",
			"-ingester.lifecycler.addr=127.0.0.1",
		}
	}
	b.Start()
	return b
}

// Start starts the backend (again, after Stop) and waits until its HTTP port accepts connections.
func (b *Backend) Start() {
	b.t.Helper()
	b.n++
	log, err := os.Create(filepath.Join(b.Dir, fmt.Sprintf("log-%d.txt", b.n)))
	if err != nil {
		b.t.Fatal(err)
	}
	cmd := exec.Command(b.bin, b.args(b.n)...)
	cmd.Dir = b.Dir
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &unix.SysProcAttr{Pdeathsig: unix.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		b.t.Fatalf("start %s: %v", b.bin, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); _ = log.Close(); close(done) }()
	b.cmd, b.done = cmd, done
	b.t.Cleanup(b.Stop)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(b.port), time.Second)
		if err == nil {
			_ = c.Close()
			return
		}
		select {
		case <-done:
			out, _ := os.ReadFile(log.Name())
			b.t.Fatalf("%s exited at start:\n%s", filepath.Base(b.bin), tail(out, 4000))
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("%s does not listen on %d after 2 minutes", filepath.Base(b.bin), b.port)
		}
	}
}

// Stop stops the backend: SIGTERM, then SIGKILL after 10 s.
func (b *Backend) Stop() {
	if b.cmd == nil {
		return
	}
	_ = b.cmd.Process.Signal(unix.SIGTERM)
	select {
	case <-b.done:
	case <-time.After(10 * time.Second):
		_ = b.cmd.Process.Kill()
		<-b.done
	}
	b.cmd = nil
}

// Log returns what the backend printed in its n-th run (1 is the first).
func (b *Backend) Log(n int) string {
	out, _ := os.ReadFile(filepath.Join(b.Dir, fmt.Sprintf("log-%d.txt", n)))
	return string(out)
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
