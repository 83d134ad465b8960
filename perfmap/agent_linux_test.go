package perfmap_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/attach"
	"github.com/jvmkit/jvmkit/internal/testutil"
	"github.com/jvmkit/jvmkit/jcmd"
	"github.com/jvmkit/jvmkit/perfmap"
	"github.com/jvmkit/jvmkit/vmstructs"
)

var agentLib = "../jvmti/agent/libjvmkit-perfmap-linux-" + runtime.GOARCH + ".so"

// fileLog records the paths FromAgent reports creating.
type fileLog struct {
	mu      sync.Mutex
	created []string
}

func (l *fileLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *fileLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *fileLog) WithGroup(string) slog.Handler            { return l }
func (l *fileLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "created" {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "path" {
			l.mu.Lock()
			l.created = append(l.created, a.Value.String())
			l.mu.Unlock()
		}
		return true
	})
	return nil
}

// checkGone fails for every path FromAgent created that still exists, and for names of ours that appeared
// in the given /tmp directories since before.
func (l *fileLog) checkGone(t *testing.T, before map[string][]string) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.created) == 0 {
		t.Errorf("FromAgent reported no files created")
	}
	for _, p := range l.created {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("left behind: %s (%v)", p, err)
		}
	}
	for dir, old := range before {
		for _, p := range ourTmpFiles(t, dir) {
			if !slices.Contains(old, p) {
				t.Errorf("left behind: %s", p)
			}
		}
	}
}

func ourTmpFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, pat := range []string{".jvmkit-agent-*", ".jvmkit-perfmap-agent-*", ".jvmkit-perfmap-saved-*"} {
		m, err := filepath.Glob(filepath.Join(dir, pat))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m...)
	}
	return out
}

func tmpState(t *testing.T, dirs ...string) map[string][]string {
	m := map[string][]string{}
	for _, d := range dirs {
		m[d] = ourTmpFiles(t, d)
	}
	return m
}

func fromAgent(t *testing.T, pid int, opts perfmap.AgentOptions) ([]perfmap.Entry, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	entries, err := perfmap.FromAgent(ctx, pid, opts)
	if err != nil {
		t.Fatalf("FromAgent(%+v): %v", opts, err)
	}
	return entries, time.Since(start)
}

// nmethodSpans reads the JVM's nmethods from its memory; with native, native wrappers too.
func nmethodSpans(t *testing.T, pid int) map[span]bool { return codeSpans(t, pid, false) }

func codeSpans(t *testing.T, pid int, native bool) map[span]bool {
	t.Helper()
	j, err := vmstructs.Open(context.Background(), pid)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	cc, err := j.CodeCache()
	if err != nil {
		t.Fatal(err)
	}
	blobs, err := cc.Blobs()
	if err != nil {
		t.Fatal(err)
	}
	out := map[span]bool{}
	for _, b := range blobs {
		if (b.Kind == vmstructs.KindNMethod || native && b.Kind == vmstructs.KindNativeNMethod) && b.End > b.Start {
			out[span{b.Start, b.End - b.Start}] = true
		}
	}
	return out
}

// agentAgrees counts the nmethods of the code cache present before and after a load (vm1 and vm2, read from
// memory) and those of them that the agent's entries name with the same code (see sameCode).
func agentAgrees(feature int, vm1, vm2 map[span]bool, entries []perfmap.Entry) (stable, agree int) {
	agent := map[uint64]uint64{}
	for _, e := range entries {
		agent[e.Start] = e.Size
	}
	for s := range vm1 {
		if vm2[s] {
			stable++
			if size, ok := agent[s.start]; ok && sameCode(feature, size, s.size) {
				agree++
			}
		}
	}
	return stable, agree
}

// sameCode reports whether an agent's entry of the given size names the code of a blob of size vm that starts
// where it starts: the same size, or before JDK 17, whose JVMTI CompiledMethodLoad reports an nmethod's
// instructions without its stub section, no more than the blob. (vmstructs' TestCodeCacheAgent checks JDK 11's
// sizes exactly, from nmethod::_stub_offset.)
func sameCode(feature int, size, vm uint64) bool {
	return size == vm || feature < 17 && size > 0 && size <= vm
}

