package fleet

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/pprof/profile"
	collpb "go.opentelemetry.io/proto/slim/otlp/collector/profiles/v1development"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/jvmkit/jvmkit/flame"
	"github.com/jvmkit/jvmkit/unwind"
)

func TestServiceName(t *testing.T) {
	for _, tc := range []struct {
		name       string
		opts, env  []string
		main       string
		want, from string
	}{
		{"property", []string{"-Dotel.service.name=cart"}, []string{"OTEL_SERVICE_NAME=shop"}, "Main", "cart", "otel.service.name"},
		{"last property wins", []string{"-Dotel.service.name=a", "-Dotel.service.name=b"}, nil, "Main", "b", "otel.service.name"},
		{"tool options", nil, []string{"JAVA_TOOL_OPTIONS=-Xmx1g -Dotel.service.name=billing"}, "Main", "billing", "otel.service.name"},
		{"env", nil, []string{"OTEL_SERVICE_NAME= shop "}, "Main", "shop", "OTEL_SERVICE_NAME"},
		{"resource property", []string{"-Dotel.resource.attributes=team=x,service.name=pay%20ments"}, nil, "Main", "pay ments", "otel.resource.attributes"},
		{"resource env", nil, []string{"OTEL_RESOURCE_ATTRIBUTES=service.name=search,deployment.environment=prod"}, "Main", "search", "OTEL_RESOURCE_ATTRIBUTES"},
		{"empty env ignored", nil, []string{"OTEL_SERVICE_NAME="}, "com.example.App", "com.example.App", "main class"},
		{"jar", nil, nil, "/opt/app/orders-1.2.jar", "orders-1.2", "jar"},
		{"nothing", nil, nil, "", "java", "default"},
	} {
		name, from := ServiceName(tc.opts, tc.env, tc.main)
		if name != tc.want || from != tc.from {
			t.Errorf("%s: ServiceName = %q from %q, want %q from %q", tc.name, name, from, tc.want, tc.from)
		}
	}
}

func FuzzServiceName(f *testing.F) {
	f.Add("-Dotel.service.name=x", "OTEL_RESOURCE_ATTRIBUTES=service.name=%zz", "app.jar")
	f.Fuzz(func(t *testing.T, opt, env, main string) {
		name, from := ServiceName([]string{opt}, []string{env}, main)
		if name == "" || from == "" {
			t.Fatalf("ServiceName(%q, %q, %q) = %q, %q", opt, env, main, name, from)
		}
	})
}

func TestLabels(t *testing.T) {
	tg := Target{PID: 42, Service: "shop", Host: "node-1", JDK: "17.0.15", MainClass: "Demo", ContainerID: "abc", PodUID: "u-1"}
	want := [][2]string{{"service_name", "shop"}, {"host_name", "node-1"}, {"process_pid", "42"},
		{"process_runtime_version", "17.0.15"}, {"process_command", "Demo"}, {"container_id", "abc"}, {"k8s_pod_uid", "u-1"}}
	if diff := cmp.Diff(want, tg.Labels()); diff != "" {
		t.Error(diff)
	}
}

// testWindow makes a window from stacks given root first, as the agent would.
func testWindow(t *testing.T, tg Target, stacks map[string]int64) *Window {
	t.Helper()
	s := newStacks(100, time.Unix(1700000000, 0))
	for k, n := range stacks {
		var st unwind.Stack
		frames := strings.Split(k, ";")
		for i := len(frames) - 1; i >= 0; i-- {
			typ := unwind.Interpreted
			name := frames[i]
			if n, ok := strings.CutSuffix(name, "_[j]"); ok {
				name, typ = n, unwind.Compiled
			}
			st.Frames = append(st.Frames, unwind.Frame{Name: name, Type: typ})
		}
		st.Complete = true
		for range n {
			s.add(&st)
		}
	}
	end := s.start.Add(5 * time.Second)
	b, err := buildPprof(tg, s.folded(), s.start, end, 100)
	if err != nil {
		t.Fatal(err)
	}
	return &Window{Target: tg, Start: s.start, End: end, Samples: s.samples, Pprof: b}
}

