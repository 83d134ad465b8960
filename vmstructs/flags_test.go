package vmstructs

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/jvmkit/jvmkit/internal/testutil"
)

// flagTestArgs set flags of every origin and value type that VM.flags -all distinguishes, and unlock
// the diagnostic and experimental flags so that jcmd prints them too.
var flagTestArgs = []string{
	"-Xmx96m", "-XX:+UseParallelGC", "-XX:CICompilerCount=2", "-XX:ParallelGCThreads=1",
	"-XX:+UnlockDiagnosticVMOptions", "-XX:+UnlockExperimentalVMOptions",
	"-XX:NewSize=500m",                                               // {command line, ergonomic}: larger than the heap
	"-XX:CompileCommand=quiet", "-XX:CompileCommand=exclude,Foo.bar", // a two-line ccstrlist
	"-XX:HeapDumpPath=/var/tmp/with space/x", // a ccstr with a space
	"-XX:MaxRAMPercentage=12.5", "-XX:CompileThresholdScaling=0.75",
	"-XX:-PrintFlagsFinal",
}

// jcmdFlag is one flag as `jcmd <pid> VM.flags -all` prints it.
type jcmdFlag struct {
	Type, Value, Kinds, Origin string
}

var (
	jcmdFlagLine = regexp.MustCompile(`^\s*(\S+) (\S+)\s+= ?(.*?)\s+\{([^}]*)\}\s+\{([^}]*)\}$`)
	jcmdFlagHead = regexp.MustCompile(`^\s*(\S+) (\S+)\s+= ?(.*?)\s*$`) // first line of a multi-line value
	jcmdFlagMore = regexp.MustCompile(`^\s+(\S+)\s+\+= ?(.*?)(?:\s+\{([^}]*)\}\s+\{([^}]*)\})?\s*$`)
)

// parseVMFlags parses the output of VM.flags -all. A ccstrlist with several values is printed as a
// "=" line and "+=" lines, the last of which carries the kinds and the origin.
func parseVMFlags(out string) (map[string]jcmdFlag, error) {
	flags := map[string]jcmdFlag{}
	var pending string // name of a multi-line value being read
	for _, line := range strings.Split(out, "\n") {
		if pending != "" {
			m := jcmdFlagMore.FindStringSubmatch(line)
			if m == nil || m[1] != pending {
				return nil, fmt.Errorf("continuation of %s expected: %q", pending, line)
			}
			f := flags[pending]
			f.Value += "\n" + m[2]
			if m[3] != "" || m[4] != "" {
				f.Kinds, f.Origin = m[3], m[4]
				pending = ""
			}
			flags[m[1]] = f
			continue
		}
		if m := jcmdFlagLine.FindStringSubmatch(line); m != nil {
			flags[m[2]] = jcmdFlag{Type: m[1], Value: m[3], Kinds: m[4], Origin: m[5]}
			continue
		}
		if m := jcmdFlagHead.FindStringSubmatch(line); m != nil {
			flags[m[2]] = jcmdFlag{Type: m[1], Value: m[3]}
			pending = m[2]
		}
	}
	if pending != "" {
		return nil, fmt.Errorf("%s: output ends in a multi-line value", pending)
	}
	return flags, nil
}

func TestParseVMFlags(t *testing.T) {
	out := `1234:
[Global flags]
     bool AOTClassLinking                          = false                                     {product} {default}
ccstrlist CompileCommand                           = quiet
          CompileCommand                          += exclude,Foo.bar                           {product} {command line}
    ccstr ErrorFile                                =                                           {product} {default}
    ccstr HeapDumpPath                             = /tmp/with space/x                      {manageable} {command line}
   size_t NewSize                                  = 95420416                                  {product} {command line, ergonomic}
`
	got, err := parseVMFlags(out)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]jcmdFlag{
		"AOTClassLinking": {"bool", "false", "product", "default"},
		"CompileCommand":  {"ccstrlist", "quiet\nexclude,Foo.bar", "product", "command line"},
		"ErrorFile":       {"ccstr", "", "product", "default"},
		"HeapDumpPath":    {"ccstr", "/tmp/with space/x", "manageable", "command line"},
		"NewSize":         {"size_t", "95420416", "product", "command line, ergonomic"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Error(d)
	}
}

func jcmd(t testing.TB, jdk testutil.JDK, pid int, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, jdk.Bin("jcmd"), append([]string{strconv.Itoa(pid)}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("jcmd %d %v: %v\n%s", pid, args, err, out)
	}
	return string(out)
}

func jcmdFlags(t testing.TB, jdk testutil.JDK, pid int) map[string]jcmdFlag {
	t.Helper()
	flags, err := parseVMFlags(jcmd(t, jdk, pid, "VM.flags", "-all"))
	if err != nil {
		t.Fatal(err)
	}
	if len(flags) < 400 {
		t.Fatalf("jcmd VM.flags -all: only %d flags", len(flags))
	}
	return flags
}

func openFlagsJVM(t *testing.T, jdk testutil.JDK, args ...string) (*testutil.JVM, *JVM) {
	t.Helper()
	testutil.MustHaveRoot(t)
	jvm := testutil.StartJVM(t, jdk, testutil.JVMOptions{JVMArgs: args})
	vm, err := Open(context.Background(), jvm.PID)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { vm.Close() })
	return jvm, vm
}

