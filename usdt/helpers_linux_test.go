package usdt_test

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/internal/testutil"
	"github.com/jvmkit/jvmkit/usdt"
)

// fixture is a build of testdata/fixture.
type fixture struct {
	name  string
	exe   string // the program to run
	probe string // the ELF file with the probes: exe, or the shared library
}

var fixtures struct {
	once sync.Once
	list []fixture
	err  error
	skip string
}

// buildFixtures compiles the fixture three ways, once per test binary: PIE at -O2 (memory, SIB and
// %rip-relative arguments), non-PIE at -O0 (addresses differ from file offsets; %rbp-relative arguments),
// and with the probes in a shared library at -O2.
func buildFixtures(t testing.TB) []fixture {
	t.Helper()
	testutil.MustHaveTool(t, "gcc")
	fixtures.once.Do(func() {
		if _, err := os.Stat("/usr/include/x86_64-linux-gnu/sys/sdt.h"); err != nil {
			if _, err := os.Stat("/usr/include/sys/sdt.h"); err != nil {
				fixtures.skip = "the fixtures need <sys/sdt.h> (Debian package systemtap-sdt-dev)"
				return
			}
		}
		src, err := filepath.Abs("testdata/fixture")
		if err != nil {
			fixtures.err = err
			return
		}
		dir := filepath.Join(sharedDir(t), "fixtures")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			fixtures.err = err
			return
		}
		srcs := func(names ...string) []string {
			out := make([]string, len(names))
			for i, n := range names {
				out[i] = filepath.Join(src, n)
			}
			return out
		}
		out := func(name string) string { return filepath.Join(dir, name) }
		builds := [][]string{
			append([]string{"-O2", "-o", out("fx-pie-O2")}, srcs("fixture.c", "fixture_sema.c", "main.c")...),
			append([]string{"-O0", "-fno-pie", "-no-pie", "-o", out("fx-nopie-O0")}, srcs("fixture.c", "fixture_sema.c", "main.c")...),
			append([]string{"-O2", "-shared", "-fPIC", "-o", out("libfx.so")}, srcs("fixture.c", "fixture_sema.c")...),
			append([]string{"-O2", "-o", out("fx-lib"), "-L" + dir, "-Wl,-rpath," + dir}, append(srcs("main.c"), "-lfx")...),
		}
		for _, args := range builds {
			cmd := exec.Command("gcc", append([]string{"-g", "-Wall"}, args...)...)
			if b, err := cmd.CombinedOutput(); err != nil {
				fixtures.err = fmt.Errorf("gcc %s: %w\n%s", strings.Join(args, " "), err, b)
				return
			}
		}
		fixtures.list = []fixture{
			{"pie-O2", out("fx-pie-O2"), out("fx-pie-O2")},
			{"nopie-O0", out("fx-nopie-O0"), out("fx-nopie-O0")},
			{"lib-O2", out("fx-lib"), out("libfx.so")},
		}
	})
	if fixtures.skip != "" {
		testutil.Skipf(t, "%s", fixtures.skip)
	}
	if fixtures.err != nil {
		t.Fatal(fixtures.err)
	}
	return fixtures.list
}

// fixtureProc is a running fixture, driven through its stdin.
type fixtureProc struct {
	t     testing.TB
	cmd   *exec.Cmd
	pid   int
	in    io.WriteCloser
	lines chan string
	once  sync.Once
}

func startFixture(t testing.TB, exe string) *fixtureProc {
	t.Helper()
	cmd := exec.Command(exe)
	cmd.SysProcAttr = &unix.SysProcAttr{Pdeathsig: unix.SIGKILL}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	f := &fixtureProc{t: t, cmd: cmd, pid: cmd.Process.Pid, in: in, lines: make(chan string, 4096)}
	t.Cleanup(f.stop)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			f.lines <- sc.Text()
		}
		close(f.lines)
	}()
	if l := f.line(); l != "ready" {
		t.Fatalf("fixture %s said %q, want ready", exe, l)
	}
	return f
}

func (f *fixtureProc) stop() {
	f.once.Do(func() {
		_ = f.cmd.Process.Kill() // by pidfd
		_ = f.cmd.Wait()
	})
}

func (f *fixtureProc) send(cmd string) {
	f.t.Helper()
	if _, err := io.WriteString(f.in, cmd+"\n"); err != nil {
		f.t.Fatalf("fixture %d: %v", f.pid, err)
	}
}

func (f *fixtureProc) line() string {
	f.t.Helper()
	select {
	case l, ok := <-f.lines:
		if !ok {
			f.t.Fatalf("fixture %d: stdout closed", f.pid)
		}
		return l
	case <-time.After(20 * time.Second):
		f.t.Fatalf("fixture %d: no output for 20s", f.pid)
	}
	return ""
}