// checkHealthy fails unless the JVM still runs and answers a diagnostic command.
func checkHealthy(t *testing.T, j *testutil.JVM) {
	t.Helper()
	if !j.Alive() {
		t.Fatalf("the JVM died; stderr:\n%s", j.Stderr())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := jcmd.Dial(ctx, j.PID, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	out, err := c.Run(ctx, "VM.version")
	if err != nil || !strings.Contains(out, "JDK") {
		t.Fatalf("VM.version after the loads: %q, %v", out, err)
	}
}

// agentMappings counts the distinct files mapped by process pid from a directory named like FromAgent's.
func agentMappings(t *testing.T, pid int) int {
	t.Helper()
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/maps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	files := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 6 && strings.Contains(fields[5], "/.jvmkit-agent-") {
			files[fields[3]+" "+fields[4]] = true // device and inode
		}
	}
	return len(files)
}

func names(entries []perfmap.Entry) map[string]bool {
	m := map[string]bool{}
	for _, e := range entries {
		m[e.Name] = true
	}
	return m
}

// TestAgent loads jvmkit's agent three times into a warm JVM, twice with the same options and once with
// others, and checks that the JVM survives, that the map agrees with the code cache read from memory, that
// the library is in the JVM once, and that nothing is left behind. Then each option's effect.
func TestAgent(t *testing.T) {
	testutil.MustHaveRoot(t)
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		j := warmBusy(t, jdk, testutil.JVMOptions{JVMArgs: []string{"-XX:+UnlockDiagnosticVMOptions", "-XX:+DebugNonSafepoints"}})
		before := tmpState(t, "/tmp")
		log := &fileLog{}
		opts := perfmap.AgentOptions{Logger: slog.New(log)}

		vm1 := nmethodSpans(t, j.PID)
		all1 := codeSpans(t, j.PID, true)
		e1, d1 := fromAgent(t, j.PID, opts)
		e2, d2 := fromAgent(t, j.PID, opts)
		vm2 := nmethodSpans(t, j.PID)
		all2 := codeSpans(t, j.PID, true)
		opts3 := opts
		opts3.Options = "unfoldall,msig,annotate_java_frames"
		e3, d3 := fromAgent(t, j.PID, opts3)
		t.Logf("%s: loads took %v, %v, %v (unfoldall); %d, %d, %d entries", jdk.Name(), d1, d2, d3, len(e1), len(e2), len(e3))
		checkHealthy(t, j)
		if n := agentMappings(t, j.PID); n != 1 {
			t.Errorf("the JVM maps %d agent libraries after three loads, want 1 (the same path must reach the same library)", n)
		}
		if out := j.Stdout() + j.Stderr(); strings.Contains(out, "jvmkit") {
			t.Logf("the JVM printed:\n%s", out)
		}

		for i, e := range [][]perfmap.Entry{e1, e2} {
			stable, agree := agentAgrees(jdk.Feature, vm1, vm2, e)
			pct := 100 * float64(agree) / float64(max(stable, 1))
			t.Logf("load %d: %d of %d nmethods in the code cache before and after (vmstructs) have the same range in the map (%.2f%%)", i+1, agree, stable, pct)
			if stable == 0 || pct < 99 {
				t.Errorf("load %d: the agent agrees with vmstructs on %d of %d nmethod ranges, want >= 99%%", i+1, agree, stable)
			}
		}
		// The other way round: the agent's compiled methods are nmethods or native wrappers in the code cache.
		methods, known := 0, 0
		blobs := map[uint64]uint64{}
		for _, all := range []map[span]bool{all1, all2} {
			for s := range all {
				blobs[s.start] = s.size
			}
		}
		for _, e := range e1 {
			if strings.Contains(e.Name, "::") {
				methods++
				if size, ok := blobs[e.Start]; ok && sameCode(jdk.Feature, e.Size, size) {
					known++
				}
			}
		}
		t.Logf("load 1: %d of %d compiled methods in the map are nmethods or native wrappers in the code cache (vmstructs)", known, methods)
		if methods == 0 || known < methods*99/100 {
			t.Errorf("only %d of the agent's %d compiled methods are in the code cache", known, methods)
		}
		if n := names(e1); !n["LBusy;::spin"] || !n["Interpreter"] {
			t.Errorf("default names: no LBusy;::spin or Interpreter")
		}
		if !names(e3)["LBusy;::spin(JI)J_[j]->LBusy;::step(J)J_[i]"] {
			t.Errorf("unfoldall,msig,annotate_java_frames: no LBusy;::spin(JI)J_[j]->LBusy;::step(J)J_[i]")
		}

		t.Run("options", func(t *testing.T) { testAgentOptions(t, j, e1, log) })

		t.Run("concurrent", func(t *testing.T) {
			var wg sync.WaitGroup
			errs := make([]error, 12)
			for i := range errs {
				wg.Go(func() {
					_, errs[i] = perfmap.FromAgent(context.Background(), j.PID, perfmap.AgentOptions{Options: "unfoldall", Logger: slog.New(log)})
				})
			}
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					t.Error(err)
				}
			}
			if n := agentMappings(t, j.PID); n != 1 {
				t.Errorf("the JVM maps %d agent libraries after concurrent loads, want 1", n)
			}
			checkHealthy(t, j)
		})

		t.Run("refused", func(t *testing.T) {
			for _, o := range []string{"bogus", "msig,unfold=1", "file=/tmp/x"} {
				_, err := perfmap.FromAgent(context.Background(), j.PID, perfmap.AgentOptions{Options: o})
				if err == nil {
					t.Errorf("options %q: no error", o)
				} else {
					t.Logf("options %q: %v", o, err)
				}
			}
		})
		log.checkGone(t, before)
	})
}