func flagMap(flags []Flag) map[string]Flag {
	m := make(map[string]Flag, len(flags))
	for _, f := range flags {
		m[f.Name] = f
	}
	return m
}

func (f Flag) jcmdView() jcmdFlag {
	return jcmdFlag{Type: f.Type, Value: f.Value, Kinds: strings.Join(f.Kinds, " "), Origin: f.Origin}
}

// TestFlagsMatchJcmd compares every flag that VM.flags -all prints with Flags(): type, value, kinds and
// origin, with diagnostic and experimental flags unlocked. It also derives each kind's bit from the
// data and checks it against the layout table, and checks that the flags jcmd leaves out are exactly
// the constant (develop, notproduct) ones.
func TestFlagsMatchJcmd(t *testing.T) {
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		jvm, vm := openFlagsJVM(t, jdk, flagTestArgs...)
		before, err := vm.Flags()
		if err != nil {
			t.Fatal(err)
		}
		cliBefore := cliFlags(t, jvm.PID)
		jout := jcmd(t, jdk, jvm.PID, "VM.flags", "-all")
		want, err := parseVMFlags(jout)
		if err != nil {
			t.Fatal(err)
		}
		cliAfter := cliFlags(t, jvm.PID)
		compareFlagLines(t, jout, cliBefore, cliAfter)
		after, err := vm.Flags()
		if err != nil {
			t.Fatal(err)
		}
		ours, ours2 := flagMap(before), flagMap(after)
		if len(ours) != len(before) {
			t.Errorf("%d flags, %d names: duplicates", len(before), len(ours))
		}
		if !slices.IsSortedFunc(before, func(a, b Flag) int { return strings.Compare(a.Name, b.Name) }) {
			t.Error("Flags() is not sorted by name")
		}
		var mismatches, changing int
		types := map[string]int{}
		for name, w := range want {
			f, ok := ours[name]
			if !ok {
				t.Errorf("%s: jcmd lists it, Flags() does not", name)
				continue
			}
			types[w.Type]++
			if got := f.jcmdView(); got != w {
				// A value the JVM changed while jcmd ran differs between our two reads.
				if g2 := ours2[name].jcmdView(); g2 == w || g2 != got {
					changing++
					t.Logf("%s changed while jcmd ran: %+v, then %+v; jcmd %+v", name, got, g2, w)
					continue
				}
				mismatches++
				t.Errorf("%s: Flags() %+v, jcmd %+v", name, got, w)
			}
			checkTyped(t, f)
		}
		// The flags jcmd leaves out must be the ones a product build compiles as constants.
		var hidden int
		for _, f := range before {
			if _, ok := want[f.Name]; ok {
				continue
			}
			hidden++
			if !f.hasKind("develop") && !f.hasKind("notproduct") {
				t.Errorf("%s (%v) is not printed by jcmd but is neither develop nor notproduct", f.Name, f.Kinds)
			}
		}
		t.Logf("%s: %d flags read, %d printed by jcmd and compared (%v), %d mismatches, %d changed meanwhile, %d develop/notproduct not printed by jcmd",
			jdk.Name(), len(before), len(want), types, mismatches, changing, hidden)
		logDerivedKindBits(t, before, want)

		// Flag(name) agrees with Flags().
		for _, name := range []string{"UseParallelGC", "CompileCommand", "HeapDumpPath", "MaxRAMPercentage", "NewSize", "CICompilerCount"} {
			f, err := vm.Flag(name)
			if err != nil {
				t.Errorf("Flag(%s): %v", name, err)
				continue
			}
			if d := cmp.Diff(ours[name], f, cmp.AllowUnexported(Flag{})); d != "" {
				t.Errorf("Flag(%s) differs from Flags(): %s", name, d)
			}
		}
		if _, err := vm.Flag("NoSuchFlagAtAll"); !errors.Is(err, ErrNoSuchFlag) {
			t.Errorf("Flag(NoSuchFlagAtAll): %v, want ErrNoSuchFlag", err)
		}
	})
}

// cliFlags runs `jvmkit flags pid`.
func cliFlags(t *testing.T, pid int) string {
	t.Helper()
	out, err := exec.Command(testutil.BuildTool(t, "cmd/jvmkit"), "flags", strconv.Itoa(pid)).Output()
	if err != nil {
		t.Fatalf("jvmkit flags %d: %v", pid, err)
	}
	return string(out)
}

