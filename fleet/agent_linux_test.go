package fleet_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	commonpb "go.opentelemetry.io/proto/slim/otlp/common/v1"
	pb "go.opentelemetry.io/proto/slim/otlp/profiles/v1development"
	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/proto"

	"github.com/jvmkit/jvmkit/fleet"
	"github.com/jvmkit/jvmkit/internal/realapps"
	"github.com/jvmkit/jvmkit/internal/testutil"
	"github.com/jvmkit/jvmkit/jcmd"
)

// tap is a sink that keeps what it is given: the reference the backends' contents are checked against.
type tap struct {
	mu      sync.Mutex
	batches [][]*fleet.Window
	cond    chan struct{}
}

func newTap() *tap { return &tap{cond: make(chan struct{}, 1)} }

func (t *tap) Name() string { return "tap" }

func (t *tap) Export(_ context.Context, ws []*fleet.Window) error {
	t.mu.Lock()
	t.batches = append(t.batches, ws)
	t.mu.Unlock()
	select {
	case t.cond <- struct{}{}:
	default:
	}
	return nil
}

func (t *tap) snapshot() [][]*fleet.Window {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.batches)
}

// waitFor waits until ok holds for the batches received, or fails after d.
func (t *tap) waitFor(tb testing.TB, d time.Duration, what string, ok func([][]*fleet.Window) bool) [][]*fleet.Window {
	tb.Helper()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		b := t.snapshot()
		if ok(b) {
			return b
		}
		select {
		case <-t.cond:
		case <-deadline.C:
			tb.Fatalf("after %v: %s; %d batches", d, what, len(b))
		}
	}
}

func pidsIn(ws []*fleet.Window) map[int]*fleet.Window {
	out := map[int]*fleet.Window{}
	for _, w := range ws {
		out[w.Target.PID] = w
	}
	return out
}

// ourJVMs selects the JVMs this test started from what the agent discovers (other work on the
// machine runs JVMs too).
type ourJVMs struct {
	mu   sync.Mutex
	pids map[int]bool
}

func (o *ourJVMs) add(pid int) {
	o.mu.Lock()
	o.pids[pid] = true
	o.mu.Unlock()
}

func (o *ourJVMs) selects(j jcmd.JVM) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.pids[j.PID]
}

// fakePod puts a process into a cgroup whose path is a Kubernetes pod's container's (systemd driver,
// containerd) in the cgroup v2 hierarchy, and returns the container id and pod UID it names.
func fakePod(t *testing.T) (place func(pid int), id, pod string) {
	t.Helper()
	root := cgroup2Mount(t)
	b := make([]byte, 48)
	_, _ = rand.Read(b)
	id = hex.EncodeToString(b[:32])
	u := hex.EncodeToString(b[32:])
	pod = u[:8] + "-" + u[8:12] + "-" + u[12:16] + "-" + u[16:20] + "-" + u[20:32]
	top := filepath.Join(root, "jvmkit-test-"+id[:8]+".slice")
	leaf := filepath.Join(top, "kubepods-burstable-pod"+strings.ReplaceAll(pod, "-", "_")+".slice", "cri-containerd-"+id+".scope")
	if err := os.MkdirAll(leaf, 0o755); err != nil {
		testutil.Skipf(t, "test needs a writable cgroup v2 hierarchy: %v", err)
	}
	t.Cleanup(func() {
		// Whatever is left in it goes back to the root cgroup, then the directories go.
		if b, err := os.ReadFile(filepath.Join(leaf, "cgroup.procs")); err == nil {
			for _, p := range strings.Fields(string(b)) {
				_ = os.WriteFile(filepath.Join(root, "cgroup.procs"), []byte(p), 0)
			}
		}
		for d := leaf; d != root; d = filepath.Dir(d) {
			_ = os.Remove(d)
		}
	})
	return func(pid int) {
		if err := os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			t.Fatalf("move %d into %s: %v", pid, leaf, err)
		}
	}, id, pod
}

func cgroup2Mount(t *testing.T) string {
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fs := strings.Fields(sc.Text()); len(fs) > 2 && fs[2] == "cgroup2" {
			return fs[1]
		}
	}
	testutil.Skipf(t, "test needs a cgroup v2 mount")
	return ""
}