func TestWindowPprof(t *testing.T) {
	in := map[string]int64{"main;work;leaf_[j]": 5, "main;work": 2, "main;idle": 1}
	w := testWindow(t, Target{PID: 7, Service: "svc"}, in)
	p, err := w.Profile()
	if err != nil {
		t.Fatal(err)
	}
	// The same profile as `jvmkit profile --format pprof` makes of the same stacks, plus cpu time.
	f := &flame.Folded{}
	for k, n := range in {
		f.Stacks = append(f.Stacks, flame.Stack{Frames: strings.Split(k, ";"), Count: n})
	}
	ref, err := flame.Pprof(f, flame.PprofOptions{SampleType: "samples", Unit: "count"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(folds(ref, 0), folds(p, 0)); diff != "" {
		t.Errorf("samples differ from flame.Pprof's (-want +got):\n%s", diff)
	}
	cpu := folds(p, 1)
	if cpu["main;work;leaf_[j]"] != 5*int64(10*time.Millisecond) {
		t.Errorf("cpu nanoseconds: %v", cpu)
	}
	if p.Period != int64(10*time.Millisecond) || p.DurationNanos != int64(5*time.Second) || !slices.Contains(p.Comments, "service_name=svc") {
		t.Errorf("period %d duration %d comments %q", p.Period, p.DurationNanos, p.Comments)
	}
}

// folds sums a pprof profile's value i by stack, root first, frames by SystemName (the label).
func folds(p *profile.Profile, i int) map[string]int64 {
	out := map[string]int64{}
	for _, s := range p.Sample {
		var names []string
		for k := len(s.Location) - 1; k >= 0; k-- {
			for _, l := range s.Location[k].Line {
				names = append(names, l.Function.SystemName)
			}
		}
		out[strings.Join(names, ";")] += s.Value[i]
	}
	return out
}

func TestStacksBounded(t *testing.T) {
	s := newStacks(3, time.Now())
	for i := range 10 {
		st := unwind.Stack{Frames: []unwind.Frame{{Name: "f" + string(rune('a'+i))}}, Complete: true}
		s.add(&st)
	}
	f := s.folded()
	if len(f.Stacks) != 4 || s.truncated != 7 {
		t.Fatalf("%d stacks, %d truncated: %+v", len(f.Stacks), s.truncated, f.Stacks)
	}
}

// TestToOTLP converts two windows and reads the request back: every stack and value survives, the
// dictionary holds each function once, index 0 of each table is its zero value.
func TestToOTLP(t *testing.T) {
	w1 := testWindow(t, Target{PID: 1, Service: "a", Host: "h"}, map[string]int64{"main;work;leaf_[j]": 3, "main;idle": 1})
	w2 := testWindow(t, Target{PID: 2, Service: "b", Host: "h", ContainerID: "c1"}, map[string]int64{"main;work;leaf_[j]": 4})
	var in []OTLPProfile
	for _, w := range []*Window{w1, w2} {
		p, err := w.Profile()
		if err != nil {
			t.Fatal(err)
		}
		in = append(in, OTLPProfile{Target: w.Target, Profile: p})
	}
	req, err := ToOTLP(in, "test")
	if err != nil {
		t.Fatal(err)
	}
	b, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	var got collpb.ExportProfilesServiceRequest
	if err := proto.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	d := got.Dictionary
	if d.StringTable[0] != "" || len(d.FunctionTable[0].String()) != 0 || len(d.StackTable[0].LocationIndices) != 0 || len(d.LinkTable[0].TraceId) != 16 {
		t.Fatal("dictionary tables must start with their zero value")
	}
	names := map[string]int{}
	for _, f := range d.FunctionTable[1:] {
		names[d.StringTable[f.SystemNameStrindex]]++
	}
	for n, c := range names {
		if c != 1 {
			t.Errorf("function %q %d times in the shared dictionary", n, c)
		}
	}
	if len(got.ResourceProfiles) != 2 {
		t.Fatalf("%d resource profiles", len(got.ResourceProfiles))
	}
	want := []map[string]int64{{"main;work;leaf_[j]": 3, "main;idle": 1}, {"main;work;leaf_[j]": 4}}
	for i, rp := range got.ResourceProfiles {
		attrs := map[string]string{}
		for _, kv := range rp.Resource.Attributes {
			attrs[kv.Key] = kv.Value.GetStringValue()
		}
		if attrs["service.name"] != in[i].Target.Service || attrs["host.name"] != "h" {
			t.Errorf("resource %d: %v", i, attrs)
		}
		profiles := rp.ScopeProfiles[0].Profiles
		if len(profiles) != 2 {
			t.Fatalf("%d profiles, want one per sample type", len(profiles))
		}
		for k, op := range profiles {
			typ := d.StringTable[op.SampleType.TypeStrindex]
			if typ != []string{"samples", "cpu"}[k] || op.Period != int64(10*time.Millisecond) || op.DurationNano != uint64(5*time.Second) || len(op.ProfileId) != 16 {
				t.Errorf("profile %d/%d: type %s period %d duration %d", i, k, typ, op.Period, op.DurationNano)
			}
			stacks := map[string]int64{}
			for _, s := range op.Samples {
				locs := d.StackTable[s.StackIndex].LocationIndices
				var names []string
				for j := len(locs) - 1; j >= 0; j-- {
					for _, ln := range d.LocationTable[locs[j]].Lines {
						names = append(names, d.StringTable[d.FunctionTable[ln.FunctionIndex].SystemNameStrindex])
					}
				}
				stacks[strings.Join(names, ";")] += s.Values[0]
			}
			scale := int64(1)
			if typ == "cpu" {
				scale = int64(10 * time.Millisecond)
			}
			exp := map[string]int64{}
			for s, n := range want[i] {
				exp[s] = n * scale
			}
			if diff := cmp.Diff(exp, stacks); diff != "" {
				t.Errorf("profile %d/%s stacks (-want +got):\n%s", i, typ, diff)
			}
		}
	}
}

func TestPushRequest(t *testing.T) {
	w := testWindow(t, Target{PID: 9, Service: "shop", Host: "n"}, map[string]int64{"main": 1})
	b := PushRequest([]*Window{w})
	// series -> labels (name, value) and samples (raw_profile, ID)
	series := fields(t, b)[1]
	if len(series) != 1 {
		t.Fatalf("%d series", len(series))
	}
	sf := fields(t, series[0])
	labels := map[string]string{}
	for _, l := range sf[1] {
		lf := fields(t, l)
		labels[string(lf[1][0])] = string(lf[2][0])
	}
	if labels["__name__"] != "process_cpu" || labels["service_name"] != "shop" || labels["process_pid"] != "9" {
		t.Errorf("labels %v", labels)
	}
	sample := fields(t, sf[2][0])
	if !bytes.Equal(sample[1][0], w.Pprof) || len(sample[2][0]) != 36 {
		t.Errorf("sample: %d bytes of profile, id %q", len(sample[1][0]), sample[2][0])
	}
}

// fields splits a message into its length-delimited fields by number.
func fields(t *testing.T, b []byte) map[protowire.Number][][]byte {
	t.Helper()
	out := map[protowire.Number][][]byte{}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || typ != protowire.BytesType {
			t.Fatalf("bad tag")
		}
		b = b[n:]
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			t.Fatalf("bad bytes")
		}
		out[num] = append(out[num], v)
		b = b[n:]
	}
	return out
}