// fire runs one round and returns the lines it printed, one per probe fired.
func (f *fixtureProc) fire(n int) []string {
	f.t.Helper()
	f.send("fire " + strconv.Itoa(n))
	var out []string
	for {
		l := f.line()
		if l == "done" {
			return out
		}
		out = append(out, l)
	}
}

// sema returns the value of fx:sema's semaphore in the process.
func (f *fixtureProc) sema() int {
	f.t.Helper()
	f.send("sema")
	l := f.line()
	v, err := strconv.Atoi(strings.TrimPrefix(l, "sema "))
	if err != nil {
		f.t.Fatalf("fixture %d: %q", f.pid, l)
	}
	return v
}

// quit ends the fixture and waits for it.
func (f *fixtureProc) quit() {
	f.t.Helper()
	f.send("quit")
	f.once.Do(func() {
		if err := f.cmd.Wait(); err != nil {
			f.t.Errorf("fixture %d: %v", f.pid, err)
		}
	})
}

// readelfNote is a stapsdt note as readelf -n prints it.
type readelfNote struct {
	provider, name       string
	location, base, sema uint64
	args                 string
}

func readelfNotes(t testing.TB, path string) []readelfNote {
	t.Helper()
	readelf := testutil.MustHaveTool(t, "readelf")
	out, err := exec.Command(readelf, "-n", "--wide", path).Output()
	if err != nil {
		t.Fatalf("readelf -n %s: %v", path, err)
	}
	var notes []readelfNote
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "stapsdt") {
			// With --wide the first field follows the note's header on its line, after a tab.
			line = strings.TrimSpace(line[strings.LastIndexByte(line, '\t')+1:])
		}
		key, val, _ := strings.Cut(line, ":")
		val = strings.TrimSpace(val)
		switch key {
		case "Provider":
			notes = append(notes, readelfNote{provider: val})
		case "Name", "Location", "Arguments":
			if len(notes) == 0 {
				t.Fatalf("readelf: %q before a Provider line", line)
			}
			n := &notes[len(notes)-1]
			switch key {
			case "Name":
				n.name = val
			case "Arguments":
				n.args = val
			case "Location":
				// Location: 0x..., Base: 0x..., Semaphore: 0x...
				if _, err := fmt.Sscanf(line, "Location: %v, Base: %v, Semaphore: %v", &n.location, &n.base, &n.sema); err != nil {
					t.Fatalf("readelf: %q: %v", line, err)
				}
			}
		}
	}
	return notes
}

