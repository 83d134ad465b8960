package usdt_test

import (
	"encoding/json"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/internal/testutil"
	"github.com/jvmkit/jvmkit/usdt"
)

// jvmkit runs the jvmkit binary with args.
func jvmkit(t testing.TB, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return testutil.RunTool(t, "cmd/jvmkit", args...)
}

// waitFor waits until the buffer contains s.
func waitFor(t testing.TB, b *testutil.SyncBuffer, s string, d time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(d); !strings.Contains(b.String(), s); {
		if time.Now().After(deadline) {
			t.Fatalf("no %q within %v; got:\n%s", s, d, b.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestCLIList(t *testing.T) {
	fxs := buildFixtures(t)
	f := fxs[0]
	notes := readelfNotes(t, f.probe)
	out, errOut, code := jvmkit(t, "usdt", "list", f.probe)
	if code != 0 {
		t.Fatalf("exit status %d: %s", code, errOut)
	}
	if !strings.HasPrefix(out, "# "+f.probe+": 16 sites of 14 probes\n") {
		t.Errorf("header: %q", out)
	}
	checkList(t, out, notes)

	out, _, code = jvmkit(t, "--json", "usdt", "list", f.probe, "multi", "fx:s?ma")
	var doc struct {
		Schema string `json:"schema"`
		Data   struct {
			Files []struct {
				Path    string `json:"path"`
				Machine string `json:"machine"`
				Probes  []struct {
					Name            string     `json:"name"`
					FileOffset      uint64     `json:"file_offset"`
					SemaphoreOffset uint64     `json:"semaphore_offset"`
					ParsedArgs      []usdt.Arg `json:"parsed_args"`
				} `json:"probes"`
			} `json:"files"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 0 {
		t.Fatalf("--json: %v, exit status %d:\n%s", err, code, out)
	}
	if doc.Schema != "jvmkit.usdt.list/v1" || len(doc.Data.Files) != 1 || len(doc.Data.Files[0].Probes) != 4 ||
		doc.Data.Files[0].Machine != "EM_X86_64" {
		t.Errorf("--json with patterns: %+v", doc)
	} else {
		last := doc.Data.Files[0].Probes[3]
		if last.Name != "sema" || last.SemaphoreOffset == 0 || last.FileOffset == 0 || len(last.ParsedArgs) != 1 {
			t.Errorf("fx:sema in JSON: %+v", last)
		}
	}

	// A process: its modules, the library fixture's probes in libfx.so.
	fx := startFixture(t, fxs[2].exe)
	out, errOut, code = jvmkit(t, "usdt", "list", strconv.Itoa(fx.pid), "fx:multi")
	if code != 0 || !strings.Contains(out, "# "+fxs[2].probe+": 3 sites of 1 probes") {
		t.Errorf("list of pid %d: exit status %d\n%s%s", fx.pid, code, out, errOut)
	}

	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"usdt", "list", f.probe, "nothing"}, 1, "no probe"},
		{[]string{"usdt", "list", f.probe, "[x"}, 2, "pattern"},
		{[]string{"usdt", "list", "testdata/fixture/main.c"}, 1, "usdt:"},
		{[]string{"usdt", "list", "/nonexistent"}, 1, "no such file"},
		{[]string{"usdt", "list", "0"}, 2, "not a pid"},
	} {
		_, errOut, code := jvmkit(t, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit status %d, %q; want %d and %q", tc.args, code, errOut, tc.code, tc.want)
		}
	}
}

// checkList compares the output of jvmkit usdt list for one file (without a prelink adjustment) with
// readelf's notes, line by line.
func checkList(t *testing.T, out string, notes []readelfNote) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(notes)+1 {
		t.Fatalf("%d lines for %d notes:\n%s", len(lines), len(notes), out)
	}
	for i, n := range notes {
		sem := "-"
		if n.sema != 0 {
			sem = "0x" + strconv.FormatUint(n.sema, 16)
		}
		want := strings.TrimSpace(n.provider + ":" + n.name + " 0x" + strconv.FormatUint(n.location, 16) + " " + sem + " " + n.args)
		if lines[i+1] != want {
			t.Errorf("line %d: %q, want %q", i+1, lines[i+1], want)
		}
	}
}

// traceLine is a line of jvmkit usdt trace.
type traceLine struct {
	TimeNS     uint64            `json:"time_ns"`
	PID        int               `json:"pid"`
	TID        int               `json:"tid"`
	Provider   string            `json:"provider"`
	Probe      string            `json:"probe"`
	PC         uint64            `json:"pc"`
	Args       []json.Number     `json:"args"`
	Strings    map[string]string `json:"strings"`
	Truncated  []int             `json:"truncated"`
	Unreadable []int             `json:"unreadable"`
}

func parseTrace(t testing.TB, out string) []traceLine {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	dec.UseNumber()
	var lines []traceLine
	for dec.More() {
		var l traceLine
		if err := dec.Decode(&l); err != nil {
			t.Fatalf("trace output: %v\n%s", err, out)
		}
		lines = append(lines, l)
	}
	return lines
}

// TestCLITrace runs jvmkit usdt trace on a fixture until the fixture exits, and compares every printed
// value with what the fixture passed.
func TestCLITrace(t *testing.T) {
	testutil.MustHaveBPF(t)
	for _, f := range buildFixtures(t) {
		t.Run(f.name, func(t *testing.T) {
			probes, err := usdt.ReadFile(f.probe)
			if err != nil {
				t.Fatal(err)
			}
			byPC := make(map[uint64]usdt.Probe)
			for _, p := range probes {
				byPC[p.PC] = p
			}
			fx := startFixture(t, f.exe)
			var stdout, stderr testutil.SyncBuffer
			done := make(chan int)
			cmd := exec.Command(testutil.BuildTool(t, "cmd/jvmkit"), "usdt", "trace", strconv.Itoa(fx.pid), "fx:*",
				"--string", "fx:str=0:1", "--string", "longstr=0:1", "--string", "fx:cstr=0", "--string", "badstr=0:1", "--string-size", "100")
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			go func() {
				cmd.Wait()
				done <- cmd.ProcessState.ExitCode()
			}()
			waitFor(t, &stderr, "tracing 16 sites of 14 probes in process "+strconv.Itoa(fx.pid), 30*time.Second)
			var want []string
			for _, n := range []int{3, 4, 999} {
				want = append(want, fx.fire(n)...)
			}
			fx.quit()
			select {
			case code := <-done:
				if code != 0 {
					t.Fatalf("exit status %d: %s", code, stderr.String())
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the trace did not end with the process")
			}
			if !strings.Contains(stderr.String(), "jvmkit: usdt trace: "+strconv.Itoa(len(want))+" events, 0 dropped\n") {
				t.Errorf("stderr: %s", stderr.String())
			}
			lines := parseTrace(t, stdout.String())
			if len(lines) != len(want) {
				t.Fatalf("%d lines traced, the fixture fired %d probes", len(lines), len(want))
			}
			for i, l := range lines {
				p, ok := byPC[l.PC]
				faulted := len(l.Unreadable) == 1 && l.Unreadable[0] == 0 && p.Name == "badstr"
				if !ok || l.Provider != p.Provider || l.Probe != p.Name || l.PID != fx.pid || l.TID != fx.pid ||
					len(l.Args) != len(p.Args) || len(l.Unreadable) > 0 && !faulted {
					t.Errorf("line %d: %+v", i, l)
					continue
				}
				values := make([]any, len(l.Args))
				for j, a := range p.Args {
					var v any
					var err error
					switch {
					case a.Float && a.Size == 4:
						var f float64
						f, err = strconv.ParseFloat(l.Args[j].String(), 32)
						v = float32(f)
					case a.Float:
						v, err = strconv.ParseFloat(l.Args[j].String(), 64)
					case a.Signed:
						v, err = strconv.ParseInt(l.Args[j].String(), 10, 64)
					default:
						v, err = strconv.ParseUint(l.Args[j].String(), 10, 64)
					}
					if err != nil {
						t.Fatalf("line %d argument %d: %v", i, j, err)
					}
					values[j] = v
				}
				var strs []string
				var trunc []bool
				if s, ok := l.Strings["0"]; ok {
					strs = append(strs, s)
					trunc = append(trunc, len(l.Truncated) == 1 && l.Truncated[0] == 0)
				} else if faulted {
					strs, trunc = append(strs, "<fault>"), append(trunc, false)
				}
				if err := checkValues(l.Provider+":"+l.Probe, values, strs, trunc, want[i]); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

// TestCLITraceSignals ends jvmkit usdt trace with SIGINT and SIGTERM: it exits 0 after printing the
// events and the counts, and its uprobes are gone (the semaphore they held is back at 0).
func TestCLITraceSignals(t *testing.T) {
	testutil.MustHaveBPF(t)
	f := buildFixtures(t)[0]
	bin := testutil.BuildTool(t, "cmd/jvmkit")
	fx := startFixture(t, f.exe)
	for _, sig := range []unix.Signal{unix.SIGINT, unix.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			var stdout, stderr testutil.SyncBuffer
			cmd := exec.Command(bin, "usdt", "trace", strconv.Itoa(fx.pid), "fx:sema")
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			cmd.SysProcAttr = &unix.SysProcAttr{Pdeathsig: unix.SIGKILL}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			waitFor(t, &stderr, "tracing 1 sites of 1 probes", 30*time.Second)
			if got := fx.sema(); got != 1 {
				t.Errorf("semaphore %d while tracing", got)
			}
			fx.fire(5)
			fx.fire(6)
			time.Sleep(100 * time.Millisecond)
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			errc := make(chan error, 1)
			go func() { errc <- cmd.Wait() }()
			select {
			case err := <-errc:
				if err != nil {
					t.Errorf("after %v: %v\n%s", sig, err, stderr.String())
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("still running 10s after %v", sig)
			}
			lines := parseTrace(t, stdout.String())
			if len(lines) != 2 || lines[0].Args[0].String() != "5007" || lines[1].Args[0].String() != "6007" {
				t.Errorf("trace: %s", stdout.String())
			}
			if !strings.Contains(stderr.String(), "2 events, 0 dropped") {
				t.Errorf("stderr: %s", stderr.String())
			}
			if got := fx.sema(); got != 0 {
				t.Errorf("semaphore %d after the trace ended: uprobes left behind", got)
			}
		})
	}
}

func TestCLITraceDurationAndErrors(t *testing.T) {
	testutil.MustHaveBPF(t)
	f := buildFixtures(t)[0]
	fx := startFixture(t, f.exe)
	pid := strconv.Itoa(fx.pid)
	start := time.Now()
	out, errOut, code := jvmkit(t, "usdt", "trace", pid, "fx:noargs", "--duration", "1s")
	if took := time.Since(start); code != 0 || out != "" || took < time.Second || took > 10*time.Second ||
		!strings.Contains(errOut, "0 events, 0 dropped") {
		t.Errorf("--duration 1s: exit status %d after %v, stdout %q, stderr %q", code, took, out, errOut)
	}

	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"usdt", "trace", "abc", "fx:noargs"}, 2, "not a pid"},
		{[]string{"usdt", "trace", pid}, 2, "arg"},
		{[]string{"usdt", "trace", pid, "fx:nothing"}, 1, `no probe of process ` + pid + ` matches "fx:nothing"`},
		{[]string{"usdt", "trace", pid, "fx:str", "--string", "fx:str"}, 2, "PROBE=PTR"},
		{[]string{"usdt", "trace", pid, "fx:str", "--string", "fx:str=0:7"}, 2, "has 3 arguments"},
		{[]string{"usdt", "trace", pid, "fx:str", "--string", "fx:cstr=0"}, 2, "no traced probe matches"},
		{[]string{"usdt", "trace", pid, "fx:str", "--string-size", "100000"}, 1, "string size"},
		{[]string{"usdt", "trace", pid, "fx:str", "--duration", "-1s"}, 2, "negative"},
		{[]string{"usdt", "trace", strconv.Itoa(dead.Process.Pid), "fx:str"}, 3, "no such process"},
	} {
		_, errOut, code := jvmkit(t, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit status %d, %q; want %d and %q", tc.args, code, errOut, tc.code, tc.want)
		}
	}
}