// oneShot runs `jvmkit profile` (the binary jvmkit) on pid for d and returns its folded stacks.
func oneShot(jvmkit string, pid int, d time.Duration, freq int) (map[string]int64, error) {
	var out, errOut bytes.Buffer
	cmd := exec.Command(jvmkit, "profile", strconv.Itoa(pid), "-d", d.String(), "-F", strconv.Itoa(freq), "--format", "folded")
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("jvmkit profile: %w: %s", err, errOut.String())
	}
	stacks := map[string]int64{}
	for line := range strings.SplitSeq(strings.TrimSpace(out.String()), "\n") {
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		n, _ := strconv.ParseInt(line[i+1:], 10, 64)
		stacks[line[:i]] += n
	}
	return stacks, nil
}

// folded sums a pprof profile's first value by stack, root first, frames by their labels (SystemName).
func folded(p *profile.Profile) map[string]int64 {
	out := map[string]int64{}
	for _, s := range p.Sample {
		var names []string
		for k := len(s.Location) - 1; k >= 0; k-- {
			for _, l := range s.Location[k].Line {
				names = append(names, l.Function.SystemName)
			}
		}
		out[strings.Join(names, ";")] += s.Value[0]
	}
	return out
}

// leafMethod is a stack's innermost Java method (its label without the compiled/inlined mark), or
// its leaf frame when it has no Java frame.
func leafMethod(stack string) string {
	frames := strings.Split(stack, ";")
	for i := len(frames) - 1; i >= 0; i-- {
		f := frames[i]
		if n, ok := strings.CutSuffix(f, "_[j]"); ok {
			return n
		}
		if n, ok := strings.CutSuffix(f, "_[i]"); ok {
			return n
		}
		if !strings.HasSuffix(f, "_[k]") && !strings.Contains(f, "::") && !strings.HasPrefix(f, "[") && strings.Contains(f, ".") && !strings.Contains(f, ".so") {
			return f // interpreted
		}
	}
	return frames[len(frames)-1]
}

// leafCounts are the samples of each leaf method.
func leafCounts(stacks map[string]int64) map[string]int64 {
	byLeaf := map[string]int64{}
	for s, c := range stacks {
		byLeaf[leafMethod(s)] += c
	}
	return byLeaf
}

func topLeaves(stacks map[string]int64, n int) []string {
	byLeaf := leafCounts(stacks)
	leaves := make([]string, 0, len(byLeaf))
	for l := range byLeaf {
		leaves = append(leaves, l)
	}
	sort.Slice(leaves, func(i, j int) bool {
		if byLeaf[leaves[i]] != byLeaf[leaves[j]] {
			return byLeaf[leaves[i]] > byLeaf[leaves[j]]
		}
		return leaves[i] < leaves[j]
	})
	return leaves[:min(n, len(leaves))]
}

// otlpRecord is one OTLP profile the collector wrote, flattened.
type otlpRecord struct {
	attrs  map[string]string
	typ    string
	start  uint64
	stacks map[string]int64
}

