package hotspot_test

import (
	"context"
	"encoding/json"
	"math"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/internal/testutil"
	"github.com/jvmkit/jvmkit/usdt"
	"github.com/jvmkit/jvmkit/usdt/hotspot"
	"github.com/jvmkit/jvmkit/vmstructs"
)

// jvmkit runs the jvmkit binary with args.
func jvmkit(t testing.TB, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return testutil.RunTool(t, "cmd/jvmkit", args...)
}

// allocOutput is the part of jvmkit.alloc/v1 the tests read.
type allocOutput struct {
	Schema string `json:"schema"`
	Data   struct {
		Mode     string   `json:"mode"`
		Switched []string `json:"switched"`
		Profile  hotspot.AllocProfile
	} `json:"data"`
}

func parseAlloc(t *testing.T, out string) allocOutput {
	t.Helper()
	var a allocOutput
	if err := json.Unmarshal([]byte(out), &a); err != nil || a.Schema != "jvmkit.alloc/v1" {
		t.Fatalf("jvmkit alloc --json: %v\n%s", err, out)
	}
	return a
}

func count(p *hotspot.AllocProfile, class string) uint64 {
	for _, c := range p.Classes {
		if c.Class == class {
			return c.Count
		}
	}
	return 0
}

// The Alloc workload allocates, per round, 8 Alloc$AllocA, 2 byte[40] and 1 Alloc$AllocB.
const (
	classA = "Alloc$AllocA"
	classB = "Alloc$AllocB"
)

func readFlag(t *testing.T, pid int, name string) bool {
	t.Helper()
	j, err := vmstructs.Open(context.Background(), pid)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	f, err := j.Flag(name)
	if err != nil || f.Bool == nil {
		t.Fatalf("flag %s: %+v, %v", name, f, err)
	}
	return *f.Bool
}

// TestAllocAll counts the Alloc workload's allocations on a JVM started with -XX:+DTraceAllocProbes and
// expects its exact mix; then restores the
// flag to false at run time and measures whether compiled code still fires (JDK 17: no; JDK 21+: yes, code
// compiled while the flag was on calls the probe unconditionally).
func TestAllocAll(t *testing.T) {
	testutil.MustHaveBPF(t)
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		t.Parallel() // two JDKs at a time: what this checks does not depend on the machine's load
		j := testutil.StartJVM(t, jdk, testutil.JVMOptions{
			Main:    "Alloc",
			JVMArgs: []string{"-XX:+DTraceAllocProbes", "-Xmx128m", "-Xlog:gc:stdout", "-XX:+UseG1GC"},
		})
		pid := strconv.Itoa(j.PID)
		out, errOut, code := jvmkit(t, "alloc", pid, "--duration", "3s", "--json", "--top", "5")
		if n, err := jdk.Probes(); err == nil && n == 0 {
			// A JDK built without probes: the command says so, and why.
			if code == 0 || !strings.Contains(errOut, "no HotSpot probes") || !strings.Contains(errOut, "--enable-dtrace") {
				t.Errorf("jvmkit alloc on a JVM without probes: exit status %d\n%s", code, errOut)
			}
			// Without the flag too: the missing probes are the answer, not advice to set a flag that would
			// make nothing fire.
			off := testutil.StartJVM(t, jdk, testutil.JVMOptions{Main: "Alloc", JVMArgs: []string{"-Xmx128m"}})
			_, errOut, code = jvmkit(t, "alloc", strconv.Itoa(off.PID), "--duration", "1s")
			if code == 0 || !strings.Contains(errOut, "no HotSpot probes") || strings.Contains(errOut, "switch-flags") {
				t.Errorf("jvmkit alloc on a JVM without probes and without the flag: exit status %d\n%s", code, errOut)
			}
			testutil.SkipJDK(t, jdk, "this build's libjvm.so has no USDT probes: jvmkit alloc says so (checked)")
		}
		if code != 0 {
			t.Fatalf("jvmkit alloc: exit status %d\n%s", code, errOut)
		}
		a := parseAlloc(t, out)
		p := &a.Data.Profile
		t.Logf("%s: %d allocations in 3 s, %d lost, per site %v, top %+v", jdk.Name(), p.Count, p.Lost, p.PerSite, p.Classes)
		if a.Data.Mode != "all" || len(p.Classes) == 0 || p.Classes[0].Class != classA {
			t.Fatalf("want mode all and %s first: %s", classA, out)
		}
		nA, nBytes, nB := float64(count(p, classA)), float64(count(p, "byte[]")), float64(count(p, classB))
		if r := nA / nBytes; r < 3.8 || r > 4.2 {
			t.Errorf("%s/byte[] = %.2f, want 4", classA, r)
		}
		if r := nA / nB; r < 7.6 || r > 8.4 {
			t.Errorf("%s/%s = %.2f, want 8", classA, classB, r)
		}
		// The instance classes are the workload's alone (0.1%). byte[]s of other sizes come from the
		// workload's line a second and the JDK itself (lambda classes spun up by ASM, a few KB each):
		// 0.11% over 56 bytes once (JDK 17 and 21, a fresh-clone run), hence 1% for arrays.
		for _, c := range p.Classes {
			want, ok := map[string]float64{classA: 32, "byte[]": 56, classB: 16}[c.Class]
			tolerance := want / 1000
			if c.Class == "byte[]" {
				tolerance = want / 100
			}
			if ok && (c.Count == 0 || math.Abs(float64(c.Bytes)/float64(c.Count)-want) > tolerance) {
				t.Errorf("%s: %d bytes in %d allocations, want %.0f each", c.Class, c.Bytes, c.Count, want)
			}
		}
		if p.Lost != 0 {
			t.Errorf("%d allocations lost", p.Lost)
		}

		t.Run("reset", func(t *testing.T) { testReset(t, j) })
	})
}