// compareFlagLines checks that `jvmkit flags` prints the lines of VM.flags -all byte for byte and in
// the same order, once the flags jcmd leaves out are dropped. A line that differs is an error only when
// our runs before and after jcmd agree (else the JVM changed the value meanwhile).
func compareFlagLines(t *testing.T, jout, before, after string) {
	t.Helper()
	want := strings.Split(strings.TrimSuffix(jout, "\n"), "\n")
	if len(want) < 3 {
		t.Fatalf("VM.flags -all printed %q", jout)
	}
	want = want[2:] // "<pid>:" and "[Global flags]"
	names := map[string]bool{}
	for _, l := range want {
		names[flagLineName(l)] = true
	}
	keep := func(out string) []string {
		var lines []string
		for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			if names[flagLineName(l)] {
				lines = append(lines, l)
			}
		}
		return lines
	}
	got, got2 := keep(before), keep(after)
	if len(got) != len(want) || len(got2) != len(want) {
		t.Errorf("jvmkit flags has %d (then %d) of the flags VM.flags -all prints, jcmd %d lines:\n%s",
			len(got), len(got2), len(want), cmp.Diff(want, got))
		return
	}
	var changed int
	for i := range want {
		switch {
		case got[i] == want[i]:
		case got[i] != got2[i] || got2[i] == want[i]:
			changed++
		default:
			t.Errorf("line %d differs:\njcmd:   %q\njvmkit: %q", i+3, want[i], got[i])
		}
	}
	t.Logf("jvmkit flags: %d lines equal VM.flags -all's in order, %d changed while jcmd ran", len(want)-changed, changed)
}

// flagLineName is the flag a VM.flags line is about: "type Name = value ..." or "Name += value ...".
func flagLineName(l string) string {
	f := strings.Fields(l)
	switch {
	case len(f) >= 2 && f[1] == "+=":
		return f[0]
	case len(f) >= 2:
		return f[1]
	}
	return ""
}

// checkTyped checks that exactly the typed value that belongs to the type is set and agrees with Value.
func checkTyped(t *testing.T, f Flag) {
	t.Helper()
	var set []string
	var text string
	if f.Bool != nil {
		set, text = append(set, "bool"), strconv.FormatBool(*f.Bool)
	}
	if f.Int != nil {
		set, text = append(set, "int"), strconv.FormatInt(*f.Int, 10)
	}
	if f.Uint != nil {
		set, text = append(set, "uint"), strconv.FormatUint(*f.Uint, 10)
	}
	if f.Double != nil {
		set, text = append(set, "double"), strconv.FormatFloat(*f.Double, 'f', 6, 64)
	}
	if f.Str != nil {
		set, text = append(set, "str"), *f.Str
	}
	want := map[string]string{"bool": "bool", "int": "int", "intx": "int", "uint": "uint", "uintx": "uint",
		"uint64_t": "uint", "size_t": "uint", "double": "double", "ccstr": "str", "ccstrlist": "str"}[f.Type]
	switch {
	case len(set) == 0 && (want == "str" && f.Value == ""):
		// A null ccstr.
	case len(set) != 1 || set[0] != want:
		t.Errorf("%s (%s): typed values %v", f.Name, f.Type, set)
	case text != f.Value:
		t.Errorf("%s: typed value %q, Value %q", f.Name, text, f.Value)
	}
}

// logDerivedKindBits derives, for each kind name jcmd prints, the one bit that all flags of that kind
// have and no other flag has, and checks it against the layout Flags() used.
func logDerivedKindBits(t *testing.T, flags []Flag, want map[string]jcmdFlag) {
	t.Helper()
	all, without := map[string]uint64{}, map[string]uint64{}
	names := map[string]bool{}
	for _, w := range want {
		for _, k := range strings.Fields(w.Kinds) {
			names[k] = true
		}
	}
	for _, f := range flags {
		w, ok := want[f.Name]
		if !ok {
			continue
		}
		kinds := strings.Fields(w.Kinds)
		for k := range names {
			if slices.Contains(kinds, k) {
				if _, seen := all[k]; !seen {
					all[k] = ^uint64(0)
				}
				all[k] &= f.bits
			} else {
				without[k] |= f.bits
			}
		}
	}
	layout := map[string]uint64{}
	for _, kl := range kindLayouts {
		if l := kl.kinds; decodeKindsMatches(flags, l) {
			for _, k := range l {
				layout[k.name] = k.bit
			}
		}
	}
	var derived []string
	for k := range names {
		bit := all[k] &^ without[k] & 0x1fff0 // kind bits only: 0-3 are the origin, 17 the command-line mark
		derived = append(derived, fmt.Sprintf("%s=%#x", k, bit))
		if bit != layout[k] {
			t.Errorf("kind %s: the data says bit %#x, the layout %#x", k, bit, layout[k])
		}
	}
	slices.Sort(derived)
	t.Logf("kind bits derived from VM.flags -all: %s", strings.Join(derived, " "))
}

func decodeKindsMatches(flags []Flag, l []kindBit) bool {
	for _, f := range flags {
		if f.Name == kindAnchor {
			return slices.Equal(decodeKinds(l, f.bits), f.Kinds)
		}
	}
	return false
}

// setFlag is the flag the write tests flip: manageable, read at run time (by the SIGQUIT thread dump,
// to add the locked java.util.concurrent locks), and harmless either way.
const setFlag = "PrintConcurrentLocks"