// readCollector reads the fileexporter's proto files: each ProfilesData after its 4-byte length.
func readCollector(t *testing.T, files []string) []otlpRecord {
	t.Helper()
	var out []otlpRecord
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		for len(b) >= 4 {
			n := binary.BigEndian.Uint32(b)
			if int(n) > len(b)-4 {
				break // a message still being written
			}
			var pd pb.ProfilesData
			if err := proto.Unmarshal(b[4:4+n], &pd); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			b = b[4+n:]
			d := pd.Dictionary
			for _, rp := range pd.ResourceProfiles {
				attrs := map[string]string{}
				for _, kv := range rp.Resource.Attributes {
					// The collector writes keys and string values through the dictionary's string
					// table (key_strindex, string_value_strindex) where the agent sent them inline.
					key := kv.Key
					if key == "" {
						key = d.StringTable[kv.KeyStrindex]
					}
					switch v := kv.Value.Value.(type) {
					case *commonpb.AnyValue_IntValue:
						attrs[key] = strconv.FormatInt(v.IntValue, 10)
					case *commonpb.AnyValue_StringValue:
						attrs[key] = v.StringValue
					case *commonpb.AnyValue_StringValueStrindex:
						attrs[key] = d.StringTable[v.StringValueStrindex]
					}
				}
				for _, sp := range rp.ScopeProfiles {
					for _, p := range sp.Profiles {
						r := otlpRecord{attrs: attrs, typ: d.StringTable[p.SampleType.TypeStrindex], start: p.TimeUnixNano, stacks: map[string]int64{}}
						for _, s := range p.Samples {
							locs := d.StackTable[s.StackIndex].LocationIndices
							var names []string
							for j := len(locs) - 1; j >= 0; j-- {
								for _, ln := range d.LocationTable[locs[j]].Lines {
									names = append(names, d.StringTable[d.FunctionTable[ln.FunctionIndex].SystemNameStrindex])
								}
							}
							for _, v := range s.Values {
								r.stacks[strings.Join(names, ";")] += v
							}
						}
						out = append(out, r)
					}
				}
			}
		}
	}
	return out
}