// testReset sets DTraceAllocProbes back to false at run time and counts object__alloc firings for 2 s.
func testReset(t *testing.T, j *testutil.JVM) {
	vm, err := vmstructs.Open(context.Background(), j.PID)
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Close()
	w, err := vmstructs.OpenProcessMemoryWriter(j.PID)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if old, err := vm.SetBoolFlag(hotspot.AllocProbes, false, w); err != nil || !old {
		t.Fatalf("reset: %v, %v", old, err)
	}
	mods, err := usdt.Modules(context.Background(), j.PID)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := hotspot.TraceAlloc(context.Background(), j.PID, mods, hotspot.AllocOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	time.Sleep(2 * time.Second)
	_ = tr.Stop()
	p, err := tr.Profile()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: after DTraceAllocProbes was reset to false: %d firings in 2 s, per site %v, %d of %s",
		j.JDK.Name(), p.Count, p.PerSite, count(p, classA), classA)
	switch {
	case j.JDK.Feature < 21 && count(p, classA) > 100:
		t.Errorf("JDK %d: compiled code still fires after the reset", j.JDK.Feature)
	case j.JDK.Feature >= 21 && count(p, classA) == 0:
		t.Errorf("JDK %d: compiled code stopped firing after the reset (the package documentation says it does not)", j.JDK.Feature)
	}
}

// TestSwitchFlags runs jvmkit alloc --switch-flags against a JVM started without DTraceAllocProbes, as a
// separate process ended by --duration, SIGINT and SIGTERM: each time it reports a sample with the
// workload's most allocated class first, and the flag is false again afterwards.
func TestSwitchFlags(t *testing.T) {
	testutil.MustHaveBPF(t)
	bin := testutil.BuildTool(t, "cmd/jvmkit")
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		t.Parallel() // two JDKs at a time: what this checks does not depend on the machine's load
		testutil.SkipWithoutProbes(t, jdk)
		j := testutil.StartJVM(t, jdk, testutil.JVMOptions{Main: "Alloc", JVMArgs: []string{"-Xmx128m"}})
		if readFlag(t, j.PID, hotspot.AllocProbes) {
			t.Fatal("DTraceAllocProbes is on before the test")
		}
		// Without --switch-flags, alloc refuses and says what to do.
		if _, errOut, code := jvmkit(t, "alloc", strconv.Itoa(j.PID), "--duration", "1s"); code == 0 || !strings.Contains(errOut, "--switch-flags") {
			t.Errorf("alloc without the flag: exit status %d, %s", code, errOut)
		}
		for _, end := range []string{"duration", "SIGINT", "SIGTERM"} {
			t.Run(end, func(t *testing.T) {
				args := []string{"alloc", strconv.Itoa(j.PID), "--switch-flags", "--json"}
				if end == "duration" {
					args = append(args, "--duration", "2s")
				}
				var stdout, stderr testutil.SyncBuffer
				cmd := exec.Command(bin, args...)
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				cmd.SysProcAttr = &unix.SysProcAttr{Pdeathsig: unix.SIGKILL}
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				exited := make(chan error, 1)
				go func() { exited <- cmd.Wait() }()
				t.Cleanup(func() {
					_ = cmd.Process.Kill()
					<-exited
				})
				deadline := time.Now().Add(30 * time.Second)
				for !strings.Contains(stderr.String(), "counting allocations") {
					if time.Now().After(deadline) {
						t.Fatalf("jvmkit alloc did not start: %s", stderr.String())
					}
					time.Sleep(50 * time.Millisecond)
				}
				if !readFlag(t, j.PID, hotspot.AllocProbes) {
					t.Errorf("DTraceAllocProbes is off while alloc --switch-flags runs")
				}
				time.Sleep(2 * time.Second)
				switch end {
				case "SIGINT":
					_ = cmd.Process.Signal(unix.SIGINT)
				case "SIGTERM":
					_ = cmd.Process.Signal(unix.SIGTERM)
				}
				select {
				case err := <-exited:
					exited <- err
					if err != nil {
						t.Errorf("jvmkit alloc: %v\n%s", err, stderr.String())
					}
				case <-time.After(30 * time.Second):
					t.Fatalf("jvmkit alloc did not end: %s", stderr.String())
				}
				if readFlag(t, j.PID, hotspot.AllocProbes) {
					t.Errorf("DTraceAllocProbes is still on after jvmkit alloc ended (%s)", end)
				}
				a := parseAlloc(t, stdout.String())
				p := &a.Data.Profile
				t.Logf("%s, ended by %s: %d samples, top %+v", jdk.Name(), end, p.Count, p.Classes[:min(3, len(p.Classes))])
				if a.Data.Mode != "sample" || len(a.Data.Switched) != 1 || len(p.Classes) == 0 || p.Classes[0].Class != classA {
					t.Errorf("want a sample with %s first: %s", classA, stdout.String())
				}
			})
		}
	})
}

