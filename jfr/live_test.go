//go:build linux

package jfr

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/jvmkit/jvmkit/internal/testutil"
	"github.com/jvmkit/jvmkit/jcmd"
)

func TestMain(m *testing.M) { testutil.Main(m) }

// The live tests record real JVMs on every JDK found and read the recordings with the JDK's own
// tool as the oracle: the newest JDK's jfr (its values are the ones we print), and the recording
// JDK's own jfr, whose known differences (see doc.go) jdkCompat allows for.

// oracleJDK is the newest JDK with a jfr tool.
func oracleJDK(t *testing.T) testutil.JDK {
	t.Helper()
	var best testutil.JDK
	for _, j := range testutil.JDKs(t) {
		if _, err := os.Stat(j.Bin("jfr")); err == nil && j.Feature >= best.Feature {
			best = j
		}
	}
	if best.Home == "" {
		testutil.Skipf(t, "no JDK with bin/jfr")
	}
	return best
}

func dial(t *testing.T, pid int) *jcmd.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := jcmd.Dial(ctx, pid, nil)
	if err != nil {
		t.Fatalf("attach to %d: %v", pid, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// dumpUntil dumps the named recording to path until ready says the recording has what the test
// needs, or fails at the deadline. Each dump of a running recording also starts a new chunk.
func dumpUntil(t *testing.T, c *jcmd.Client, name, path string, gcRoots bool, deadline time.Duration, ready func(*Recording) bool) {
	t.Helper()
	end := time.Now().Add(deadline)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		d := jcmd.JFRDump{Name: name, Filename: path}
		if gcRoots {
			d.PathToGCRoots = jcmd.Bool(true)
		}
		_, err := c.DumpJFR(ctx, d)
		cancel()
		if err != nil {
			t.Fatalf("JFR.dump %s: %v", name, err)
		}
		r, err := Open(path)
		if err != nil {
			t.Fatalf("read dump %s: %v", path, err)
		}
		ok := ready(r)
		var last strings.Builder
		if !ok && time.Now().After(end) {
			groups, n, _ := Leaks(r)
			fmt.Fprintf(&last, "%d old object samples", n)
			for i, g := range groups[:min(len(groups), 3)] {
				fmt.Fprintf(&last, "\n#%d %d: %s", i+1, g.Count, g.key)
			}
			for _, tc := range r.Summary().Types[:10] {
				fmt.Fprintf(&last, "\n%s %d", tc.Name, tc.Count)
			}
		}
		r.Close()
		if ok {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("recording %s: not ready after %v; the last dump has %s", name, deadline, last.String())
		}
		time.Sleep(500 * time.Millisecond) // poll interval: the JVM records at its own pace
	}
}

func hasEvents(min map[string]int64) func(*Recording) bool {
	return func(r *Recording) bool {
		for name, n := range min {
			if r.count(name) < n {
				return false
			}
		}
		return true
	}
}

type recording struct {
	name, path string
	jdk        testutil.JDK
	leak       bool // a Leak workload's dump: its first chain must be the leak
	minChunks  int
}

// recordDemo records the Demo workload twice at once: "default" from the start, "profile" started
// later (which starts a new chunk in both), so that the default recording has several chunks.
func recordDemo(t *testing.T, jdk testutil.JDK, dir string) []recording {
	j := testutil.StartJVM(t, jdk, testutil.JVMOptions{Main: "Demo", JVMArgs: []string{"-Xmx128m"}})
	c := dial(t, j.PID)
	ctx := context.Background()
	if _, err := c.StartJFR(ctx, jcmd.JFRStart{Name: "def", Settings: []string{"default"}}); err != nil {
		t.Fatal(err)
	}
	def := filepath.Join(dir, "demo-default.jfr")
	dumpUntil(t, c, "def", def, false, 60*time.Second, hasEvents(map[string]int64{"jdk.ExecutionSample": 10}))
	if _, err := c.StartJFR(ctx, jcmd.JFRStart{Name: "prof", Settings: []string{"profile"}}); err != nil {
		t.Fatal(err)
	}
	prof := filepath.Join(dir, "demo-profile.jfr")
	alloc := "jdk.ObjectAllocationSample"
	if jdk.Feature < 16 {
		alloc = "jdk.ObjectAllocationInNewTLAB"
	}
	dumpUntil(t, c, "prof", prof, false, 60*time.Second, hasEvents(map[string]int64{"jdk.ExecutionSample": 20, alloc: 5}))
	dumpUntil(t, c, "def", def, false, 60*time.Second, hasEvents(map[string]int64{"jdk.ExecutionSample": 20}))
	if jdk.Feature >= 14 {
		checkInProgress(t, c)
	}
	j.Stop() // the checks need the CPU more
	return []recording{
		{name: "demo-default", path: def, jdk: jdk, minChunks: 2},
		{name: "demo-profile", path: prof, jdk: jdk, minChunks: 1},
	}
}

// checkInProgress reads the chunk the JVM is writing in its repository, as after a crash: the chunk
// is unfinished, and its events up to the last flush are read (JDK 14+ writes metadata at the start
// of a chunk and constants at each flush, once a second).
func checkInProgress(t *testing.T, c *jcmd.Client) {
	t.Helper()
	out, err := c.ConfigureJFR(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var repo string
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "Repository path:"); ok {
			repo = strings.TrimSpace(v)
		}
	}
	// A chunk the JVM has just begun (a recording started, a rotation) holds no flushed events yet:
	// copy the newest chunk again until one read from it has some (the JVM flushes once a second).
	var (
		n      int
		b      bytes.Buffer
		newest string
		data   []byte
	)
	deadline := time.Now().Add(15 * time.Second)
	for {
		files, _ := filepath.Glob(filepath.Join(repo, "*.jfr"))
		newest = ""
		var newestTime time.Time
		for _, f := range files {
			if fi, err := os.Stat(f); err == nil && fi.ModTime().After(newestTime) {
				newest, newestTime = f, fi.ModTime()
			}
		}
		if newest == "" {
			t.Fatalf("no chunk in the repository %q (JFR.configure said %q)", repo, out)
		}
		data, err = os.ReadFile(newest)
		if err != nil {
			t.Fatal(err)
		}
		r, perr := Parse(data)
		if perr == nil && time.Now().Before(deadline) {
			time.Sleep(time.Second) // a chunk finished as we chose it (the JVM rotated): choose again
			continue
		}
		var fe *FormatError
		if !errors.As(perr, &fe) || !strings.Contains(perr.Error(), "unfinished") {
			t.Fatalf("chunk being written (%s, %d bytes): %v, want an unfinished-chunk error", newest, len(data), perr)
		}
		n = 0
		b.Reset()
		w := r.NewJSONWriter(&b, JSONOptions{})
		for e, eerr := range r.Events(EventOptions{}) {
			if eerr != nil {
				err = eerr
				break
			}
			w.Write(e)
			n++
		}
		w.Flush()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("no event read from the chunk being written (%d bytes) in 15 s: %v", len(data), perr)
			break
		}
		time.Sleep(time.Second) // the JVM's flush period
	}
	ourEvents(t, &b) // valid JSON, every line
	t.Logf("chunk being written: %d events read, then: %v", n, err)
}