func TestSetBoolFlag(t *testing.T) {
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		jvm, vm := openFlagsJVM(t, jdk, "-Xmx64m")
		w, err := OpenProcessMemoryWriter(jvm.PID)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		orig := jcmdFlags(t, jdk, jvm.PID)[setFlag]
		if orig.Type != "bool" || orig.Kinds != "manageable" {
			t.Fatalf("jcmd shows %s as %+v", setFlag, orig)
		}
		initial := orig.Value == "true"

		old, err := vm.SetBoolFlag(setFlag, !initial, w)
		if err != nil {
			t.Fatal(err)
		}
		if old != initial {
			t.Errorf("SetBoolFlag returned old %t, jcmd showed %t", old, initial)
		}
		if got := jcmdFlags(t, jdk, jvm.PID)[setFlag]; got.Value != strconv.FormatBool(!initial) || got.Origin != orig.Origin {
			t.Errorf("after setting %t, jcmd shows %+v (origin must stay %q)", !initial, got, orig.Origin)
		}
		if f, err := vm.Flag(setFlag); err != nil || *f.Bool != !initial {
			t.Errorf("Flag after set: %+v %v", f, err)
		}
		// Restoring is setting the old value.
		back, err := vm.SetBoolFlag(setFlag, old, w)
		if err != nil || back != !initial {
			t.Fatalf("restore: old %t, %v", back, err)
		}
		if got := jcmdFlags(t, jdk, jvm.PID)[setFlag]; got != orig {
			t.Errorf("after restoring, jcmd shows %+v, want %+v", got, orig)
		}
		// Setting the current value writes nothing and reports it.
		if old, err := vm.SetBoolFlag(setFlag, initial, w); err != nil || old != initial {
			t.Errorf("no-op set: %t %v", old, err)
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d/exe", jvm.PID)); err != nil {
			t.Fatalf("JVM gone after the writes: %v", err)
		}
		if out := jcmd(t, jdk, jvm.PID, "VM.version"); !strings.Contains(out, "JDK") {
			t.Errorf("JVM does not answer after the writes: %s", out)
		}

		// Refusals.
		flags, err := vm.Flags()
		if err != nil {
			t.Fatal(err)
		}
		var develop string
		for _, f := range flags {
			if f.Type == "bool" && f.hasKind("develop") {
				develop = f.Name
				break
			}
		}
		for _, c := range []struct {
			name string
			want error
		}{
			{"MaxHeapSize", ErrFlagNotWritable},    // size_t
			{"HeapDumpPath", ErrFlagNotWritable},   // ccstr
			{"CompileCommand", ErrFlagNotWritable}, // ccstrlist
			{develop, ErrFlagNotWritable},          // a constant in product builds
			{"NoSuchFlagAtAll", ErrNoSuchFlag},
		} {
			before, _ := vm.Flag(c.name)
			if _, err := vm.SetBoolFlag(c.name, true, w); !errors.Is(err, c.want) {
				t.Errorf("SetBoolFlag(%s): %v, want %v", c.name, err, c.want)
			} else {
				t.Logf("SetBoolFlag(%s): %v", c.name, err)
			}
			if after, _ := vm.Flag(c.name); after.Value != before.Value {
				t.Errorf("%s changed from %q to %q although refused", c.name, before.Value, after.Value)
			}
		}
		// A writer for another process.
		sleep := testutil.StartProcess(t, "sleep", "600")
		other, err := OpenProcessMemoryWriter(sleep.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		if _, err := vm.SetBoolFlag(setFlag, !initial, other); err == nil {
			t.Error("SetBoolFlag with a writer for another process succeeded")
		}
		if _, err := vm.SetBoolFlag(setFlag, !initial, nil); err == nil {
			t.Error("SetBoolFlag without a writer succeeded")
		}
		// The address guard: the flag's byte passes; code, read-only data and the Java heap do not.
		f, _ := vm.Flag(setFlag)
		if err := checkFlagAddr(jvm.PID, vm.LibJVM, f.Addr); err != nil {
			t.Errorf("%s at %#x: %v", setFlag, f.Addr, err)
		}
		rel, _ := vm.Table.Field("Abstract_VM_Version", "_s_vm_release")
		relPtr, _ := vm.r.u64(rel.Address) // the release string is in .rodata
		heapStart := uint64(0)
		if uh, ok := vm.Table.Field("Universe", "_collectedHeap"); ok {
			if p, err := vm.r.u64(uh.Address); err == nil {
				heapStart = p // the CollectedHeap object: C heap, writable but not libjvm's
			}
		}
		code, ok := vm.Symbol("JNI_CreateJavaVM")
		if !ok || heapStart == 0 {
			t.Fatalf("JNI_CreateJavaVM %#x, CollectedHeap %#x", code, heapStart)
		}
		dev, _ := vm.Flag(develop) // a const variable: read-only data
		for what, a := range map[string]uint64{"code": code, "rodata": relPtr, "C heap": heapStart, "null": 0, "develop flag": dev.Addr} {
			if err := checkFlagAddr(jvm.PID, vm.LibJVM, a); !errors.Is(err, ErrFlagNotWritable) {
				t.Errorf("checkFlagAddr(%s %#x): %v, want ErrFlagNotWritable", what, a, err)
			}
		}
		if got := jcmdFlags(t, jdk, jvm.PID)[setFlag]; got != orig {
			t.Errorf("at the end, jcmd shows %+v, want %+v", got, orig)
		}
	})
}