// TestSwitchFlagsWindows samples the Alloc workload with --switch-flags in TLABs of a fixed 8 KiB, the
// case where the classes of the objects that open new TLABs lock onto a few of the loop's (a million
// samples gave Alloc$AllocB, 4.17% of the bytes, none). With TLAB windows each sample's weight is spread
// over the start of the thread's previous TLAB, so the byte shares must be the workload's: AllocA 66.7%,
// byte[] 29.2%, AllocB 4.17%.
func TestSwitchFlagsWindows(t *testing.T) {
	testutil.MustHaveBPF(t)
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		t.Parallel()
		testutil.SkipWithoutProbes(t, jdk)
		j := testutil.StartJVM(t, jdk, testutil.JVMOptions{Main: "Alloc", JVMArgs: []string{"-Xmx128m", "-XX:TLABSize=8k", "-XX:-ResizeTLAB"}})
		out, errOut, code := jvmkit(t, "alloc", strconv.Itoa(j.PID), "--switch-flags", "--json", "--duration", "3s")
		if code != 0 {
			t.Fatalf("jvmkit alloc: exit status %d: %s", code, errOut)
		}
		a := parseAlloc(t, out)
		p := &a.Data.Profile
		if p.Sizes != hotspot.SizesWeights || p.Bytes == 0 {
			t.Fatalf("want weighted bytes: %s", out)
		}
		share := func(class string) float64 {
			for _, c := range p.Classes {
				if c.Class == class {
					return float64(c.Bytes) / float64(p.Bytes)
				}
			}
			return 0
		}
		t.Logf("%s: %d samples, %d spread over their window, %d not walked (%s), %d lost, %d without one (%d bytes); shares %s %.2f%%, byte[] %.2f%%, %s %.2f%%",
			jdk.Name(), p.Samples, p.Windows, p.WindowsFailed, p.WindowError, p.WindowsLost, p.WindowsNone, p.WindowsNoneBytes,
			classA, 100*share(classA), 100*share("byte[]"), classB, 100*share(classB))
		// At this rate (a new TLAB every few microseconds) the ring buffer drops windows, whose weight is
		// spread as the others': samples without a window are a thread's first and the first after a
		// collection.
		if windowed := p.Windows + p.WindowsFailed + p.WindowsLost; windowed < p.Samples*9/10 || p.Windows < 1000 {
			t.Errorf("%d of %d samples had a window (%d spread), want 90%% or more and 1,000 spread (%s)", windowed, p.Samples, p.Windows, p.WindowError)
		}
		for class, want := range map[string]float64{classA: 8 * 32. / 384, "byte[]": 2 * 56. / 384, classB: 16. / 384} {
			if got := share(class); math.Abs(got-want) > 0.1*want {
				t.Errorf("%s: %.2f%% of the bytes, want %.2f%% (within a tenth)", class, 100*got, 100*want)
			}
		}
		// The table: AllocB, which opens no TLAB, is there by its windows, its size known.
		table, errOut, code := jvmkit(t, "alloc", strconv.Itoa(j.PID), "--switch-flags", "--duration", "1s")
		if code != 0 {
			t.Fatalf("jvmkit alloc: exit status %d: %s", code, errOut)
		}
		var lineB string
		for line := range strings.SplitSeq(table, "\n") {
			if strings.HasSuffix(strings.TrimSpace(strings.TrimSuffix(line, "  (size unknown)")), classB) {
				lineB = line
			}
		}
		if f := strings.Fields(lineB); len(f) != 6 || strings.Contains(lineB, "unknown") || !strings.Contains(table, "windows") {
			t.Errorf("want a line for %s with samples, windows, bytes and shares:\n%s", classB, table)
		}
	})
}