// busySpinLine is the line of the first bytecode of Busy.spin.
func busySpinLine(t *testing.T) int {
	t.Helper()
	dir, err := testutil.WorkloadsDir()
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(dir, "Busy.java"))
	if err != nil {
		t.Fatal(err)
	}
	inSpin := false
	for i, line := range strings.Split(string(src), "\n") {
		if strings.Contains(line, "static long spin(") {
			inSpin = true
			continue
		}
		if inSpin && strings.TrimSpace(line) != "" {
			return i + 1
		}
	}
	t.Fatal("Busy.spin not found in Busy.java")
	return 0
}

func testAgentOptions(t *testing.T, j *testutil.JVM, plain []perfmap.Entry, log *fileLog) {
	var spin []perfmap.Entry
	for _, e := range plain {
		if e.Name == "LBusy;::spin" {
			spin = append(spin, e)
		}
	}
	insideSpin := func(entries []perfmap.Entry, name string) bool {
		for _, e := range entries {
			for _, s := range spin {
				if e.Name == name && e.Start > s.Start && e.Start+e.Size <= s.Start+s.Size {
					return true
				}
			}
		}
		return false
	}
	has := func(name string) func([]perfmap.Entry) bool {
		return func(entries []perfmap.Entry) bool { return names(entries)[name] }
	}
	line := busySpinLine(t)
	cases := []struct {
		options string
		want    string
		ok      func([]perfmap.Entry) bool
	}{
		{"msig", "LBusy;::spin(JI)J", has("LBusy;::spin(JI)J")},
		{"dottedclass", "Ljava.lang.* names and no Ljava/lang/", func(es []perfmap.Entry) bool {
			dotted := false
			for _, e := range es {
				if strings.HasPrefix(e.Name, "Ljava/lang/") {
					return false
				}
				dotted = dotted || strings.HasPrefix(e.Name, "Ljava.lang.")
			}
			return dotted && names(es)["LBusy;::spin"]
		}},
		{"cleanclass", "Busy::spin and java/lang/*", func(es []perfmap.Entry) bool {
			n := names(es)
			clean := false
			for _, e := range es {
				clean = clean || strings.HasPrefix(e.Name, "java/lang/")
			}
			return n["Busy::spin"] && clean
		}},
		{"cleanclass,dottedclass", "Busy::spin and java.lang.*", func(es []perfmap.Entry) bool {
			clean := false
			for _, e := range es {
				clean = clean || strings.HasPrefix(e.Name, "java.lang.")
			}
			return names(es)["Busy::spin"] && clean
		}},
		{"sourcepos", fmt.Sprintf("LBusy;::spin(Busy.java:%d)", line), has(fmt.Sprintf("LBusy;::spin(Busy.java:%d)", line))},
		{"annotate_java_frames", "LBusy;::spin_[j] and Interpreter", func(es []perfmap.Entry) bool {
			n := names(es)
			return n["LBusy;::spin_[j]"] && n["Interpreter"]
		}},
		{"unfold", "LBusy;::step in LBusy;::spin", has("LBusy;::step in LBusy;::spin")},
		{"unfold,annotate_java_frames", "LBusy;::step in LBusy;::spin_[i]", has("LBusy;::step in LBusy;::spin_[i]")},
		{"unfoldsimple", "LBusy;::step inside Busy.spin's code", func(es []perfmap.Entry) bool { return insideSpin(es, "LBusy;::step") }},
		{"unfoldsimple,annotate_java_frames", "LBusy;::step_[i] inside Busy.spin's code", func(es []perfmap.Entry) bool { return insideSpin(es, "LBusy;::step_[i]") }},
		{"unfoldall", "LBusy;::spin->LBusy;::step", has("LBusy;::spin->LBusy;::step")},
		{"unfoldall,use_semicolon_unfold_delimiter", "LBusy;::spin;LBusy;::step", has("LBusy;::spin;LBusy;::step")},
		{",unfold,unfoldall,", "unfoldall wins: LBusy;::spin->LBusy;::step", has("LBusy;::spin->LBusy;::step")},
	}
	for _, c := range cases {
		entries, d := fromAgent(t, j.PID, perfmap.AgentOptions{Options: c.options, Logger: slog.New(log)})
		if !c.ok(entries) {
			var busy []string
			for _, e := range entries {
				if strings.Contains(e.Name, "Busy") {
					busy = append(busy, e.Name)
				}
			}
			t.Errorf("options %q: want %s; names with Busy: %q", c.options, c.want, busy)
		}
		if strings.HasPrefix(c.options, "unfold") {
			tiled, considered := tiling(plain, entries)
			t.Logf("options %q: %d entries in %v; %d of %d compiled methods tiled exactly", c.options, len(entries), d, tiled, considered)
			if considered == 0 || tiled < considered*99/100 {
				t.Errorf("options %q: %d of %d compiled methods are tiled by their unfolded entries", c.options, tiled, considered)
			}
		}
	}
	checkHealthy(t, j)
}