// flakySink fails its first n exports, then records what it gets.
type flakySink struct {
	fail atomic.Int64
	got  atomic.Int64
	err  error
}

func (f *flakySink) Name() string { return "flaky" }
func (f *flakySink) Export(_ context.Context, ws []*Window) error {
	if f.fail.Add(-1) >= 0 {
		return f.err
	}
	f.got.Add(int64(len(ws)))
	return nil
}

func TestQueueDropsOldestAndRetries(t *testing.T) {
	st := &sinkStats{name: "flaky"}
	fs := &flakySink{err: errors.New("down")}
	fs.fail.Store(1 << 30)
	q := newQueue(fs, 250, time.Second, [2]time.Duration{time.Millisecond, 4 * time.Millisecond}, discard(), st)
	w := &Window{Pprof: make([]byte, 100)}
	for range 5 {
		q.push([]*Window{w, w}[:1])
	}
	if st.dropped.Load() != 3 || st.buffered.Load() != 200 {
		t.Fatalf("dropped %d, buffered %d; want 3 and 200", st.dropped.Load(), st.buffered.Load())
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { q.run(stop); close(done) }()
	deadline := time.Now().Add(10 * time.Second)
	for st.errors.Load() < 3 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	fs.fail.Store(0) // the backend is back
	for fs.got.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	close(stop)
	<-done
	if fs.got.Load() != 2 || st.sent.Load() != 2 || st.buffered.Load() != 0 {
		t.Fatalf("got %d, sent %d, buffered %d", fs.got.Load(), st.sent.Load(), st.buffered.Load())
	}
}

func TestQueueRejected(t *testing.T) {
	st := &sinkStats{name: "flaky"}
	fs := &flakySink{err: ErrRejected}
	fs.fail.Store(1)
	q := newQueue(fs, 1000, time.Second, [2]time.Duration{time.Hour, time.Hour}, discard(), st)
	q.push([]*Window{{Pprof: []byte{1}}})
	q.drain(context.Background())
	if st.rejected.Load() != 1 || st.dropped.Load() != 0 || fs.got.Load() != 0 {
		t.Fatalf("rejected %d dropped %d got %d", st.rejected.Load(), st.dropped.Load(), fs.got.Load())
	}
}

func TestDirRotates(t *testing.T) {
	dir := t.TempDir()
	d := &Dir{Path: filepath.Join(dir, "p"), MaxBytes: 250}
	for i := range 5 {
		w := &Window{Target: Target{PID: 1, Service: "a/b c"}, End: time.Unix(int64(1700000000+i), 0), Pprof: make([]byte, 100)}
		if err := d.Export(context.Background(), []*Window{w}); err != nil {
			t.Fatal(err)
		}
	}
	ents, _ := os.ReadDir(d.Path)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	want := []string{"jvmkit-20231114T221323.000Z-a_b_c-1.pb.gz", "jvmkit-20231114T221324.000Z-a_b_c-1.pb.gz"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	// A link in place of the directory is refused, and nothing is written through it.
	link := filepath.Join(dir, "link")
	if err := os.Symlink(t.TempDir(), link); err != nil {
		t.Fatal(err)
	}
	err := (&Dir{Path: link}).Export(context.Background(), []*Window{{Pprof: []byte{1}}})
	if !errors.Is(err, ErrRejected) {
		t.Errorf("export into a link: %v", err)
	}
	// A directory every user can write in (anyone could swap the files for links, or fill it so that
	// rotation removes the profiles) is refused, and so is one below it.
	open := filepath.Join(dir, "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{open, filepath.Join(open, "sub")} {
		if p != open {
			if err := os.Mkdir(p, 0o700); err != nil {
				t.Fatal(err)
			}
		}
		err := (&Dir{Path: p}).Export(context.Background(), []*Window{{Pprof: []byte{1}}})
		if !errors.Is(err, ErrRejected) {
			t.Errorf("export into %s: %v", p, err)
		}
		if ents, _ := os.ReadDir(p); len(ents) > 1 || len(ents) == 1 && ents[0].Name() != "sub" {
			t.Errorf("%s holds %v", p, ents)
		}
	}
}