func TestFlagsNotJVM(t *testing.T) {
	p := testutil.StartProcess(t, "sleep", "600")
	if _, err := Open(context.Background(), p.Process.Pid); !errors.Is(err, ErrNotJVM) {
		t.Errorf("Open(sleep): %v, want ErrNotJVM", err)
	}
	if _, err := OpenProcessMemoryWriter(1 << 30); !errors.Is(err, ErrProcessGone) {
		t.Errorf("OpenProcessMemoryWriter(no such pid): %v, want ErrProcessGone", err)
	}
}

// fakeFlag is a flag for a recorded JVMFlag table.
type fakeFlag struct {
	name  string
	typ   int64
	bits  uint64
	value []byte // the bytes at _addr; for strings, the string (NUL added)
	isStr bool
	noVal bool   // _addr is null
	addr  uint64 // _addr, when not 0: unmapped
}

// fakeFlagJVM records a JDK 25-shaped JVMFlag table (stride 24: _addr +0, _name +8, _flags +16 as
// JVMFlag::Flags of 4 bytes, _type +20 as int) and the version strings in memory. omit drops one
// field or type from the table.
func fakeFlagJVM(flags []fakeFlag, omit string) *JVM {
	img := newFakeImage()
	var arr []byte
	for _, f := range flags {
		e := make([]byte, 24)
		if f.addr != 0 {
			binary.LittleEndian.PutUint64(e[0:], f.addr)
		} else if !f.noVal {
			v := f.value
			if f.isStr {
				v = binary.LittleEndian.AppendUint64(nil, img.str(string(f.value)))
			}
			binary.LittleEndian.PutUint64(e[0:], img.alloc(v))
		}
		binary.LittleEndian.PutUint64(e[8:], img.str(f.name))
		binary.LittleEndian.PutUint32(e[16:], uint32(f.bits))
		binary.LittleEndian.PutUint32(e[20:], uint32(f.typ))
		arr = append(arr, e...)
	}
	arr = append(arr, make([]byte, 24)...) // HotSpot's terminating entry, counted in numFlags
	return recordedFlagJVM(img, arr, uint64(len(flags)+1), omit)
}

// recordedFlagJVM adds the tables that describe a JVMFlag array arr of count entries to img.
func recordedFlagJVM(img *fakeImage, arr []byte, count uint64, omit string) *JVM {
	le := func(v uint64, n int) []byte { return binary.LittleEndian.AppendUint64(nil, v)[:n] }
	arrAddr := img.alloc(arr)
	fields := []Field{
		{Type: "JVMFlag", Name: "flags", TypeString: "JVMFlag*", Static: true, Address: img.alloc(le(arrAddr, 8))},
		{Type: "JVMFlag", Name: "numFlags", TypeString: "size_t", Static: true, Address: img.alloc(le(count, 8))},
		{Type: "JVMFlag", Name: "_addr", TypeString: "", Offset: 0},
		{Type: "JVMFlag", Name: "_name", TypeString: "const char*", Offset: 8},
		{Type: "JVMFlag", Name: "_flags", TypeString: "JVMFlag::Flags", Offset: 16},
		{Type: "JVMFlag", Name: "_type", TypeString: "int", Offset: 20},
		{Type: "Abstract_VM_Version", Name: "_s_vm_release", TypeString: "const char*", Static: true, Address: img.alloc(le(img.str("25.0.3+9-LTS"), 8))},
		{Type: "Abstract_VM_Version", Name: "_vm_major_version", TypeString: "int", Static: true, Address: img.alloc(le(25, 4))},
	}
	types := []Type{
		{Name: "bool", Size: 1}, {Name: "int", Size: 4}, {Name: "uint", Size: 4}, {Name: "intx", Size: 8},
		{Name: "uintx", Size: 8}, {Name: "uint64_t", Size: 8}, {Name: "size_t", Size: 8},
		{Name: "JVMFlag", Size: 24}, {Name: "JVMFlag::Flags", Size: 4}, {Name: "JVMFlag*", Size: 8},
	}
	ints := []Constant{{"JVMFlag::VALUE_ORIGIN_MASK", 15}, {"JVMFlag::WAS_SET_ON_COMMAND_LINE", 1 << 17}}
	for i, o := range []string{"DEFAULT", "COMMAND_LINE", "ENVIRON_VAR", "CONFIG_FILE", "MANAGEMENT", "ERGONOMIC", "ATTACH_ON_DEMAND", "INTERNAL", "JIMAGE_RESOURCE"} {
		ints = append(ints, Constant{"JVMFlagOrigin::" + o, int64(i)})
	}
	fields = slices.DeleteFunc(fields, func(f Field) bool { return f.Type+"::"+f.Name == omit })
	types = slices.DeleteFunc(types, func(ty Type) bool { return ty.Name == omit })
	return &JVM{Mem: &img.mem, Table: NewTable(fields, types, ints, nil), r: reader{&img.mem}}
}

func f64(v float64) []byte { return binary.LittleEndian.AppendUint64(nil, math.Float64bits(v)) }