// TestAgentBackends runs the agent with an OpenTelemetry Collector, Grafana Pyroscope and a directory
// as sinks, for six windows of 10 s after every JVM has been seen, against JVMs of every JDK on the host,
// one in a pivot_root container placed in a Kubernetes pod's cgroup and one run by podman. Every window
// of every JVM must arrive in each backend with its labels and the agent's stacks; a JVM started
// during the run appears in the next window, one that exits disappears without an error; and each
// window's top-10 leaf methods of the busiest JVM equal a one-shot `jvmkit profile` of the same span.
func TestAgentBackends(t *testing.T) {
	testutil.MustHaveRoot(t)
	t.Parallel() // with TestAgentBackendDown: both mostly wait for windows
	jdks := testutil.JDKs(t)
	col := testutil.StartCollector(t)
	pyro := testutil.StartPyroscope(t)
	const (
		// 7 s: the busy JVM gives 550-700 samples a window (900-1000 in 10 s windows, all 9-10 of 10
		// in common), and the test takes 30 s less than with 10 s.
		window  = 7 * time.Second
		windows = 6 // a JVM arrives in the second or third and one leaves after it
		// A rate above the default: the workloads use little CPU, and the top-10 comparison needs
		// a few hundred samples per window.
		freq = 199
	)

	ours := &ourJVMs{pids: map[int]bool{}}
	type jvm struct {
		j       *testutil.JVM
		service string
		jdk     testutil.JDK
		podID   string
		pod     string
		runtime string // container.runtime: "cri-containerd" for the fake pod's
	}
	var jvms []*jvm
	start := func(jdk testutil.JDK, service string, opts testutil.JVMOptions) *jvm {
		opts.Main = "Demo"
		v := &jvm{service: service, jdk: jdk}
		v.j = testutil.StartJVM(t, jdk, opts)
		ours.add(v.j.PID)
		jvms = append(jvms, v)
		return v
	}
	for i, jdk := range jdks {
		opts := testutil.JVMOptions{Env: []string{fmt.Sprintf("OTEL_SERVICE_NAME=shop-%d", jdk.Feature)}}
		if i == 0 {
			opts.Args = []string{"100"} // busier: the top-10 comparison wants samples
		}
		start(jdk, fmt.Sprintf("shop-%d", jdk.Feature), opts)
	}
	// Two real containers from the trixie root filesystem's JDKs. One entered by pivot_root (own pid and
	// mount namespaces and root) and put in a Kubernetes pod's cgroup, its service name in a system
	// property; one run by podman with runc, its service name in its environment and its id as podman
	// gives it.
	var rootJDKs []testutil.JDK
	for _, jdk := range jdks {
		if jdk.Root != "" {
			rootJDKs = append(rootJDKs, jdk)
		}
	}
	if len(rootJDKs) == 0 {
		testutil.Skipf(t, "the container JVMs need a JDK of the trixie root filesystem (scripts/setup builds it)")
	}
	place, podID, pod := fakePod(t)
	c := start(rootJDKs[len(rootJDKs)-1], "cart", testutil.JVMOptions{Container: testutil.PivotRoot, JVMArgs: []string{"-Dotel.service.name=cart"}})
	place(c.j.PID)
	c.podID, c.pod, c.runtime = podID, pod, "cri-containerd"
	pc := start(rootJDKs[0], "podcart", testutil.JVMOptions{Container: testutil.Podman, Env: []string{"OTEL_SERVICE_NAME=podcart"}})
	pc.podID, pc.runtime = pc.j.ContainerID(t), "libpod"

	tp := newTap()
	dir := t.TempDir()
	agent, err := fleet.New(fleet.Options{
		Window: window, Frequency: freq, Host: "test-node", Select: ours.selects, Version: "test",
		Sinks:  []fleet.Sink{&fleet.OTLP{Endpoint: col.URL, Version: "test"}, &fleet.Pyroscope{URL: pyro.URL}, &fleet.Dir{Path: dir}, tp},
		Logger: slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	var runErr error
	ran := make(chan struct{})
	go func() { runErr = agent.Run(ctx); close(ran) }()
	defer func() { stop(); <-ran }()

	batches := tp.waitFor(t, 3*window, "a window from every JVM", func(b [][]*fleet.Window) bool {
		return len(b) >= 1 && len(pidsIn(b[len(b)-1])) == len(jvms)
	})
	first := len(batches) // the index of the first of the six windows
	cutAt := batches[len(batches)-1][0].End

	// One-shot profiles of the busy JVM, one per window, by two runners taking turns: a one-shot
	// profile opens the JVM (a second or so) before it samples, which the other runner's window
	// leaves time for. Each starts when its window does, at the agent's cut.
	type shot struct {
		stacks map[string]int64
		err    error
	}
	shots := make([]shot, windows)
	jvmkit := testutil.BuildTool(t, "cmd/jvmkit")
	var shooters sync.WaitGroup
	for r := range 2 {
		shooters.Go(func() {
			for k := r; k < windows; k += 2 {
				<-time.After(time.Until(cutAt.Add(time.Duration(k) * window))) // a wall-clock start, not a wait for an event
				s, err := oneShot(jvmkit, jvms[0].j.PID, window, freq)
				shots[k] = shot{s, err}
			}
		})
	}

	// A JVM started now is in the window after the one it started in.
	late := start(jdks[len(jdks)-1], "late", testutil.JVMOptions{Env: []string{"OTEL_SERVICE_NAME=late"}})
	ready := time.Now()
	var lateFirst *fleet.Window
	tp.waitFor(t, 3*window, "the late JVM's window", func(b [][]*fleet.Window) bool {
		for _, ws := range b {
			if w := pidsIn(ws)[late.j.PID]; w != nil {
				lateFirst = w
				return true
			}
		}
		return false
	})
	// It was ready during some window [s, s+window): the next one starts at s+window <= ready+window,
	// and its sampling once the discovery at that cut has opened it (a second or two on a loaded
	// 2-core machine).
	if lateFirst.Start.After(ready.Add(window + 5*time.Second)) {
		t.Errorf("the late JVM, ready at %v, first appears in the window starting at %v: not the next window", ready, lateFirst.Start)
	}

	// A JVM that exits disappears, without an error.
	gone := jvms[1] // not jvms[0]: the one-shot profiles sample that one
	gone.j.Stop()
	stoppedAt := len(tp.snapshot())
	tp.waitFor(t, (windows+2)*window, "six windows", func(b [][]*fleet.Window) bool { return len(b) >= first+windows })
	shooters.Wait()
	stop()
	<-ran
	if runErr != nil {
		t.Fatalf("Run: %v", runErr)
	}
	batches = tp.snapshot()
	for i, b := range batches {
		if i > stoppedAt && pidsIn(b)[gone.j.PID] != nil {
			t.Errorf("the JVM that exited in window %d is in window %d", stoppedAt, i)
		}
	}
	var metrics bytes.Buffer
	_ = agent.WriteMetrics(&metrics)
	for _, bad := range []string{"jvmkit_agent_jvms_skipped_total{", "jvmkit_agent_errors_total{"} {
		if strings.Contains(metrics.String(), bad) {
			t.Errorf("metrics show %s:\n%s", bad, metrics.String())
		}
	}
	if !strings.Contains(metrics.String(), `jvmkit_agent_sampling{mode="per-cpu"} 1`) {
		t.Errorf("the agent did not sample per CPU (see its log for why):\n%s", metrics.String())
	}
	for line := range strings.Lines(metrics.String()) {
		if strings.HasPrefix(line, "jvmkit_agent_windows_dropped_total{") && !strings.HasSuffix(strings.TrimSpace(line), " 0") {
			t.Errorf("metrics show windows dropped: %s", line)
		}
	}
	// Every JVM that ran through the six windows is in each of them.
	for k := first; k < first+windows; k++ {
		in := pidsIn(batches[k])
		for _, v := range jvms {
			if v != gone && v != late && in[v.j.PID] == nil {
				t.Errorf("window %d has no profile of pid %d (%s)", k, v.j.PID, v.service)
			}
		}
	}

	// Every window of every JVM arrived in the collector, labelled, with the stacks the agent had.
	byWindow := map[string]otlpRecord{}
	deadline := time.Now().Add(30 * time.Second)
	var recs []otlpRecord
	total := 0
	for _, b := range batches {
		total += len(b)
	}
	for {
		recs = readCollector(t, col.CollectorFiles())
		if len(recs) >= 2*total || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond) // polls the collector's file
	}
	for _, r := range recs {
		if r.typ == "cpu" {
			key := r.attrs["process.pid"] + "@" + strconv.FormatUint(r.start, 10)
			if _, dup := byWindow[key]; dup {
				t.Errorf("window %s twice in the collector", key)
			}
			byWindow[key] = r
		}
	}
	want := map[int]*jvm{}
	for _, v := range jvms {
		want[v.j.PID] = v
	}
	for i, b := range batches {
		for _, w := range b {
			v := want[w.Target.PID]
			p, err := w.Profile()
			if err != nil {
				t.Fatal(err)
			}
			ref := folded(p)
			for s, n := range ref {
				ref[s] = n * p.Period
			}
			r, ok := byWindow[strconv.Itoa(w.Target.PID)+"@"+strconv.FormatInt(w.Start.UnixNano(), 10)]
			if !ok {
				t.Errorf("window %d of pid %d (%s) not in the collector", i, w.Target.PID, v.service)
			} else {
				wantAttrs := map[string]string{"service.name": v.service, "host.name": "test-node", "process.pid": strconv.Itoa(v.j.PID), "process.runtime.version": v.jdk.Version}
				if v.podID != "" {
					wantAttrs["container.id"], wantAttrs["container.runtime"] = v.podID, v.runtime
				}
				if v.pod != "" {
					wantAttrs["k8s.pod.uid"] = v.pod
				}
				for k, val := range wantAttrs {
					if r.attrs[k] != val {
						t.Errorf("pid %d window %d: %s = %q, want %q", w.Target.PID, i, k, r.attrs[k], val)
					}
				}
				if !mapsEqual(ref, r.stacks) {
					t.Errorf("pid %d window %d: the collector's stacks differ from the agent's (%d vs %d stacks)", w.Target.PID, i, len(r.stacks), len(ref))
				}
			}
			// Pyroscope has it too: its CPU total for the JVM's series over the window's span, and each
			// leaf frame's self time (pprof: the first line of the first location, by its function's
			// name, which is what Pyroscope shows) as the agent sent it.
			var sum int64
			for _, n := range ref {
				sum += n
			}
			got, self := pyroscopeTotal(t, pyro.URL, map[string]string{"service_name": v.service, "process_pid": strconv.Itoa(w.Target.PID)}, w.Start, w.End)
			if got != sum {
				t.Errorf("pid %d window %d: Pyroscope has %d ns of CPU, the agent sent %d", w.Target.PID, i, got, sum)
			}
			leaves := map[string]int64{}
			for _, s := range p.Sample {
				if len(s.Location) > 0 && len(s.Location[0].Line) > 0 {
					leaves[s.Location[0].Line[0].Function.Name] += s.Value[0] * p.Period
				}
			}
			for leaf, n := range leaves {
				if self[leaf] != n {
					t.Errorf("pid %d window %d: Pyroscope has %d ns in %q, the agent sent %d", w.Target.PID, i, self[leaf], leaf, n)
				}
			}
		}
	}

	// The directory has one file per window.
	files, _ := filepath.Glob(filepath.Join(dir, "jvmkit-*.pb.gz"))
	if len(files) != total {
		t.Errorf("%d files in the directory, %d windows", len(files), total)
	}

	// Each window's top-10 leaf methods equal its one-shot profile's in at least 8 of 10.
	for k := range windows {
		sh := shots[k]
		if sh.err != nil {
			t.Fatal(sh.err)
		}
		// The agent's ticker does not drift: its k-th window from cutAt starts k windows on, give or
		// take the ticker's lateness.
		at := cutAt.Add(time.Duration(k) * window)
		var x *fleet.Window
		for _, b := range batches {
			if w := pidsIn(b)[jvms[0].j.PID]; w != nil && w.Start.Sub(at).Abs() < window/4 {
				x = w
			}
		}
		if x == nil {
			t.Errorf("no agent window of pid %d starts near %v", jvms[0].j.PID, at)
			continue
		}
		p, err := x.Profile()
		if err != nil {
			t.Fatal(err)
		}
		agentStacks := folded(p)
		compareLeaves(t, fmt.Sprintf("window %d (%s-%s)", k, x.Start.Format("15:04:05.000"), x.End.Format("15:04:05.000")), agentStacks, sh.stacks)
	}
}

// compareLeaves requires the top-10 leaf methods of the agent's window and of a one-shot profile of
// the same span to have at least 8 in common. With a few hundred samples ranks 8 to 10 are a few
// samples each: below 300 samples on either side the comparison is of the top 5 (>= 4 in common),
// which sampling noise does not reorder; below 100 (a machine so loaded that the JVM hardly runs) it
// cannot tell and only logs.
func compareLeaves(t *testing.T, what string, agentStacks, shotStacks map[string]int64) {
	t.Helper()
	var agentN, shotN int64
	for _, n := range agentStacks {
		agentN += n
	}
	for _, n := range shotStacks {
		shotN += n
	}
	common := func(n int) (int, []string, []string) {
		a, o := topLeaves(agentStacks, n), topLeaves(shotStacks, n)
		c := 0
		for _, l := range a {
			if slices.Contains(o, l) {
				c++
			}
		}
		return c, a, o
	}
	c10, a, o := common(10)
	// Leaves ranked 8th to 12th are often a few samples apart: one of the agent's top 10 that the one-shot
	// profile counts as often as its own 10th, within the samples' error, is as good as in its top 10.
	al, ol := leafCounts(agentStacks), leafCounts(shotStacks)
	tied := realapps.TiedOverlap(al, ol, 10, func(k string) float64 {
		return min(0.5, 1/math.Sqrt(float64(max(1, min(al[k], ol[k])))))
	})
	t.Logf("%s: agent %d samples, one-shot %d; top-10 leaf methods in common: %d (%d with ties)\n  agent    %v\n  one-shot %v", what, agentN, shotN, c10, tied, a, o)
	switch n := min(agentN, shotN); {
	case n < 100:
		t.Logf("%s: only %d samples on one side: the leaf comparison cannot tell anything; not judged", what, n)
	case n < 300:
		if c5, a5, o5 := common(5); c5 < min(4, len(a5), len(o5)) {
			t.Errorf("%s: top-5 leaf methods (%d samples): %d of 5 in common, want >= 4", what, n, c5)
		}
	case tied < min(8, len(a), len(o)):
		t.Errorf("%s: top-10 leaf methods: %d of 10 in common (%d counting ties within the sampling error), want >= 8", what, c10, tied)
	}
}

func mapsEqual(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// metricsOf reads the agent's Prometheus text from url into name{labels} -> value.
func metricsOf(url string) (map[string]float64, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err == nil {
			out[line[:i]] = v
		}
	}
	return out, sc.Err()
}

// TestAgentBackendDown runs the jvmkit binary's agent against a collector that goes away for three
// windows and comes back: the agent lives, stays under its memory cap, counts what it dropped, and the
// windows after the restart arrive; SIGTERM then sends the last, partial window.
func TestAgentBackendDown(t *testing.T) {
	testutil.MustHaveRoot(t)
	t.Parallel() // with TestAgentBackends
	jdk := testutil.JDK17(t)
	col := testutil.StartCollector(t)
	bin := testutil.BuildTool(t, "cmd/jvmkit")
	j := testutil.StartJVM(t, jdk, testutil.JVMOptions{Main: "Busy", Env: []string{"OTEL_SERVICE_NAME=down"}}) // samples in every window
	const window = 2 * time.Second
	metricsAddr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	var stderr testutil.SyncBuffer
	// --per-thread: the other tests run the agent's default, per-CPU sampling.
	cmd := exec.Command(bin, "agent", "--per-thread", "--otlp", col.URL, "--window", window.String(), "-F", "499", "-p", strconv.Itoa(j.PID),
		"--buffer-size", "4KiB", "--memory-limit", "100MiB", "--metrics-addr", metricsAddr, "--export-timeout", "2s")
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &unix.SysProcAttr{Pdeathsig: unix.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		t.Logf("agent stderr:\n%s", stderr.String())
	})
	murl := "http://" + metricsAddr + "/metrics"
	wait := func(what string, ok func(m map[string]float64) bool) map[string]float64 {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for {
			m, err := metricsOf(murl)
			if err == nil && ok(m) {
				return m
			}
			select {
			case err := <-exited:
				t.Fatalf("the agent exited (%v) waiting for %s", err, what)
			case <-time.After(100 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("after a minute: no %s (metrics: %v, err %v)", what, m, err)
			}
		}
	}
	const sent, dropped, errs, windows, rss = `jvmkit_agent_windows_sent_total{sink="otlp"}`, `jvmkit_agent_windows_dropped_total{sink="otlp"}`,
		`jvmkit_agent_export_errors_total{sink="otlp"}`, "jvmkit_agent_windows_total", "jvmkit_agent_resident_bytes"
	wait("a window sent", func(m map[string]float64) bool { return m[sent] >= 1 })
	maxRSS := 0.0
	col.Stop()
	down := wait("a window cut after the collector stopped", func(m map[string]float64) bool { return true })
	wait("three windows with the collector down", func(m map[string]float64) bool {
		maxRSS = max(maxRSS, m[rss])
		return m[windows] >= down[windows]+3 && m[errs] >= 1 && m[dropped] >= 1 // a 4 KiB buffer holds about one window
	})
	restart := time.Now()
	col.Start()
	var lastStart uint64
	m := wait("a window cut after the restart in the collector", func(m map[string]float64) bool {
		maxRSS = max(maxRSS, m[rss])
		for _, r := range readCollector(t, col.CollectorFiles()) {
			lastStart = max(lastStart, r.start)
		}
		return lastStart >= uint64(restart.UnixNano())
	})
	t.Logf("sent %v, dropped %v, export errors %v, max RSS %.1f MiB", m[sent], m[dropped], m[errs], maxRSS/(1<<20))
	if m[`jvmkit_agent_sampling{mode="per-thread"}`] != 1 {
		t.Errorf("--per-thread: the metrics do not say the agent samples per thread")
	}
	if maxRSS == 0 || maxRSS > 100<<20 {
		t.Errorf("agent RSS %.1f MiB: want under the 100 MiB cap", maxRSS/(1<<20))
	}

	// SIGTERM: the last, partial window goes out, and the agent exits 0.
	if err := cmd.Process.Signal(unix.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("agent after SIGTERM: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the agent did not exit within 30 s of SIGTERM")
	}
	var final uint64
	deadline := time.Now().Add(10 * time.Second)
	for final <= lastStart && time.Now().Before(deadline) {
		for _, r := range readCollector(t, col.CollectorFiles()) {
			final = max(final, r.start)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if final <= lastStart {
		t.Errorf("the window cut at SIGTERM did not arrive")
	}
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