// tiling counts the compiled methods of plain that are covered exactly, without gaps or overlaps, by
// consecutive entries of unfolded; methods whose start unfolded does not have (compiled or flushed between
// the two maps) are not considered.
func tiling(plain, unfolded []perfmap.Entry) (tiled, considered int) {
	byStart := map[uint64]perfmap.Entry{}
	for _, e := range unfolded {
		byStart[e.Start] = e
	}
	for _, p := range plain {
		if !strings.Contains(p.Name, "::") {
			continue
		}
		if _, ok := byStart[p.Start]; !ok {
			continue
		}
		considered++
		at, end := p.Start, p.Start+p.Size
		for at < end {
			e, ok := byStart[at]
			if !ok {
				break
			}
			at += e.Size
		}
		if at == end {
			tiled++
		}
	}
	return tiled, considered
}

// TestAgentNamespace loads the agent into a JVM in its own pid and mount namespaces with a private /tmp,
// and checks the refusal of a noexec /tmp.
func TestAgentNamespace(t *testing.T) {
	testutil.MustHaveRoot(t)
	nsenter := testutil.MustHaveTool(t, "nsenter")
	jdk := testutil.JDK17(t)
	j := warmBusy(t, jdk, testutil.JVMOptions{Namespace: true})
	inside := "/proc/" + strconv.Itoa(j.PID) + "/root/tmp"
	before := tmpState(t, "/tmp", inside)
	log := &fileLog{}
	entries, d := fromAgent(t, j.PID, perfmap.AgentOptions{Options: "msig", Logger: slog.New(log)})
	t.Logf("namespaced JVM (nspid %d): %d entries in %v", j.NSPID, len(entries), d)
	if !names(entries)["LBusy;::spin(JI)J"] {
		t.Errorf("no LBusy;::spin(JI)J")
	}
	for _, p := range log.created {
		if !strings.HasPrefix(p, inside+"/") {
			t.Errorf("created %s, outside the JVM's /tmp %s", p, inside)
		}
	}
	checkHealthy(t, j)
	log.checkGone(t, before)

	if out, err := exec.Command(nsenter, "-t", strconv.Itoa(j.PID), "-m", "mount", "-o", "remount,noexec", "/tmp").CombinedOutput(); err != nil {
		t.Fatalf("remount the JVM's /tmp noexec: %v\n%s", err, out)
	}
	_, err := perfmap.FromAgent(context.Background(), j.PID, perfmap.AgentOptions{})
	if !errors.Is(err, perfmap.ErrNoExec) {
		t.Errorf("noexec /tmp: %v, want ErrNoExec", err)
	} else {
		t.Logf("noexec /tmp: %v", err)
	}
	checkHealthy(t, j)
}

