package usdt_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/jvmkit/jvmkit/internal/testutil"
	"github.com/jvmkit/jvmkit/usdt"
)

var stackFixture struct {
	once sync.Once
	exe  string
	err  error
}

// buildStackFixture compiles testdata/stackfx once per test binary.
func buildStackFixture(t testing.TB) string {
	t.Helper()
	testutil.MustHaveTool(t, "gcc")
	buildFixtures(t) // skips without <sys/sdt.h>
	stackFixture.once.Do(func() {
		stackFixture.exe = filepath.Join(sharedDir(t), "stackfx")
		cmd := exec.Command("gcc", "-O1", "-g", "-Wall", "-pthread", "-o", stackFixture.exe, "testdata/stackfx/stack.c")
		if b, err := cmd.CombinedOutput(); err != nil {
			stackFixture.err = fmt.Errorf("gcc: %w\n%s", err, b)
		}
	})
	if stackFixture.err != nil {
		t.Fatal(stackFixture.err)
	}
	return stackFixture.exe
}

// runStack sends a stack fixture command and returns the address of the array it printed.
func runStack(t *testing.T, fx *fixtureProc, cmd string) uint64 {
	t.Helper()
	fx.send(cmd)
	var addr uint64
	for {
		l := fx.line()
		if l == "done" {
			return addr
		}
		f := strings.Fields(l)
		if len(f) != 3 || f[0] != "stack" {
			t.Fatalf("fixture said %q", l)
		}
		v, err := strconv.ParseUint(f[1], 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		addr = v
	}
}

// TestStackCopy checks the register and stack copies against what the fixture has at the probe: a
// 256-byte local array with a known pattern, whose address the probe passes. Deep stacks are copied
// whole (StackSize bytes); shallow ones up to the end of the stack's mapping, in chunks.
func TestStackCopy(t *testing.T) {
	testutil.MustHaveBPF(t)
	fx := startFixture(t, buildStackFixture(t))
	ctx := context.Background()
	mods, err := usdt.Modules(ctx, fx.pid)
	if err != nil {
		t.Fatal(err)
	}
	var sites []usdt.Site
	for _, m := range mods {
		for _, p := range m.Probes {
			if p.Provider == "sfx" {
				sites = append(sites, usdt.Site{File: m.File, Probe: p})
			}
		}
	}
	if len(sites) != 1 {
		t.Fatalf("%d sfx:stack sites", len(sites))
	}
	const size = 16 << 10
	tr, err := usdt.Attach(ctx, sites, usdt.Options{PID: fx.pid, StackSize: size})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	cases := []struct {
		cmd   string
		depth int
		full  bool // the stack above sp is deeper than size: a full copy
	}{
		{"fire 0", 0, false},
		{"fire 40", 40, true}, // 40 frames of > 512 bytes
		{"thread 0", 0, false},
		{"thread 40", 40, true},
	}
	addrs := make([]uint64, len(cases))
	for i, c := range cases {
		addrs[i] = runStack(t, fx, c.cmd)
	}
	// The fixture says "done" after the probe fired: the uprobe wrote each event before that.
	if err := tr.Stop(); err != nil {
		t.Fatal(err)
	}
	events := readAll(t, tr)
	if len(events) != len(cases) {
		t.Fatalf("%d events, want %d", len(events), len(cases))
	}
	for i, c := range cases {
		ev := events[i]
		arr := addrs[i]
		if ev.Args[0] != arr || int(ev.Args[1]) != c.depth {
			t.Errorf("%s: arguments %#x %d, want %#x %d", c.cmd, ev.Args[0], ev.Args[1], arr, c.depth)
			continue
		}
		if len(ev.Regs) != 21 || ev.StackAddr != ev.Regs[19] {
			t.Errorf("%s: %d registers, stack at %#x", c.cmd, len(ev.Regs), ev.StackAddr)
			continue
		}
		n := len(ev.Stack)
		t.Logf("%s: sp %#x, ip %#x, %d bytes of stack copied, the array at sp+%d", c.cmd, ev.StackAddr, ev.Regs[16], n, arr-ev.StackAddr)
		switch {
		case c.full && n != size:
			t.Errorf("%s: %d bytes copied of a deep stack, want %d", c.cmd, n, size)
		case !c.full && (n == size || n == 0 || n%1024 != 0):
			t.Errorf("%s: %d bytes copied of a shallow stack, want a multiple of 1 KiB below %d", c.cmd, n, size)
		}
		if arr < ev.StackAddr || arr+256 > ev.StackAddr+uint64(n) {
			t.Errorf("%s: the array at %#x is not in the copy [%#x, %#x)", c.cmd, arr, ev.StackAddr, ev.StackAddr+uint64(n))
			continue
		}
		got := ev.Stack[arr-ev.StackAddr:][:256]
		for k := range got {
			if want := byte(k*7 + c.depth*13 + 1); got[k] != want {
				t.Errorf("%s: byte %d of the array is %#x, want %#x", c.cmd, k, got[k], want)
				break
			}
		}
	}
}

// TestSample checks that Options.Sample records about one firing in N.
func TestSample(t *testing.T) {
	testutil.MustHaveBPF(t)
	fx := startFixture(t, buildStackFixture(t))
	ctx := context.Background()
	mods, err := usdt.Modules(ctx, fx.pid)
	if err != nil {
		t.Fatal(err)
	}
	var sites []usdt.Site
	for _, m := range mods {
		for _, p := range m.Probes {
			if p.Provider == "sfx" {
				sites = append(sites, usdt.Site{File: m.File, Probe: p})
			}
		}
	}
	tr, err := usdt.Attach(ctx, sites, usdt.Options{PID: fx.pid, Sample: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	const fires = 800
	for range fires {
		runStack(t, fx, "fire 0")
	}
	if err := tr.Stop(); err != nil {
		t.Fatal(err)
	}
	n := len(readAll(t, tr))
	// Binomial(800, 1/4): mean 200, standard deviation 12.2; 6 deviations either way.
	t.Logf("%d of %d firings recorded with Sample 4", n, fires)
	if n < 127 || n > 273 {
		t.Errorf("%d of %d firings recorded, want about %d", n, fires, fires/4)
	}
}