func sampleFlags() []fakeFlag {
	const product, manageable, develop, lp64, c2 = 1 << 4, 1 << 5, 1 << 8, 1 << 13, 1 << 11
	return []fakeFlag{
		{name: "UseCompressedOops", typ: 0, bits: product | lp64 | 5, value: []byte{1}},
		{name: "PrintConcurrentLocks", typ: 0, bits: manageable, value: []byte{0}},
		{name: "ThreadPriorityPolicy", typ: 1, bits: product, value: binary.LittleEndian.AppendUint32(nil, uint32(0xffffffff))},
		{name: "ParallelGCThreads", typ: 2, bits: product | 1, value: binary.LittleEndian.AppendUint32(nil, 3)},
		{name: "MaxInlineSize", typ: 3, bits: product | c2, value: binary.LittleEndian.AppendUint64(nil, uint64(1<<63))},
		{name: "NewSize", typ: 6, bits: product | 5 | 1<<17, value: binary.LittleEndian.AppendUint64(nil, 95420416)},
		{name: "MaxRAMPercentage", typ: 7, bits: product | 1, value: f64(12.5)},
		{name: "NaNFlag", typ: 7, bits: product, value: f64(math.Inf(-1))},
		{name: "HeapDumpPath", typ: 8, bits: manageable | 1, value: []byte("/tmp/with space/x"), isStr: true},
		{name: "ErrorFile", typ: 8, bits: product, value: binary.LittleEndian.AppendUint64(nil, 0)},
		{name: "CompileCommand", typ: 9, bits: product | 1, value: []byte("quiet\nexclude,Foo.bar"), isStr: true},
		{name: "ZapUnusedHeapArea", typ: 0, bits: develop, value: []byte{0}},
		{name: "NoAddress", typ: 0, bits: product, noVal: true},
		{name: "Odd", typ: 42, bits: 14, value: []byte{0}},
	}
}

func TestFlagsRecorded(t *testing.T) {
	vm := fakeFlagJVM(sampleFlags(), "")
	flags, err := vm.Flags()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]jcmdFlag{}
	for _, f := range flags {
		got[f.Name] = f.jcmdView()
	}
	want := map[string]jcmdFlag{
		"UseCompressedOops":    {"bool", "true", "product lp64_product", "ergonomic"},
		"PrintConcurrentLocks": {"bool", "false", "manageable", "default"},
		"ThreadPriorityPolicy": {"int", "-1", "product", "default"},
		"ParallelGCThreads":    {"uint", "3", "product", "command line"},
		"MaxInlineSize":        {"intx", "-9223372036854775808", "C2 product", "default"},
		"NewSize":              {"size_t", "95420416", "product", "command line, ergonomic"},
		"MaxRAMPercentage":     {"double", "12.500000", "product", "command line"},
		"NaNFlag":              {"double", "-inf", "product", "default"},
		"HeapDumpPath":         {"ccstr", "/tmp/with space/x", "manageable", "command line"},
		"ErrorFile":            {"ccstr", "", "product", "default"},
		"CompileCommand":       {"ccstrlist", "quiet\nexclude,Foo.bar", "product", "command line"},
		"ZapUnusedHeapArea":    {"bool", "false", "develop", "default"},
		"NoAddress":            {"bool", "", "product", "default"},
		"Odd":                  {"type42", "", "", "origin 14"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("recorded flags (-want +got):\n%s", d)
	}
	for _, f := range flags {
		if f.Name == "NaNFlag" && f.Double != nil {
			t.Error("a non-finite double has a Double")
		}
	}
	if _, err := json.Marshal(flags); err != nil {
		t.Errorf("JSON: %v", err)
	}
	if f, err := vm.Flag("NewSize"); err != nil || *f.Uint != 95420416 {
		t.Errorf("Flag(NewSize) = %+v, %v", f, err)
	}
	if _, err := vm.Flag("Nope"); !errors.Is(err, ErrNoSuchFlag) {
		t.Errorf("Flag(Nope): %v", err)
	}
	// A value that cannot be read: the flag is listed without it, the error names it.
	vm = fakeFlagJVM(append(sampleFlags(), fakeFlag{name: "Gone", typ: 8, addr: 0xdead0000}), "")
	flags, err = vm.Flags()
	if len(flags) != len(sampleFlags())+1 || err == nil || !strings.Contains(err.Error(), "Gone") || !errors.Is(err, ErrFault) {
		t.Errorf("unreadable value: %d flags, %v", len(flags), err)
	}
	// Not a live process: nothing to write to.
	if _, err := vm.SetBoolFlag("PrintConcurrentLocks", true, fakeWriter{}); !errors.Is(err, ErrFlagNotWritable) {
		t.Errorf("SetBoolFlag on a recorded JVM: %v", err)
	}
}

type fakeWriter struct{}

func (fakeWriter) WriteAt(p []byte, addr uint64) (int, error) { return 0, errors.New("must not write") }
func (fakeWriter) PID() int                                   { return 0 }