// leakFound tells a dump whose most suspicious chain is the Leak workload's: through the static
// field Leak.LEAK to the leaked items. JDK 11's chains end at the ArrayList the field holds (its root
// is "<unknown>"), so there the list's elementData must be in the chain.
func leakFound(r *Recording) bool {
	groups, _, err := Leaks(r)
	if err != nil || len(groups) == 0 {
		return false
	}
	key := chainKey(&groups[0].Samples[0])
	if r.Chunks[0].Header.Minor == 0 {
		return strings.Contains(key, "|elementData|java.util.ArrayList|") && strings.Contains(key, "Leak$LeakedItem")
	}
	return strings.Contains(key, "|LEAK|") && strings.Contains(key, "Leak$LeakedItem")
}

// recordLeak records the Leak workload with Old Object Samples and dumps it with path-to-gc-roots
// until its chains name the leak.
func recordLeak(t *testing.T, jdk testutil.JDK, dir string) recording {
	j := testutil.StartJVM(t, jdk, testutil.JVMOptions{Main: "Leak", JVMArgs: []string{"-Xmx64m"}})
	c := dial(t, j.PID)
	if _, err := c.StartJFR(context.Background(), jcmd.JFRStart{Name: "leak", Settings: []string{"profile"}}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "leak.jfr")
	// The CPU flame graph is checked on every recording: the dump needs an execution sample too (the chain
	// can show before the first one, when another JDK's recordings run beside it).
	hasSample := hasEvents(map[string]int64{"jdk.ExecutionSample": 1})
	dumpUntil(t, c, "leak", path, true, 90*time.Second, func(r *Recording) bool { return leakFound(r) && hasSample(r) })
	j.Stop()
	return recording{name: "leak", path: path, jdk: jdk, leak: true, minChunks: 1}
}