// checkReadelf compares ParseNotes with readelf -n on a file, checks that each parsed argument formats back
// to a spec that parses the same, and that each site's file offset holds a nop. It returns the probes.
func checkReadelf(t *testing.T, path string) []usdt.Probe {
	t.Helper()
	probes, err := usdt.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	notes := readelfNotes(t, path)
	if len(probes) != len(notes) || len(notes) == 0 {
		t.Fatalf("%s: %d probes, readelf shows %d notes", path, len(probes), len(notes))
	}
	ef, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	var sbase uint64
	if s := ef.Section(".stapsdt.base"); s != nil {
		sbase = s.Addr
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	bad := 0
	for i, n := range notes {
		p := probes[i]
		adjust := uint64(0)
		if sbase != 0 && n.base != 0 {
			adjust = sbase - n.base
		}
		sema := n.sema
		if sema != 0 {
			sema += adjust
		}
		if p.Provider != n.provider || p.Name != n.name || p.PC != n.location+adjust || p.Base != n.base ||
			p.Semaphore != sema || p.ArgString != n.args {
			t.Errorf("note %d: parsed %s pc=%#x base=%#x sema=%#x args=%q; readelf %s:%s %#x %#x %#x %q",
				i, &p, p.PC, p.Base, p.Semaphore, p.ArgString, n.provider, n.name, n.location, n.base, n.sema, n.args)
			bad++
		}
		if p.Err != nil {
			t.Errorf("note %d: %v", i, p.Err)
			bad++
			continue
		}
		specs := strings.Fields(n.args)
		if p.Machine == elf.EM_AARCH64 {
			specs = nil // spaces inside brackets; covered by the unit tests
		}
		if specs != nil && len(specs) != len(p.Args) {
			t.Errorf("note %d %s: %d arguments parsed from %q", i, &p, len(p.Args), n.args)
		}
		for j, a := range p.Args {
			again, err := usdt.ParseArg(p.Machine, a.Format(p.Machine))
			if err == nil && a.Symbol != "" {
				again.SymbolAddr = a.SymbolAddr
			}
			if err != nil || again != a {
				t.Errorf("note %d %s argument %d %+v: formats as %q, parses as %+v (%v)", i, &p, j, a, a.Format(p.Machine), again, err)
			}
		}
		if p.Machine == elf.EM_X86_64 && (p.FileOffset == 0 || p.FileOffset >= uint64(len(raw)) || raw[p.FileOffset] != 0x90) {
			t.Errorf("note %d %s: file offset %#x does not hold the probe's nop", i, &p, p.FileOffset)
		}
		if p.Semaphore != 0 {
			s := ef.Section(".probes")
			if s == nil || p.SemaphoreOffset < s.Offset || p.SemaphoreOffset >= s.Offset+s.Size {
				t.Errorf("note %d %s: semaphore file offset %#x is not in .probes", i, &p, p.SemaphoreOffset)
			}
		}
		if bad > 10 {
			t.Fatal("too many differences")
		}
	}
	return probes
}

// fixtureSites selects the fx probes of a module of a fixture process, with the fixture's string arguments.
func fixtureSites(t testing.TB, mods []usdt.Module, file string, names ...string) []usdt.Site {
	t.Helper()
	want := make(map[string]bool)
	for _, n := range names {
		want[n] = true
	}
	var sites []usdt.Site
	for _, m := range mods {
		if m.Path != file {
			continue
		}
		for _, p := range m.Probes {
			if p.Provider != "fx" || len(names) > 0 && !want[p.Name] {
				continue
			}
			s := usdt.Site{File: m.File, Probe: p}
			switch p.Name {
			case "str", "longstr":
				s.Strings = []usdt.StringArg{{Ptr: 0, Len: 1}}
			case "cstr":
				s.Strings = []usdt.StringArg{{Ptr: 0, Len: -1}}
			case "badstr":
				s.Strings = []usdt.StringArg{{Ptr: 0, Len: 1}}
			}
			sites = append(sites, s)
		}
	}
	if len(sites) == 0 {
		t.Fatalf("no fx probes of %s among the process's modules %v", file, mods)
	}
	return sites
}

// checkValues compares the values of a probe firing with the line the fixture printed for it:
// "fx:<probe> <arg>... [|<string>]...". values are the decoded arguments (int64, uint64, float32,
// float64); strings are the copied strings and whether each was truncated.
func checkValues(name string, values []any, strs []string, truncated []bool, line string) error {
	parts := strings.Split(line, " |")
	fields := strings.Fields(parts[0])
	if len(fields) == 0 || fields[0] != name {
		return fmt.Errorf("event %s, fixture printed %q", name, line)
	}
	fields = fields[1:]
	if len(fields) != len(values) {
		return fmt.Errorf("%s: %d values, fixture printed %q", name, len(values), line)
	}
	for i, v := range values {
		tok := fields[i]
		ok := false
		switch v := v.(type) {
		case int64:
			w, err := strconv.ParseInt(tok, 10, 64)
			ok = err == nil && w == v
		case uint64:
			w, err := strconv.ParseUint(tok, 10, 64)
			ok = err == nil && w == v
		case float32:
			w, err := strconv.ParseFloat(tok, 64)
			ok = err == nil && float32(w) == v
		case float64:
			w, err := strconv.ParseFloat(tok, 64)
			ok = err == nil && w == v
		}
		if !ok {
			return fmt.Errorf("%s argument %d: traced %v (%T), fixture passed %s (line %q)", name, i, v, v, tok, line)
		}
	}
	want := parts[1:]
	if len(want) != len(strs) {
		return fmt.Errorf("%s: %d strings traced, fixture printed %d", name, len(strs), len(want))
	}
	for i, s := range strs {
		switch {
		case truncated[i] && (len(s) >= len(want[i]) || !strings.HasPrefix(want[i], s)):
			return fmt.Errorf("%s string %d: traced %q (truncated), fixture passed %q", name, i, s, want[i])
		case !truncated[i] && s != want[i]:
			return fmt.Errorf("%s string %d: traced %q, fixture passed %q", name, i, s, want[i])
		}
	}
	return nil
}

// checkEvent is checkValues for an Event.
func checkEvent(ev usdt.Event, line string) error {
	values := make([]any, len(ev.Args))
	for i, raw := range ev.Args {
		values[i] = ev.Probe.Args[i].Decode(raw)
	}
	strs := make([]string, len(ev.Strings))
	trunc := make([]bool, len(ev.Strings))
	for i, s := range ev.Strings {
		strs[i], trunc[i] = string(s.Data), s.Truncated
		if s.Fault {
			strs[i] = "<fault>"
		}
	}
	if ev.Faults != 0 {
		return fmt.Errorf("%s: arguments %b could not be read", ev.Probe, ev.Faults)
	}
	return checkValues(ev.Probe.String(), values, strs, trunc, line)
}