// TestAgentOtherUser loads the agent into a JVM running as nobody, and perf-map-agent's way (Library)
// into the same JVM while a root-owned map is in the way.
func TestAgentOtherUser(t *testing.T) {
	testutil.MustHaveRoot(t)
	jdk := testutil.JDK17(t)
	j := warmBusy(t, jdk, testutil.JVMOptions{UID: 65534, GID: 65534})
	before := tmpState(t, "/tmp")
	log := &fileLog{}
	entries, d := fromAgent(t, j.PID, perfmap.AgentOptions{Options: "cleanclass", Logger: slog.New(log)})
	t.Logf("JVM as uid 65534: %d entries in %v", len(entries), d)
	if !names(entries)["Busy::spin"] {
		t.Errorf("no Busy::spin")
	}

	// A map owned by root is where the external agent writes: it is moved aside, the agent running as
	// nobody writes its own, and the old one comes back.
	mapPath := "/tmp/perf-" + strconv.Itoa(j.NSPID) + ".map"
	if err := os.WriteFile(mapPath, []byte("1 1 keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(mapPath) })
	var st0 unix.Stat_t
	if err := unix.Lstat(mapPath, &st0); err != nil {
		t.Fatal(err)
	}
	lib := copyAgent(t)
	entries, d = fromAgent(t, j.PID, perfmap.AgentOptions{Library: lib, Options: "msig", Logger: slog.New(log)})
	t.Logf("JVM as uid 65534, Library: %d entries in %v", len(entries), d)
	if n := names(entries); !n["LBusy;::spin(JI)J"] || n["keep"] {
		t.Errorf("Library: no LBusy;::spin(JI)J, or the old map was read")
	}
	var st1 unix.Stat_t
	if err := unix.Lstat(mapPath, &st1); err != nil || st1.Ino != st0.Ino {
		t.Errorf("the map that was there is not back: %v", err)
	} else if b, _ := os.ReadFile(mapPath); string(b) != "1 1 keep\n" {
		t.Errorf("the map that was there changed: %q", b)
	}
	checkHealthy(t, j)
	log.checkGone(t, before)
}

// copyAgent copies jvmkit's agent to a host file with another name, as a stand-in for another agent.
func copyAgent(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(agentLib)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "libperfmap.so")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestAgentLibrary loads another agent library (a copy of jvmkit's, which writes /tmp/perf-<pid>.map by
// default, as perf-map-agent does) and checks that its map is read and removed, and that a failing agent's
// return code is reported.
func TestAgentLibrary(t *testing.T) {
	testutil.MustHaveRoot(t)
	jdk := testutil.JDK17(t)
	j := warmBusy(t, jdk, testutil.JVMOptions{})
	before := tmpState(t, "/tmp")
	log := &fileLog{}
	lib := copyAgent(t)
	mapPath := "/tmp/perf-" + strconv.Itoa(j.NSPID) + ".map"
	entries, d := fromAgent(t, j.PID, perfmap.AgentOptions{Library: lib, Options: "dottedclass", Logger: slog.New(log)})
	t.Logf("Library: %d entries in %v", len(entries), d)
	if !names(entries)["LBusy;::spin"] || !slices.ContainsFunc(entries, func(e perfmap.Entry) bool { return strings.HasPrefix(e.Name, "Ljava.lang.") }) {
		t.Errorf("Library with dottedclass: no LBusy;::spin or Ljava.lang.* names")
	}
	if _, err := os.Lstat(mapPath); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s was not removed: %v", mapPath, err)
	}

	_, err := perfmap.FromAgent(context.Background(), j.PID, perfmap.AgentOptions{Library: lib, Options: "bogus", Logger: slog.New(log)})
	var ae *attach.AgentError
	if !errors.As(err, &ae) || ae.ReturnCode != 1 {
		t.Errorf("Library with a bad option: %v, want an agent error with return code 1", err)
	} else {
		t.Logf("Library with a bad option: %v", err)
	}
	// jvmkit's agent reports a file it cannot create as 4000 + errno.
	_, err = perfmap.FromAgent(context.Background(), j.PID, perfmap.AgentOptions{Library: lib, Options: "file=/nonexistent-jvmkit/x.map", Logger: slog.New(log)})
	if !errors.As(err, &ae) || ae.ReturnCode != 4000+int(unix.ENOENT) {
		t.Errorf("map in a missing directory: %v, want an agent error with return code %d", err, 4000+int(unix.ENOENT))
	} else {
		t.Logf("map in a missing directory: %v", err)
	}
	checkHealthy(t, j)
	log.checkGone(t, before)
}

// TestAgentWhileCompiling loads the agent again and again into a JVM that has just started, while its
// compilers are busy and compiled methods arrive from other threads during each replay.
func TestAgentWhileCompiling(t *testing.T) {
	testutil.MustHaveRoot(t)
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		j := testutil.StartJVM(t, jdk, testutil.JVMOptions{Main: "Demo"})
		before := tmpState(t, "/tmp")
		log := &fileLog{}
		options := []string{"", "unfoldall,msig,sourcepos,annotate_java_frames", "unfold,dottedclass", "cleanclass,unfoldsimple"}
		var total time.Duration
		counts := []int{}
		for i := range 16 {
			entries, d := fromAgent(t, j.PID, perfmap.AgentOptions{Options: options[i%len(options)], Logger: slog.New(log)})
			total += d
			counts = append(counts, len(entries))
		}
		t.Logf("%s: 16 loads during warm-up, %v each on average; entries %v", jdk.Name(), total/16, counts)
		checkHealthy(t, j)

		// A bigger code cache than Busy's, still changing: the nmethods present before and after a load
		// must be in the map.
		vm1 := nmethodSpans(t, j.PID)
		entries, _ := fromAgent(t, j.PID, perfmap.AgentOptions{Logger: slog.New(log)})
		vm2 := nmethodSpans(t, j.PID)
		stable, agree := agentAgrees(jdk.Feature, vm1, vm2, entries)
		t.Logf("%s (Demo): %d of %d nmethods present before and after have the same range in the map (%.2f%%)", jdk.Name(), agree, stable, 100*float64(agree)/float64(max(stable, 1)))
		if stable == 0 || agree < stable*99/100 {
			t.Errorf("the agent agrees with vmstructs on %d of %d nmethod ranges, want >= 99%%", agree, stable)
		}
		if n := agentMappings(t, j.PID); n != 1 {
			t.Errorf("the JVM maps %d agent libraries, want 1", n)
		}
		log.checkGone(t, before)
	})
}