// A JVM without one of the entries the flags need: Flags and Flag say which, the rest still works.
func TestFlagsMissingEntry(t *testing.T) {
	for _, omit := range []string{"JVMFlag::_type", "JVMFlag::numFlags", "JVMFlag"} {
		vm := fakeFlagJVM(sampleFlags(), omit)
		want := omit
		if !strings.Contains(omit, "::") {
			want = "sizeof(" + omit + ")"
		}
		for what, err := range map[string]error{"Flags": second(vm.Flags()), "Flag": second(vm.Flag("NewSize"))} {
			var me *MissingError
			if !errors.As(err, &me) || !errors.Is(err, ErrUnsupportedJVM) || !slices.Contains(me.Missing, want) {
				t.Errorf("without %s, %s: %v, want a MissingError naming %s", omit, what, err, want)
			}
		}
		if v, err := vm.Version(); err != nil || v != "25.0.3+9-LTS" {
			t.Errorf("without %s, Version() = %q, %v", omit, v, err)
		}
	}
	// Without the origin constants and _flags, values still read; origin and kinds are unknown.
	vm := fakeFlagJVM(sampleFlags(), "JVMFlag::_flags")
	f, err := vm.Flag("MaxRAMPercentage")
	if err != nil || f.Value != "12.500000" || f.Origin != "" || f.Kinds != nil {
		t.Errorf("without _flags: %+v, %v", f, err)
	}
}

func second[T any](_ T, err error) error { return err }

// FuzzFlags reads an arbitrary JVMFlag array of an arbitrary count, whose pointers may reach the
// array itself and the recorded strings: no panic, never more flags than the count.
func FuzzFlags(f *testing.F) {
	var seed []byte
	for _, fl := range sampleFlags() {
		e := make([]byte, 24)
		binary.LittleEndian.PutUint64(e[0:], 0x10000) // the array itself
		binary.LittleEndian.PutUint64(e[8:], 0x10000+24*2)
		binary.LittleEndian.PutUint32(e[16:], uint32(fl.bits))
		binary.LittleEndian.PutUint32(e[20:], uint32(fl.typ))
		seed = append(seed, e...)
	}
	f.Add(seed, uint16(len(sampleFlags())))
	f.Add([]byte{}, uint16(1))
	f.Add(bytes.Repeat([]byte{0xff}, 24*4), uint16(4))
	f.Fuzz(func(t *testing.T, data []byte, n uint16) {
		vm := recordedFlagJVM(newFakeImage(), data, uint64(n), "") // data is the first allocation: 0x10000
		flags, _ := vm.Flags()
		if len(flags) > int(n) {
			t.Fatalf("%d flags from a count of %d", len(flags), n)
		}
		if len(data) >= 32 {
			_, _ = vm.SetBoolFlag("x", true, fakeWriter{})
		}
		_, _ = vm.Flag("NewSize")
	})
}