// recordApp records Jetty under load with the profile settings, its stacks cut at 16 frames: at the
// default 64, jfr print --json wrote 814 MB for 7,833 events, and reading and comparing that took a
// minute of the package's time (Demo's recordings keep the default depth).
func recordApp(t *testing.T, jdk testutil.JDK, dir string) recording {
	app := testutil.StartApp(t, testutil.Jetty, jdk, testutil.AppOptions{JVMArgs: []string{
		"-XX:FlightRecorderOptions=stackdepth=16", "-XX:StartFlightRecording=name=app,settings=profile"}})
	load := app.StartLoad(t, testutil.LoadOptions{Duration: 4 * time.Second, Connections: 4})
	res := load.Wait(t)
	if res.Requests == 0 || res.Errors > 0 {
		t.Fatalf("load: %+v", res)
	}
	c := dial(t, app.PID)
	path := filepath.Join(dir, "jetty.jfr")
	dumpUntil(t, c, "app", path, false, 60*time.Second, hasEvents(map[string]int64{"jdk.ExecutionSample": 10}))
	app.Stop()
	return recording{name: "jetty", path: path, jdk: jdk, minChunks: 1}
}

func runTool(t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cmd.Env = append(os.Environ(), "TZ=UTC")
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %v: %v\n%s", bin, args, err, errOut.String())
	}
	return out.Bytes()
}

// TestAgainstJDK records Demo (default settings, several chunks; profile settings), Leak (Old
// Object Samples with paths to GC roots) on every JDK and Jetty under load on the oracle's JDK (the newest),
// and checks every event,
// the summary, the CPU flame graph and the leak chains against the JDK's jfr tool.
func TestAgainstJDK(t *testing.T) {
	oracle := oracleJDK(t)
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		t.Parallel() // two JDKs at a time: the recordings wait on their JVMs' periods and chunk rotations
		if _, err := os.Stat(jdk.Bin("jcmd")); err != nil {
			testutil.Skipf(t, "%s has no jcmd", jdk)
		}
		dir := t.TempDir()
		check := func(rec recording) {
			t.Run(rec.name, func(t *testing.T) { checkRecording(t, oracle, rec) })
		}
		for _, rec := range recordDemo(t, jdk, dir) {
			check(rec)
		}
		check(recordLeak(t, jdk, dir))
		if jdk.Home == oracle.Home {
			// One real application, on the newest JDK: a hundred event types under load.
			check(recordApp(t, jdk, dir))
		}
	})
}

func checkRecording(t *testing.T, oracle testutil.JDK, rec recording) {
	data, err := os.ReadFile(rec.path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Chunks) < rec.minChunks {
		t.Errorf("%d chunks, want at least %d", len(r.Chunks), rec.minChunks)
	}
	var ours bytes.Buffer
	w := r.NewJSONWriter(&ours, JSONOptions{})
	for e, err := range r.Events(EventOptions{Ordered: true}) {
		if err != nil {
			t.Fatal(err)
		}
		w.Write(e)
	}
	w.Flush()
	got := ourEvents(t, bytes.NewReader(ours.Bytes()))

	// Every event, value for value, against the newest tool.
	want := jdkEvents(t, bytes.NewReader(runTool(t, oracle.Bin("jfr"), "print", "--json", "--stack-depth", "1000000", rec.path)))
	types := compareEvents(t, want, got, jdkCompat{floatValues: oracle.Feature < 19})
	t.Logf("%s on %s: %d chunks, %d events of %d types equal %s's jfr print --json", rec.name, rec.jdk.Name(), len(r.Chunks), len(got), len(types), oracle.Name())

	// And against the recording JDK's own tool, allowing for its known differences (on the profile
	// and leak recordings: the default one has the same types, fewer of them).
	if own := rec.jdk.Bin("jfr"); rec.jdk.Home != oracle.Home && rec.name != "demo-default" {
		if _, err := os.Stat(own); err == nil {
			old := jdkEvents(t, bytes.NewReader(runTool(t, own, "print", "--json", "--stack-depth", "1000000", rec.path)))
			compat := jdkCompat{signedUnsigned: rec.jdk.Feature < 19, floatValues: rec.jdk.Feature < 19}
			if rec.jdk.Feature < 14 {
				// JDK 11's tool times some events of a later chunk differently from JDK 25's, which our
				// values equal (above): seen 0.74 and 0.76 ms on jdk.ExecuteVMOperation's startTime.
				compat.instantSkew = time.Millisecond
			}
			compareEvents(t, old, got, compat)
		}
	}

	// The summary, byte for byte.
	var sum bytes.Buffer
	if err := r.Summary().WriteText(&sum); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(runTool(t, oracle.Bin("jfr"), "summary", rec.path)), sum.String()); diff != "" {
		t.Errorf("summary (-jfr summary +ours):\n%s", diff)
	}

	sampler := "jdk.ExecutionSample"
	if r.count("jdk.CPUTimeSample") > 0 {
		sampler = "jdk.CPUTimeSample" // what cpu draws when there are both
	}
	checkFlame(t, r, want, sampler)
	if rec.leak {
		checkLeaks(t, r, want)
	}
	if rec.name == "demo-profile" {
		checkCut(t, data) // several chunks, every kind of constant
	}
}