// TestAgentOnLoad starts a JVM with the agent on its command line (-agentpath), which writes the map once
// the VM is initialized, and then loads the embedded one into it as well.
func TestAgentOnLoad(t *testing.T) {
	testutil.MustHaveRoot(t)
	jdk := testutil.JDK17(t)
	lib := copyAgent(t)
	out := filepath.Join(t.TempDir(), "startup.map")
	j := testutil.StartJVM(t, jdk, testutil.JVMOptions{Main: "Busy", JVMArgs: []string{"-agentpath:" + lib + "=msig,file=" + out}})
	f, err := os.Open(out)
	if err != nil {
		t.Fatalf("the agent wrote no map at start-up: %v\n%s", err, j.Stderr())
	}
	defer f.Close()
	entries, err := perfmap.Parse(f)
	if err != nil || !names(entries)["Interpreter"] {
		t.Errorf("start-up map: %d entries, %v; want Interpreter among them", len(entries), err)
	}
	t.Logf("start-up map: %d entries", len(entries))
	later, d := fromAgent(t, j.PID, perfmap.AgentOptions{})
	t.Logf("then FromAgent: %d entries in %v", len(later), d)
	checkHealthy(t, j)
}

// TestAgentAttachDisabled checks that a JVM that refuses attaching gives the attach error, and that nothing
// is written into its /tmp.
func TestAgentAttachDisabled(t *testing.T) {
	testutil.MustHaveRoot(t)
	jdk := testutil.JDK17(t)
	j := testutil.StartJVM(t, jdk, testutil.JVMOptions{JVMArgs: []string{"-XX:+DisableAttachMechanism"}})
	before := tmpState(t, "/tmp")
	log := &fileLog{}
	_, err := perfmap.FromAgent(context.Background(), j.PID, perfmap.AgentOptions{Logger: slog.New(log)})
	if !errors.Is(err, attach.ErrAttachDisabled) {
		t.Errorf("FromAgent: %v, want ErrAttachDisabled", err)
	} else {
		t.Logf("FromAgent: %v", err)
	}
	if len(log.created) != 0 {
		t.Errorf("created %q", log.created)
	}
	for _, p := range ourTmpFiles(t, "/tmp") {
		if !slices.Contains(before["/tmp"], p) {
			t.Errorf("left behind: %s", p)
		}
	}
}