// TestFlagsCLI runs `jvmkit flags` against a live JVM: text like VM.flags -all, names, JSON, --set.
func TestFlagsCLI(t *testing.T) {
	testutil.MustHaveRoot(t)
	bin := testutil.BuildTool(t, "cmd/jvmkit")
	run := func(t *testing.T, args ...string) (stdout, stderr string, code int) {
		t.Helper()
		var o, e bytes.Buffer
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return o.String(), e.String(), code
	}
	jdk := testutil.JDKs(t)[len(testutil.JDKs(t))-1]
	jvm := testutil.StartJVM(t, jdk, testutil.JVMOptions{JVMArgs: flagTestArgs})
	pid := strconv.Itoa(jvm.PID)

	// The whole list: every line jcmd prints is one of ours, byte for byte.
	out, _, code := run(t, "flags", pid)
	if code != 0 {
		t.Fatalf("flags %s: exit %d", pid, code)
	}
	ours := map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		ours[l] = true
	}
	jout := jcmd(t, jdk, jvm.PID, "VM.flags", "-all")
	var lines, missing int
	for _, l := range strings.Split(jout, "\n")[2:] {
		if l == "" {
			continue
		}
		lines++
		if !ours[l] {
			missing++
			t.Errorf("jcmd line not in jvmkit flags:\n%q", l)
		}
	}
	t.Logf("%d of %d VM.flags -all lines printed identically", lines-missing, lines)

	out, _, code = run(t, "flags", pid, "CompileCommand", "UseParallelGC") // printed in this order
	var want string
	for _, l := range strings.Split(jout, "\n") {
		if strings.Contains(l, " UseParallelGC ") || strings.Contains(l, " CompileCommand ") {
			want += l + "\n"
		}
	}
	if code != 0 || out != want || strings.Count(out, "\n") != 3 {
		t.Errorf("flags CompileCommand UseParallelGC: exit %d\n%s\nwant (from jcmd)\n%s", code, out, want)
	}
	out, _, code = run(t, "--json", "flags", pid, "HeapDumpPath")
	var doc struct {
		Schema string `json:"schema"`
		Data   struct {
			Version string `json:"version"`
			Flags   []Flag `json:"flags"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 0 {
		t.Fatalf("--json: exit %d, %v\n%s", code, err, out)
	}
	if doc.Schema != "jvmkit.flags/v1" || len(doc.Data.Flags) != 1 || *doc.Data.Flags[0].Str != "/var/tmp/with space/x" ||
		doc.Data.Flags[0].Origin != "command line" || doc.Data.Version == "" {
		t.Errorf("--json: %s", out)
	}
	if _, stderr, code := run(t, "flags", pid, "NoSuchFlagAtAll"); code != 1 || !strings.Contains(stderr, "NoSuchFlagAtAll") {
		t.Errorf("unknown flag: exit %d, %s", code, stderr)
	}

	// --set needs --write-memory, and the other way round; nothing is written.
	for _, args := range [][]string{
		{"flags", pid, "--set", setFlag + "=true"},
		{"flags", pid, "--write-memory"},
		{"flags", pid, "--set", setFlag + "=yes", "--write-memory"},
		{"flags", "core.123", "--set", setFlag + "=true", "--write-memory"},
	} {
		if _, stderr, code := run(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2 (usage)\n%s", args, code, stderr)
		}
	}
	if f := jcmdFlags(t, jdk, jvm.PID)[setFlag]; f.Value != "false" {
		t.Fatalf("%s is %s before the test", setFlag, f.Value)
	}
	out, stderr, code := run(t, "flags", pid, "--set", setFlag+"=true", "--write-memory")
	if code != 0 || out != setFlag+": false -> true\n" {
		t.Errorf("--set: exit %d\n%s%s", code, out, stderr)
	}
	if f := jcmdFlags(t, jdk, jvm.PID)[setFlag]; f.Value != "true" {
		t.Errorf("jcmd shows %s = %s after --set", setFlag, f.Value)
	}
	out, _, code = run(t, "--json", "flags", pid, "--set", setFlag+"=false", "--write-memory")
	if code != 0 || !strings.Contains(out, `"schema": "jvmkit.flags.set/v1"`) || !strings.Contains(out, `"old": true`) {
		t.Errorf("--json --set: exit %d\n%s", code, out)
	}
	if f := jcmdFlags(t, jdk, jvm.PID)[setFlag]; f.Value != "false" {
		t.Errorf("jcmd shows %s = %s after restoring", setFlag, f.Value)
	}
	if _, stderr, code := run(t, "flags", pid, "--set", "MaxHeapSize=true", "--write-memory"); code != 1 || !strings.Contains(stderr, "only bool flags") {
		t.Errorf("--set on a size_t: exit %d, %s", code, stderr)
	}
	if _, stderr, code := run(t, "flags", pid, "--set", "UseParallelGC=true", "--write-memory"); code != 0 || !strings.Contains(stderr, "not manageable") {
		t.Errorf("--set on a product flag (no change): exit %d, want a warning: %s", code, stderr)
	}

	// Not a JVM, no such process.
	sleep := testutil.StartProcess(t, "sleep", "600")
	if _, stderr, code := run(t, "flags", strconv.Itoa(sleep.Process.Pid)); code != 3 {
		t.Errorf("flags <sleep>: exit %d, want 3\n%s", code, stderr)
	}
	if _, stderr, code := run(t, "flags", strconv.Itoa(sleep.Process.Pid), "--set", setFlag+"=true", "--write-memory"); code != 3 {
		t.Errorf("--set on sleep: exit %d, want 3\n%s", code, stderr)
	}
	// A core file: whatever OpenCoreFile supports, a file that is not one fails cleanly.
	notCore := filepath.Join(t.TempDir(), "core")
	if err := os.WriteFile(notCore, []byte("not a core"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := run(t, "flags", notCore); code == 0 || !strings.HasPrefix(stderr, "jvmkit: ") {
		t.Errorf("flags <not a core>: exit %d\n%s", code, stderr)
	}
}

// BenchmarkFlags reads every flag of a live JVM, and compares with jcmd VM.flags -all.
func BenchmarkFlags(b *testing.B) {
	testutil.MustHaveRoot(b)
	jdk := testutil.JDK17(b)
	jvm := testutil.StartJVM(b, jdk, testutil.JVMOptions{})
	vm, err := Open(context.Background(), jvm.PID)
	if err != nil {
		b.Fatal(err)
	}
	defer vm.Close()
	start := time.Now()
	for b.Loop() {
		if _, err := vm.Flags(); err != nil {
			b.Fatal(err)
		}
	}
	ours := time.Since(start) / time.Duration(b.N)
	const jcmdRuns = 3
	start = time.Now()
	for range jcmdRuns {
		jcmd(b, jdk, jvm.PID, "VM.flags", "-all")
	}
	theirs := time.Since(start) / jcmdRuns
	b.ReportMetric(float64(theirs)/float64(ours), "x-faster-than-jcmd")
	b.Logf("Flags(): %v; jcmd VM.flags -all: %v; ratio %.0fx", ours, theirs, float64(theirs)/float64(ours))
}

// TestInliningAtEveryPC: false with the JVM's defaults (the flag off and no JVMTI agent asking for compiled
// methods: the symbol of HotSpot's own switch is read), true with -XX:+DebugNonSafepoints.
func TestInliningAtEveryPC(t *testing.T) {
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		t.Parallel()
		_, plain := openFlagsJVM(t, jdk, "-Xmx64m")
		_, dns := openFlagsJVM(t, jdk, "-Xmx64m", "-XX:+UnlockDiagnosticVMOptions", "-XX:+DebugNonSafepoints")
		if exact, known := plain.InliningAtEveryPC(); exact || !known {
			t.Errorf("defaults: InliningAtEveryPC = %t, %t, want false, true", exact, known)
		}
		if exact, known := dns.InliningAtEveryPC(); !exact || !known {
			t.Errorf("-XX:+DebugNonSafepoints: InliningAtEveryPC = %t, %t, want true, true", exact, known)
		}
	})
}