// checkLeaks: the chains of every Old Object Sample equal the JDK's, and the first group is the leak.
func checkLeaks(t *testing.T, r *Recording, want []any) {
	t.Helper()
	var expect []string
	for _, e := range want {
		m := e.(map[string]any)
		if m["type"] != "jdk.OldObjectSample" {
			continue
		}
		v := m["values"].(map[string]any)
		var b strings.Builder
		if root, ok := v["root"].(map[string]any); ok {
			fmt.Fprintf(&b, "root %v/%v/%v", root["system"], root["type"], root["description"])
		}
		seen := 0
		for o, _ := v["object"].(map[string]any); o != nil && seen < 100000; seen++ {
			ty, _ := o["type"].(map[string]any)
			n, _ := ty["name"].(string)
			fmt.Fprintf(&b, " | %s %v", ClassName(n), o["description"])
			ref, _ := o["referrer"].(map[string]any)
			if ref == nil {
				break
			}
			if fld, ok := ref["field"].(map[string]any); ok {
				fmt.Fprintf(&b, " .%v", fld["name"])
			}
			if arr, ok := ref["array"].(map[string]any); ok {
				fmt.Fprintf(&b, " [%v]", arr["index"])
			}
			fmt.Fprintf(&b, " skip %v", ref["skip"])
			o, _ = ref["object"].(map[string]any)
		}
		expect = append(expect, b.String())
	}
	groups, n, err := Leaks(r)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, g := range groups {
		for _, s := range g.Samples {
			var b strings.Builder
			if s.Root != nil {
				fmt.Fprintf(&b, "root %v/%v/%v", s.Root.System, s.Root.Type, nilIfEmpty(s.Root.Description))
			}
			for _, l := range s.Chain {
				fmt.Fprintf(&b, " | %s %v", l.Class, nilIfEmpty(l.Description))
				if l.Field == "" && l.Index < 0 && l == s.Chain[len(s.Chain)-1] {
					break
				}
				if l.Field != "" {
					fmt.Fprintf(&b, " .%s", l.Field)
				}
				if l.Index >= 0 {
					fmt.Fprintf(&b, " [%d]", l.Index)
				}
				fmt.Fprintf(&b, " skip %d", l.Skipped)
			}
			got = append(got, b.String())
		}
	}
	sortStrings(expect)
	sortStrings(got)
	if n != len(expect) {
		t.Errorf("%d samples, the JDK printed %d", n, len(expect))
	}
	if diff := cmp.Diff(expect, got); diff != "" {
		t.Errorf("chains (-jfr print +ours):\n%s", diff)
	}
	if len(groups) == 0 || !leakFound(r) {
		t.Fatalf("the first chain is not the leak: %+v", groups[0])
	}
	g := groups[0]
	t.Logf("first chain: %d samples of %s, root %+v, %d links", g.Count, g.Class, *g.Root, len(g.Chain))
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// checkCut cuts the recording at a few offsets, the last chunk's middle among them: reading never
// fails to say where the damage is, and every event read is the full recording's (constants of the
// cut chunk may be missing: null).
func checkCut(t *testing.T, data []byte) {
	t.Helper()
	full, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	var all bytes.Buffer
	w := full.NewJSONWriter(&all, JSONOptions{})
	for e, err := range full.Events(EventOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		w.Write(e)
	}
	w.Flush()
	allLines := strings.Split(strings.TrimSuffix(all.String(), "\n"), "\n")
	last := full.Chunks[len(full.Chunks)-1]
	for _, cut := range []int64{HeaderSize + 10, last.Offset + last.Header.MetadataOffset + 100, last.Offset + (last.End-last.Offset)/2, last.End - 3} {
		if cut <= 0 || cut >= int64(len(data)) {
			continue
		}
		r, err := Parse(data[:cut])
		var fe *FormatError
		if !asFormatError(err, &fe) || fe.Offset > cut {
			t.Fatalf("cut at %d: %v, want damage at or before the cut", cut, err)
		}
		if r == nil {
			continue
		}
		var b bytes.Buffer
		w := r.NewJSONWriter(&b, JSONOptions{})
		n := 0
		for e, err := range r.Events(EventOptions{}) {
			if err != nil {
				break
			}
			w.Write(e)
			n++
		}
		w.Flush()
		if n == 0 {
			continue
		}
		for i, line := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
			if d, _ := sameOrLost(t, line, allLines[i]); d != "" {
				t.Fatalf("cut at %d: event %d differs: %s\n%.400s\nwant\n%.400s", cut, i, d, line, allLines[i])
			}
		}
		t.Logf("cut at %d of %d: %d of %d events read; %v", cut, len(data), n, len(allLines), err)
	}
}

func asFormatError(err error, fe **FormatError) bool { return errors.As(err, fe) }
