package vmstructs

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/jvmkit/jvmkit/internal/procfs"
	"github.com/jvmkit/jvmkit/internal/testutil"
)

// stableArgs keeps the set of threads from changing between two reads: the JIT's thread count fixed, and
// the Attach Listener (a Java thread) started with the JVM instead of by the oracle's first jcmd.
var stableArgs = []string{"-XX:-UseDynamicNumberOfCompilerThreads", "-XX:+StartAttachListener"}

// jthread is a Java thread as `jcmd <pid> Thread.print` shows it.
type jthread struct {
	name       string
	id         int64
	daemon     bool
	javaThread uint64
	nid        int
	spPage     uint64 // the last Java SP rounded down to 4 KiB (the [0x...] at the end of the header)
	state      string // java.lang.Thread.State
	frames     int
}

// Java threads have a "#<id>"; JDK 19+ adds "[<tid>]" after it and prints nid in decimal.
var jcmdHeader = regexp.MustCompile(`^"(.*)" #(\d+) (?:\[\d+\] )?(daemon )?.*\btid=0x([0-9a-f]+) nid=(0x[0-9a-f]+|\d+) .*\[0x([0-9a-f]+)\]\s*$`)

// jcmdThreads runs Thread.print and returns the Java threads by nid.
func jcmdThreads(t *testing.T, jdk testutil.JDK, pid int) map[int]*jthread {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, jdk.Bin("jcmd"), strconv.Itoa(pid), "Thread.print").CombinedOutput()
	if err != nil {
		t.Fatalf("jcmd Thread.print: %v\n%s", err, out)
	}
	return parseThreadPrint(t, out)
}

// parseThreadPrint returns the Java threads of Thread.print's output by nid.
func parseThreadPrint(t *testing.T, out []byte) map[int]*jthread {
	t.Helper()
	m := map[int]*jthread{}
	var cur *jthread
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, `"`) {
			cur = nil
			g := jcmdHeader.FindStringSubmatch(line)
			if g == nil {
				continue // a VM-internal thread (no #id)
			}
			id, _ := strconv.ParseInt(g[2], 10, 64)
			jt, _ := strconv.ParseUint(g[4], 16, 64)
			nid, err := strconv.ParseInt(g[5], 0, 32)
			if err != nil {
				t.Fatalf("nid in %q: %v", line, err)
			}
			sp, _ := strconv.ParseUint(g[6], 16, 64)
			cur = &jthread{name: g[1], id: id, daemon: g[3] != "", javaThread: jt, nid: int(nid), spPage: sp}
			m[cur.nid] = cur
			continue
		}
		if cur == nil {
			continue
		}
		l := strings.TrimSpace(line)
		if s, ok := strings.CutPrefix(l, "java.lang.Thread.State: "); ok {
			cur.state, _, _ = strings.Cut(s, " ")
		} else if strings.HasPrefix(l, "at ") {
			cur.frames++
		}
	}
	if len(m) == 0 {
		t.Fatalf("no Java threads in jcmd's output:\n%s", out)
	}
	return m
}

// asJcmdPrints is a name as jcmd shows it: HotSpot sends a character outside the BMP as a surrogate
// pair in modified UTF-8, which jcmd decodes as two invalid sequences (U+FFFD each).
func asJcmdPrints(name string) string {
	var b strings.Builder
	for _, r := range name {
		if r > 0xffff {
			b.WriteString("\ufffd\ufffd")
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// sameJcmdName reports whether jcmd printed want as got. JDK 11's jcmd decodes the JVM's answer 256 bytes
// at a time, so a character cut in two by that boundary comes out as one to four U+FFFD ("jvmkit-latin-
// ÄÖÜ" as "jvmkit-latin-\ufffd\ufffdÖÜ"): one character of want may stand as such a run in got.
func sameJcmdName(want, got string) bool {
	if want == got {
		return true
	}
	if !strings.ContainsRune(got, '\ufffd') {
		return false
	}
	rs := []rune(want)
	for i := range rs {
		for n := 1; n <= 4; n++ {
			if string(rs[:i])+strings.Repeat("\ufffd", n)+string(rs[i+1:]) == got {
				return true
			}
		}
	}
	return false
}

// compareThreads checks that the threads are exactly jcmd's Java threads, with the same names and
// Java-level details.
func compareThreads(t *testing.T, got []Thread, want map[int]*jthread) {
	t.Helper()
	seen := map[int]bool{}
	for _, g := range got {
		if seen[g.TID] {
			t.Errorf("tid %d listed twice", g.TID)
		}
		seen[g.TID] = true
		w, ok := want[g.TID]
		if !ok {
			t.Errorf("thread %d %q is not in jcmd's list", g.TID, g.Name)
			continue
		}
		if g.NameTruncated {
			if !strings.HasPrefix(w.name, g.Name) || len(g.Name) == len(w.name) {
				t.Errorf("tid %d: truncated name %.40q..., jcmd says %.40q...", g.TID, g.Name, w.name)
			}
		} else if !sameJcmdName(asJcmdPrints(g.Name), w.name) {
			t.Errorf("tid %d: name %q, jcmd says %q", g.TID, g.Name, w.name)
		}
		if g.ID != w.id || g.Daemon != w.daemon || g.JavaThread != w.javaThread {
			t.Errorf("tid %d %q: id %d daemon %v JavaThread %#x; jcmd says #%d daemon %v tid=%#x",
				g.TID, w.name, g.ID, g.Daemon, g.JavaThread, w.id, w.daemon, w.javaThread)
		}
	}
	for nid, w := range want {
		if !seen[nid] {
			t.Errorf("jcmd's thread %d %q is missing", nid, w.name)
		}
	}
}

// settled says whether a thread stays in the same place between two reads: it is not one of the
// workloads' busy threads, and jcmd saw it waiting.
func settled(w *jthread) bool {
	switch w.name {
	case "demo-hasher", "demo-builder", "jvmkit-spin", "main", "Attach Listener":
		return false
	}
	return w.state == "WAITING" || w.state == "TIMED_WAITING" || w.state == "BLOCKED"
}

func TestThreads(t *testing.T) {
	testutil.MustHaveRoot(t)
	for _, tc := range []struct {
		main string
		args []string
		busy string // a thread that runs Java code, all or some of the time
	}{{"Demo", nil, "demo-hasher"}, {"Threads", []string{"500"}, "jvmkit-spin"}} {
		t.Run(tc.main, func(t *testing.T) {
			testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
				jvm := testutil.StartJVM(t, jdk, testutil.JVMOptions{Main: tc.main, Args: tc.args, JVMArgs: stableArgs})
				vm, err := Open(context.Background(), jvm.PID)
				if err != nil {
					t.Fatal(err)
				}
				defer vm.Close()
				start := time.Now()
				got, err := vm.Threads()
				if err != nil {
					t.Fatalf("Threads: %v", err)
				}
				first := time.Since(start)
				start = time.Now()
				if _, err := vm.Threads(); err != nil {
					t.Fatal(err)
				}
				t.Logf("%d threads in %v (again: %v)", len(got), first, time.Since(start))
				want := jcmdThreads(t, jdk, jvm.PID)
				compareThreads(t, got, want)
				for _, g := range got {
					w := want[g.TID]
					if w == nil {
						continue
					}
					if g.HostTID != g.TID {
						t.Errorf("tid %d: HostTID %d outside a namespace", g.TID, g.HostTID)
					}
					if !settled(w) {
						continue
					}
					// Parked, sleeping, waiting and blocked threads are blocked for the VM, and
					// their anchor is where jcmd found their last Java frame.
					if g.State != "blocked" || g.JavaState != w.state || g.LastJavaSP&^0xfff != w.spPage {
						t.Errorf("%q: state %s/%s, last Java SP %#x; jcmd says %s, SP page %#x",
							w.name, g.State, g.JavaState, g.LastJavaSP, w.state, w.spPage)
					}
					if (w.frames > 0) != (g.LastJavaSP != 0 && g.LastJavaPC != 0) {
						t.Errorf("%q: %d Java frames but anchor sp=%#x pc=%#x", w.name, w.frames, g.LastJavaSP, g.LastJavaPC)
					}
				}
				checkBusy(t, vm, tc.busy)
			})
		})
	}
}

// checkBusy reads the threads until the busy thread is seen running Java code or in the VM. Between
// those reads it may be sleeping (blocked) or changing state, nothing else.
func checkBusy(t *testing.T, vm *JVM, name string) {
	t.Helper()
	states := map[string]int{}
	for i := 0; i < 500; i++ {
		got, err := vm.Threads()
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range got {
			if g.Name != name {
				continue
			}
			states[g.State]++
			switch g.State {
			case "in_Java", "in_vm":
				return
			case "blocked", "in_native", "in_vm_trans", "in_native_trans", "blocked_trans", "in_Java_trans":
			default:
				t.Fatalf("%s: state %s", name, g.State)
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Errorf("%s never seen in Java or in the VM: %v", name, states)
}

// TestThreadsHeapLayouts reads names through every reference encoding and array layout the JDKs
// offer.
func TestThreadsHeapLayouts(t *testing.T) {
	testutil.MustHaveRoot(t)
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		variants := [][]string{
			{"-XX:-UseCompressedOops"},
			{"-XX:-UseCompressedClassPointers"},
			{"-Xmx40g"}, // too large for compressed oops
			{"-XX:ObjectAlignmentInBytes=16"},
			{"-Xmx3g", "-XX:HeapBaseMinAddress=64g"}, // compressed oops with a heap base
			{"-XX:-CompactStrings"},
			zgcArgs(jdk),
			{"-XX:+UseShenandoahGC"},
			{"-XX:+UseParallelGC"},
			{"-XX:+UseSerialGC"},
		}
		if jdk.Feature >= 24 {
			variants = append(variants, []string{"-XX:+UseCompactObjectHeaders"})
		}
		for _, v := range variants {
			t.Run(strings.Join(v, " "), func(t *testing.T) {
				t.Parallel() // two layouts at a time: starting the JVMs and the JDK's jcmd is most of it
				jvm := testutil.StartJVM(t, jdk, testutil.JVMOptions{Main: "Threads", Args: []string{"10"}, JVMArgs: append(v, stableArgs...)})
				vm, err := Open(context.Background(), jvm.PID)
				if err != nil {
					t.Fatal(err)
				}
				defer vm.Close()
				got, err := vm.Threads()
				if err != nil {
					t.Fatal(err)
				}
				h, err := vm.javaHeap()
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("narrow %v base %#x shift %d zgen %v, byte[] length at %d, data at %d", h.narrow, h.base, h.shift, h.zgen, h.lengthOff, h.byteBase)
				compareThreads(t, got, jcmdThreads(t, jdk, jvm.PID))
				var special int
				for _, g := range got {
					switch {
					case g.Name == "jvmkit-latin-ÄÖÜ-ß-é", g.Name == "jvmkit-utf16-漢字-😀", g.Name == "":
						special++
					case strings.HasPrefix(g.Name, "jvmkit-long-"):
						// The first 64 KiB of the byte[]: as many characters in Latin-1, half as
						// many in UTF-16 (-XX:-CompactStrings).
						if !g.NameTruncated || len(g.Name) != maxJavaString && len(g.Name) != maxJavaString/2 {
							t.Errorf("long name: %d bytes, truncated %v", len(g.Name), g.NameTruncated)
						}
						special++
					}
				}
				if special != 4 {
					t.Errorf("%d of the 4 special names found", special)
				}
			})
		}
	})
}

// zgcArgs select ZGC, an experimental GC before JDK 15.
func zgcArgs(jdk testutil.JDK) []string {
	if jdk.Feature < 15 {
		return []string{"-XX:+UnlockExperimentalVMOptions", "-XX:+UseZGC"}
	}
	return []string{"-XX:+UseZGC"}
}

// TestThreadsNamespace: a JVM in its own pid namespace knows its threads by namespaced tids.
func TestThreadsNamespace(t *testing.T) {
	testutil.MustHaveRoot(t)
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		jvm := testutil.StartJVM(t, jdk, testutil.JVMOptions{Main: "Demo", Namespace: true, JVMArgs: stableArgs})
		vm, err := Open(context.Background(), jvm.PID)
		if err != nil {
			t.Fatal(err)
		}
		defer vm.Close()
		got, err := vm.Threads()
		if err != nil {
			t.Fatal(err)
		}
		compareThreads(t, got, jcmdThreads(t, jdk, jvm.PID))
		for _, g := range got {
			if g.HostTID == 0 || g.HostTID == g.TID {
				t.Errorf("%q: tid %d, host tid %d", g.Name, g.TID, g.HostTID)
				continue
			}
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/status", jvm.PID, g.HostTID))
			if err != nil {
				t.Errorf("%q: %v", g.Name, err)
				continue
			}
			st, err := procfs.ParseStatus(b)
			if err != nil || len(st.NSpid) != 2 || st.NSpid[0] != g.HostTID || st.NSpid[1] != g.TID {
				t.Errorf("%q: tid %d host %d, but the task's NSpid is %v (%v)", g.Name, g.TID, g.HostTID, st.NSpid, err)
			}
		}
	})
}

// TestThreadsNoSymtab: without .symtab the Java field offsets are unknown; a live JVM's threads are
// named after their comm.
func TestThreadsNoSymtab(t *testing.T) {
	testutil.MustHaveRoot(t)
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		jvm := testutil.StartJVM(t, jdk, testutil.JVMOptions{Main: "Demo", JVMArgs: stableArgs})
		vm, err := Open(context.Background(), jvm.PID)
		if err != nil {
			t.Fatal(err)
		}
		defer vm.Close()
		full, err := vm.Threads()
		if err != nil {
			t.Fatal(err)
		}
		stripSymtab(vm)
		got, err := vm.Threads()
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(full) {
			t.Fatalf("%d threads without .symtab, %d with", len(got), len(full))
		}
		byTID := map[int]Thread{}
		for _, f := range full {
			byTID[f.TID] = f
		}
		for _, g := range got {
			comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/comm", jvm.PID, g.TID))
			if err != nil {
				t.Fatal(err)
			}
			f := byTID[g.TID]
			if g.Name != strings.TrimSpace(string(comm)) || !g.NameTruncated || g.ID != 0 || g.JavaState != "" || g.Daemon {
				t.Errorf("tid %d: %+v; comm %q", g.TID, g, comm)
			}
			// HotSpot names the native thread after the Java thread (the launcher's main thread excepted).
			if f.Name != "main" && !strings.HasPrefix(f.Name, g.Name) {
				t.Errorf("tid %d: comm %q is not a prefix of %q", g.TID, g.Name, f.Name)
			}
			if g.State == "" || g.JavaThread != f.JavaThread {
				t.Errorf("tid %d: %+v", g.TID, g)
			}
		}
		// A core file has no /proc to fall back on: the names stay empty.
		vm.PID = 0
		got, err = vm.Threads()
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range got {
			if g.Name != "" || g.HostTID != 0 {
				t.Errorf("core-like read: %+v", g)
			}
		}
	})
}

// stripSymtab drops every symbol but the exported VMStructs ones, as if libjvm had only .dynsym.
func stripSymtab(vm *JVM) {
	syms := map[string]uint64{}
	for k, v := range vm.syms {
		if strings.HasPrefix(k, "gHotSpot") {
			syms[k] = v
		}
	}
	vm.syms, vm.moreSyms = syms, nil
}

// threadSymbols are the .symtab symbols that Threads may look up.
func threadSymbols(vm *JVM) map[string]uint64 {
	out := map[string]uint64{}
	for _, name := range []string{"UseCompressedOops", "UseCompressedClassPointers", "UseCompactObjectHeaders", "UseZGC", "ZGenerational",
		mangleStatic("java_lang_String", "_value_offset"), mangleStatic("java_lang_String", "_coder_offset"),
		mangleStatic("java_lang_String", "value_offset"), mangleStatic("java_lang_String", "coder_offset"), // JDK 11
		mangleStatic("java_lang_Thread_FieldHolder", "_daemon_offset"), mangleStatic("java_lang_Thread_FieldHolder", "_thread_status_offset"),
	} {
		if v, ok := vm.Symbol(name); ok {
			out[name] = v
		}
	}
	for _, m := range []string{"_name_offset", "_eetop_offset", "_tid_offset", "_holder_offset", "_daemon_offset", "_thread_status_offset"} {
		if v, ok := vm.Symbol(mangleStatic("java_lang_Thread", m)); ok {
			out[mangleStatic("java_lang_Thread", m)] = v
		}
	}
	return out
}

// TestThreadsStaticMembers: the mangled names find the offsets on both JDKs.
func TestThreadsStaticMembers(t *testing.T) {
	if got := mangleStatic("java_lang_Thread", "_name_offset"); got != "_ZN16java_lang_Thread12_name_offsetE" {
		t.Errorf("mangleStatic = %s", got)
	}
	if got := mangleStatic("java_lang_Thread_FieldHolder", "_daemon_offset"); got != "_ZN28java_lang_Thread_FieldHolder14_daemon_offsetE" {
		t.Errorf("mangleStatic = %s", got)
	}
}

func TestJavaThreadState(t *testing.T) {
	// The JavaThreadStatus values of the JDKs' int constants.
	for v, want := range map[uint32]string{
		0: "NEW", 5: "RUNNABLE", 225: "TIMED_WAITING", 401: "WAITING", 417: "TIMED_WAITING",
		657: "WAITING", 673: "TIMED_WAITING", 1025: "BLOCKED", 2: "TERMINATED",
	} {
		if got := javaThreadState(v); got != want {
			t.Errorf("javaThreadState(%d) = %s, want %s", v, got, want)
		}
	}
}

func TestDecodeJavaString(t *testing.T) {
	for _, tc := range []struct {
		data  []byte
		coder byte
		want  string
	}{
		{[]byte("main"), 0, "main"},
		{[]byte{0xc4, 0xdf}, 0, "Äß"},
		{[]byte{0x22, 0x6f, 0x3d, 0xd8, 0x00, 0xde}, 1, "漢😀"},
		{[]byte{0x3d, 0xd8, 'a', 0}, 1, "\ufffda"}, // unpaired surrogate
		{[]byte{'a', 0, 'b'}, 1, "a"},              // odd length: the last byte is ignored
		{nil, 0, ""},
	} {
		got, err := decodeJavaString(tc.data, tc.coder)
		if err != nil || got != tc.want {
			t.Errorf("decodeJavaString(%x, %d) = %q, %v; want %q", tc.data, tc.coder, got, err, tc.want)
		}
	}
	if _, err := decodeJavaString([]byte("x"), 2); !errors.Is(err, ErrBadOop) {
		t.Errorf("coder 2: %v", err)
	}
}

func TestUncolorZPointer(t *testing.T) {
	h := &javaHeap{zgen: true}
	const addr = 0x40000012340
	for i, remap := range []uint64{1, 2, 4, 8} {
		shift := 12 + 1 + uint(i)
		v := addr<<shift | remap<<12 | 0x3f0 // some mark and remembered bits
		if got, err := h.uncolor(v); err != nil || got != addr {
			t.Errorf("remapped bit %d: uncolor(%#x) = %#x, %v", i, v, got, err)
		}
	}
	if got, err := h.uncolor(0x3f0); err != nil || got != 0 {
		t.Errorf("colored null: %#x, %v", got, err)
	}
	if _, err := h.uncolor(addr<<14 | 3<<12); !errors.Is(err, ErrBadOop) {
		t.Errorf("two remapped bits: %v", err)
	}
}

// Record and replay: Threads over recorded memory, read as a core file is read (PID 0, no /proc).

// recorder remembers every successful read.
type recorder struct {
	m     Memory
	reads []memRegion
}

type memRegion struct {
	addr uint64
	data []byte
}

func (r *recorder) ReadAt(p []byte, addr uint64) (int, error) {
	n, err := r.m.ReadAt(p, addr)
	if n > 0 {
		r.reads = append(r.reads, memRegion{addr, bytes.Clone(p[:n])})
	}
	return n, err
}

// regions merges the reads into disjoint regions; where reads overlap, the earliest wins.
func (r *recorder) regions() []memRegion {
	type span struct{ lo, hi uint64 }
	spans := make([]span, 0, len(r.reads))
	for _, rd := range r.reads {
		spans = append(spans, span{rd.addr, rd.addr + uint64(len(rd.data))})
	}
	sort.Slice(spans, func(i, k int) bool { return spans[i].lo < spans[k].lo })
	var merged []span
	for _, s := range spans {
		if n := len(merged); n > 0 && s.lo <= merged[n-1].hi {
			merged[n-1].hi = max(merged[n-1].hi, s.hi)
			continue
		}
		merged = append(merged, s)
	}
	out := make([]memRegion, len(merged))
	for i, s := range merged {
		out[i] = memRegion{s.lo, make([]byte, s.hi-s.lo)}
	}
	for i := len(r.reads) - 1; i >= 0; i-- {
		rd := r.reads[i]
		k := sort.Search(len(out), func(k int) bool { return out[k].addr > rd.addr }) - 1
		copy(out[k].data[rd.addr-out[k].addr:], rd.data)
	}
	return out
}

// memJVM is a JVM over recorded or built memory, as a core file gives one: no pid.
func memJVM(t *Table, syms map[string]uint64, regions []memRegion) *JVM {
	var b Bytes
	for _, r := range regions {
		b.Add(r.addr, r.data)
	}
	return &JVM{Mem: &b, Table: t, syms: syms, r: reader{&b}}
}

func TestThreadsReplay(t *testing.T) {
	testutil.MustHaveRoot(t)
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		for _, args := range [][]string{nil, {"-XX:-UseCompressedOops"}, zgcArgs(jdk)} {
			t.Run(strings.Join(append([]string{"default"}, args...), " "), func(t *testing.T) {
				jvm := testutil.StartJVM(t, jdk, testutil.JVMOptions{Main: "Threads", Args: []string{"3"}, JVMArgs: append(args, stableArgs...)})
				vm, err := Open(context.Background(), jvm.PID)
				if err != nil {
					t.Fatal(err)
				}
				defer vm.Close()
				rec := &recorder{m: vm.Mem}
				syms := threadSymbols(vm)
				want, err := (&JVM{Mem: rec, Table: vm.Table, syms: syms, r: reader{rec}}).Threads()
				if err != nil {
					t.Fatal(err)
				}
				regions := rec.regions()
				var size int
				for _, r := range regions {
					size += len(r.data)
				}
				t.Logf("%d threads from %d reads, %d regions, %d bytes", len(want), len(rec.reads), len(regions), size)
				jvm.Stop()
				got, err := memJVM(vm.Table, syms, regions).Threads()
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("replayed threads differ (-live +replayed):\n%s", diff)
				}
				names := map[string]bool{}
				for _, g := range got {
					names[g.Name] = true
				}
				for _, n := range []string{"main", "jvmkit-t-0000", "jvmkit-utf16-漢字-😀", "jvmkit-latin-ÄÖÜ-ß-é", "", "jvmkit-spin"} {
					if !names[n] {
						t.Errorf("no thread %q", n)
					}
				}
			})
		}
	})
}

// A fake JVM built in memory, shaped like JDK 25 (holder) or 17, for edge cases and fuzzing.

type fakeThread struct {
	name       string
	utf16      bool
	tid        int
	state      uint32
	id         int64
	daemon     bool
	status     uint32
	sp, pc, fp uint64
	// damage
	badEetop, noOSThread, noObject bool
}

type fakeOpts struct {
	narrow, zgen, holder bool
	linked               bool // JDK 11: Threads::_thread_list linked by JavaThread::_next, newest first
	threads              []fakeThread
}

const (
	fakeStatics = 0x1000_0000
	fakeList    = 0x2000_0000
	fakeArray   = 0x2000_1000
	fakeThreads = 0x3000_0000 // + i*0x1000
	fakeOS      = 0x4000_0000 // + i*0x100
	fakeSlots   = 0x5000_0000 // + i*8
	fakeHeap    = 0x6_0000_0000
	fakeJTSize  = 0x800
)

func fakeTable(zgen, linked bool) *Table {
	fields := []Field{
		{Type: "ThreadsSMRSupport", Name: "_java_thread_list", TypeString: "ThreadsList*", Static: true, Address: fakeStatics},
		{Type: "ThreadsList", Name: "_length", TypeString: "const uint", Offset: 4},
		{Type: "ThreadsList", Name: "_threads", TypeString: "JavaThread *const *const", Offset: 16},
	}
	if linked {
		fields = []Field{
			{Type: "Threads", Name: "_thread_list", TypeString: "JavaThread*", Static: true, Address: fakeStatics},
			{Type: "Threads", Name: "_number_of_threads", TypeString: "int", Static: true, Address: fakeStatics + 24},
			{Type: "JavaThread", Name: "_next", TypeString: "JavaThread*", Offset: 0x10},
		}
	}
	fields = append(fields, []Field{
		{Type: "Thread", Name: "_osthread", TypeString: "OSThread*", Offset: 0x3f8},
		{Type: "OSThread", Name: "_thread_id", TypeString: "pid_t", Offset: 12},
		{Type: "JavaThread", Name: "_threadObj", TypeString: "OopHandle", Offset: 0x460},
		{Type: "JavaThread", Name: "_anchor", TypeString: "JavaFrameAnchor", Offset: 0x480},
		{Type: "JavaThread", Name: "_thread_state", TypeString: "JavaThreadState", Offset: 0x52c},
		{Type: "JavaFrameAnchor", Name: "_last_Java_sp", TypeString: "intptr_t*", Offset: 0},
		{Type: "JavaFrameAnchor", Name: "_last_Java_pc", TypeString: "address", Offset: 8},
		{Type: "JavaFrameAnchor", Name: "_last_Java_fp", TypeString: "intptr_t*", Offset: 16},
		{Type: "OopHandle", Name: "_obj", TypeString: "oop*", Offset: 0},
		{Type: "CompressedOops", Name: "_base", TypeString: "address", Static: true, Address: fakeStatics + 8},
		{Type: "CompressedOops", Name: "_shift", TypeString: "int", Static: true, Address: fakeStatics + 16},
		{Type: "Abstract_VM_Version", Name: "_vm_major_version", TypeString: "int", Static: true, Address: fakeStatics + 20},
	}...)
	if zgen {
		fields = append(fields, Field{Type: "ZGlobalsForVMStructs", Name: "_ZPointerLoadShift", TypeString: "size_t*", Offset: 24})
	}
	types := []Type{{Name: "JavaThread", Size: fakeJTSize}, {Name: "arrayOopDesc", Size: 16}, {Name: "pid_t", Size: 4},
		{Name: "uint", Size: 4}, {Name: "int", Size: 4}, {Name: "JavaThreadState", Size: 4}, {Name: "address", Size: 8}}
	var ints []Constant
	for i, n := range []string{"uninitialized", "", "new", "new_trans", "in_native", "in_native_trans", "in_vm", "in_vm_trans",
		"in_Java", "in_Java_trans", "blocked", "blocked_trans"} {
		if n != "" {
			ints = append(ints, Constant{Name: "_thread_" + n, Value: int64(i)})
		}
	}
	return NewTable(fields, types, ints, nil)
}

// fakeJVM lays the threads out: statics, the ThreadsList, JavaThreads, OSThreads, OopStorage slots,
// and per thread a heap page with the Thread, its FieldHolder, its name String and the byte[].
func fakeJVM(o fakeOpts) (*Table, map[string]uint64, []memRegion) {
	le := func(b []byte, off int, size int, v uint64) {
		for i := 0; i < size; i++ {
			b[off+i] = byte(v >> (8 * i))
		}
	}
	const shift = 3
	// Stored references: narrow in object fields when compressed; colored with generational ZGC.
	full := func(a uint64) uint64 {
		if o.zgen && a != 0 {
			return a<<13 | 1<<12
		}
		return a
	}
	ref := func(b []byte, off int, a uint64) {
		if o.narrow {
			le(b, off, 4, (a-fakeHeap)>>shift)
		} else {
			le(b, off, 8, full(a))
		}
	}
	syms := map[string]uint64{
		"UseCompressedOops": fakeStatics + 32, "UseCompressedClassPointers": fakeStatics + 33, "UseZGC": fakeStatics + 34,
		mangleStatic("java_lang_Thread", "_name_offset"):   fakeStatics + 64,
		mangleStatic("java_lang_Thread", "_eetop_offset"):  fakeStatics + 68,
		mangleStatic("java_lang_Thread", "_tid_offset"):    fakeStatics + 72,
		mangleStatic("java_lang_String", "_value_offset"):  fakeStatics + 88,
		mangleStatic("java_lang_String", "_coder_offset"):  fakeStatics + 92,
		mangleStatic("java_lang_Thread", "_holder_offset"): fakeStatics + 76,
	}
	statics := make([]byte, 0x100)
	le(statics, 0, 8, fakeList)
	le(statics, 8, 8, fakeHeap)
	le(statics, 16, 4, shift)
	le(statics, 20, 4, 25)
	statics[32], statics[33], statics[34] = map[bool]byte{true: 1}[o.narrow], 1, map[bool]byte{true: 1}[o.zgen]
	// Thread: name 16, eetop 24, tid 32, holder 40, daemon 48, status 52. FieldHolder: daemon 12,
	// status 16. String: coder 12, value 16.
	for i, v := range []uint32{16, 24, 32, 40} {
		le(statics, 64+4*i, 4, uint64(v))
	}
	le(statics, 88, 4, 16)
	le(statics, 92, 4, 12)
	if o.holder {
		syms[mangleStatic("java_lang_Thread_FieldHolder", "_daemon_offset")] = fakeStatics + 80
		syms[mangleStatic("java_lang_Thread_FieldHolder", "_thread_status_offset")] = fakeStatics + 84
		le(statics, 80, 4, 12)
		le(statics, 84, 4, 16)
	} else {
		delete(syms, mangleStatic("java_lang_Thread", "_holder_offset"))
		syms[mangleStatic("java_lang_Thread", "_daemon_offset")] = fakeStatics + 80
		syms[mangleStatic("java_lang_Thread", "_thread_status_offset")] = fakeStatics + 84
		le(statics, 80, 4, 48)
		le(statics, 84, 4, 52)
	}
	// The list, two copies of it that changingList hands out as lists that were replaced, and at
	// 0x300 the list after the first thread exited.
	n := len(o.threads)
	list := make([]byte, 0x400)
	for _, at := range []int{0, 0x100, 0x200} {
		le(list, at+4, 4, uint64(n))
		le(list, at+16, 8, fakeArray)
	}
	le(list, 0x300+4, 4, uint64(max(n-1, 0)))
	le(list, 0x300+16, 8, fakeArray+8)
	if o.linked && n > 0 {
		le(statics, 0, 8, uint64(fakeThreads+(n-1)*0x1000))
		le(statics, 24, 4, uint64(n))
	}
	arr := make([]byte, 8*n)
	slots := make([]byte, 8*n)
	regions := []memRegion{{fakeStatics, statics}, {fakeList, list}, {fakeArray, arr}, {fakeSlots, slots}}
	for i, th := range o.threads {
		jt := uint64(fakeThreads + i*0x1000)
		le(arr, 8*i, 8, jt)
		b := make([]byte, fakeJTSize)
		ost := uint64(fakeOS + i*0x100)
		if !th.noOSThread {
			le(b, 0x3f8, 8, ost)
		}
		if !th.noObject {
			le(b, 0x460, 8, uint64(fakeSlots+8*i))
		}
		if o.linked && i > 0 {
			le(b, 0x10, 8, jt-0x1000)
		}
		le(b, 0x480, 8, th.sp)
		le(b, 0x488, 8, th.pc)
		le(b, 0x490, 8, th.fp)
		le(b, 0x52c, 4, uint64(th.state))
		regions = append(regions, memRegion{jt, b})
		ob := make([]byte, 0x20)
		le(ob, 12, 4, uint64(th.tid))
		regions = append(regions, memRegion{ost, ob})

		page := uint64(fakeHeap + 0x1000 + i*0x1000)
		le(slots, 8*i, 8, full(page))
		hb := make([]byte, 0x1000)
		ref(hb, 16, page+0x200)
		if th.badEetop {
			le(hb, 24, 8, jt+0x1000)
		} else {
			le(hb, 24, 8, jt)
		}
		le(hb, 32, 8, uint64(th.id))
		daemon, status := 48, 52
		if o.holder {
			ref(hb, 40, page+0x100)
			daemon, status = 0x100+12, 0x100+16
		}
		if th.daemon {
			hb[daemon] = 1
		}
		le(hb, status, 4, uint64(th.status))
		// The String and its byte[].
		var data []byte
		coder := byte(0)
		if th.utf16 {
			coder = 1
			for _, u := range utf16.Encode([]rune(th.name)) {
				data = append(data, byte(u), byte(u>>8))
			}
		} else {
			for _, r := range th.name {
				data = append(data, byte(r))
			}
		}
		hb[0x200+12] = coder
		ref(hb, 0x200+16, page+0x300)
		le(hb, 0x300+12, 4, uint64(len(data)))
		copy(hb[0x300+16:], data)
		regions = append(regions, memRegion{page, hb})
	}
	return fakeTable(o.zgen, o.linked), syms, regions
}

var fakeSet = []fakeThread{
	{name: "main", tid: 100, state: 10, id: 1, status: 0x191, sp: 0x7f0000001000, pc: 0x7f0000002000, fp: 0x7f0000001100},
	{name: "worker-Ä", tid: 101, state: 8, id: 2, daemon: true, status: 5},
	{name: "漢字-😀", utf16: true, tid: 102, state: 4, id: 3, daemon: true, status: 0x2b1},
	{name: "", tid: 103, state: 11, id: 4, status: 0x401},
}

func fakeWant(threads []fakeThread) []Thread {
	var out []Thread
	for i, th := range threads {
		if th.noOSThread {
			continue
		}
		w := Thread{TID: th.tid, JavaThread: uint64(fakeThreads + i*0x1000), State: threadStates(fakeTable(false, false))[int64(th.state)],
			LastJavaSP: th.sp, LastJavaPC: th.pc, LastJavaFP: th.fp}
		if !th.badEetop && !th.noObject {
			w.Name, w.ID, w.Daemon, w.JavaState = th.name, th.id, th.daemon, javaThreadState(th.status)
		}
		out = append(out, w)
	}
	return out
}

func TestThreadsFake(t *testing.T) {
	for _, o := range []fakeOpts{
		{narrow: true, holder: true}, {holder: true}, {zgen: true, holder: true}, {narrow: true}, {zgen: true},
		{narrow: true, linked: true}, {linked: true},
	} {
		t.Run(fmt.Sprintf("narrow=%v,zgen=%v,holder=%v,linked=%v", o.narrow, o.zgen, o.holder, o.linked), func(t *testing.T) {
			o.threads = fakeSet
			got, err := memJVM(fakeJVM(o)).Threads()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(fakeWant(fakeSet), got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestThreadsFakeDamage: threads caught exiting, stale objects and a thread list that changes.
func TestThreadsFakeDamage(t *testing.T) {
	threads := append([]fakeThread(nil), fakeSet...)
	threads[0].badEetop = true   // a stale reference: some other thread's object
	threads[1].noOSThread = true // exited: skipped
	threads[2].noObject = true   // no java.lang.Thread (yet)
	threads[3].state = 99        // freed memory: no JavaThreadState
	got, err := memJVM(fakeJVM(fakeOpts{narrow: true, holder: true, threads: threads})).Threads()
	var skip *SkippedThreadsError
	if !errors.As(err, &skip) || skip.Skipped != 2 || skip.Total != 4 {
		t.Fatalf("err = %v, want 2 of 4 skipped", err)
	}
	if diff := cmp.Diff(fakeWant(threads[:3]), got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	// The list pointer read before the array differs from the one read after it: read again.
	table, syms, regions := fakeJVM(fakeOpts{narrow: true, holder: true, threads: fakeSet})
	vm := memJVM(table, syms, regions)
	vm.Mem = &changingList{Memory: vm.Mem, stale: 1}
	vm.r = reader{vm.Mem}
	got, err = vm.Threads()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(fakeWant(fakeSet), got); diff != "" {
		t.Errorf("after a list change (-want +got):\n%s", diff)
	}
	vm.Mem = &changingList{Memory: vm.Mem, stale: 1 << 30}
	vm.r = reader{vm.Mem}
	if _, err := vm.Threads(); err == nil || !strings.Contains(err.Error(), "kept changing") {
		t.Errorf("a list that never settles: %v", err)
	}
	// The first thread exits after the list was read: what was read of it is dropped.
	vm = memJVM(table, syms, regions)
	vm.Mem = &changingList{Memory: vm.Mem, exitAfter: 2}
	vm.r = reader{vm.Mem}
	got, err = vm.Threads()
	if !errors.As(err, &skip) || skip.Skipped != 1 || !strings.Contains(err.Error(), "exited while it was read") {
		t.Errorf("err = %v, want the exited thread skipped", err)
	}
	if diff := cmp.Diff(fakeWant(fakeSet)[1:], got); diff != "" {
		t.Errorf("after an exit (-want +got):\n%s", diff)
	}

	// A list longer than any JVM's.
	binaryPut(regions[1].data[4:], maxThreads+1)
	if _, err := memJVM(table, syms, regions).Threads(); err == nil || !strings.Contains(err.Error(), "implausible") {
		t.Errorf("huge list: %v", err)
	}
}

// TestThreadsFakeLinked: JDK 11's linked thread list, damaged.
func TestThreadsFakeLinked(t *testing.T) {
	o := fakeOpts{narrow: true, linked: true, threads: fakeSet}
	table, syms, regions := fakeJVM(o)
	jt := func(i int) []byte {
		for _, r := range regions {
			if r.addr == uint64(fakeThreads+i*0x1000) {
				return r.data
			}
		}
		t.Fatalf("no JavaThread %d", i)
		return nil
	}
	// The count never agrees with the list (as under heavy thread churn): the threads that the last
	// two walks both met are read.
	binaryPut(regions[0].data[24:], uint32(len(fakeSet)+1))
	if got, err := memJVM(table, syms, regions).Threads(); err != nil || len(got) != len(fakeSet) {
		t.Errorf("count mismatch: %d threads, %v", len(got), err)
	}
	binaryPut(regions[0].data[24:], uint32(len(fakeSet)))
	// A stale _next that leads back into the list.
	binaryPut(jt(0)[0x10:], uint32(fakeThreads+(len(fakeSet)-1)*0x1000))
	if _, err := memJVM(table, syms, regions).Threads(); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Errorf("cycle: %v", err)
	}
	// Memory that is not there.
	binaryPut(jt(0)[0x10:], 0x7000_0000)
	if _, err := memJVM(table, syms, regions).Threads(); err == nil || !strings.Contains(err.Error(), "_next") {
		t.Errorf("unreadable _next: %v", err)
	}
}

func binaryPut(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
}

// changingList changes the list pointer: the first stale reads of it give other lists (as if each
// was replaced right after it was read); with exitAfter, the reads after that many give the list
// without the first thread.
type changingList struct {
	Memory
	stale, exitAfter, reads int
}

func (c *changingList) ReadAt(p []byte, addr uint64) (int, error) {
	n, err := c.Memory.ReadAt(p, addr)
	if addr != fakeStatics || len(p) != 8 {
		return n, err
	}
	c.reads++
	switch {
	case c.stale > 0:
		c.stale--
		binaryPut(p, fakeList+0x100+uint32(c.stale%2)*0x100)
	case c.exitAfter > 0 && c.reads > c.exitAfter:
		binaryPut(p, fakeList+0x300)
	}
	return n, err
}

// FuzzThreads damages the fake JVM's memory: Threads must not panic, loop, or return nonsense.
// The input picks the layout, then holds (offset, xor) patches over the concatenated regions.
func FuzzThreads(f *testing.F) {
	f.Add([]byte{0})
	f.Add([]byte{1, 0, 0, 0, 8, 0xff})
	f.Add([]byte{2, 0, 0, 0x10, 0x2c, 0x80, 0, 0, 0x20, 0x10, 0x01})
	f.Add([]byte{4, 0, 0, 0x30, 0x0c, 0x7f})
	f.Add([]byte{9, 0, 0, 0x10, 0x10, 0x08})
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		o := fakeOpts{narrow: in[0]&1 != 0, zgen: in[0]&2 != 0, holder: in[0]&4 != 0, linked: in[0]&8 != 0, threads: fakeSet}
		table, syms, regions := fakeJVM(o)
		total := 0
		for _, r := range regions {
			total += len(r.data)
		}
		for p := in[1:]; len(p) >= 5; p = p[5:] {
			off := int(uint32(p[0])<<24|uint32(p[1])<<16|uint32(p[2])<<8|uint32(p[3])) % total
			for i := range regions {
				if off < len(regions[i].data) {
					regions[i].data[off] ^= p[4]
					break
				}
				off -= len(regions[i].data)
			}
		}
		threads, err := memJVM(table, syms, regions).Threads()
		var skip *SkippedThreadsError
		if err != nil && !errors.As(err, &skip) && threads != nil {
			t.Fatalf("threads with a hard error: %v", err)
		}
		if len(threads) > maxThreads {
			t.Fatalf("%d threads", len(threads))
		}
		for _, th := range threads {
			if len(th.Name) > 3*maxJavaString || !utf8.ValidString(th.Name) {
				t.Fatalf("name of %d bytes, valid UTF-8 %v", len(th.Name), utf8.ValidString(th.Name))
			}
		}
	})
}

// A String at 0x10000 (coder at 12, value at 16) whose byte[] follows at 0x10020 (length at 12,
// data at 16).
func stringObject(coder byte, ref []byte, data string) []byte {
	b := make([]byte, 0x30+len(data))
	b[12] = coder
	copy(b[16:], ref)
	b[0x20+12] = byte(len(data))
	copy(b[0x30:], data)
	return b
}

var stringSeeds = []struct {
	mem  []byte
	mode uint8
	want string
}{
	{stringObject(0, []byte{0x20, 0, 1, 0, 0, 0, 0, 0}, "main"), 0, "main"},     // full reference
	{stringObject(1, []byte{0x20, 0, 1, 0}, "a\x00b\x00"), 1, "ab"},             // narrow, UTF-16
	{stringObject(0, []byte{0x10, 0x78, 0, 0}, "x\xe9"), 1 | 1<<1 | 1<<4, "xé"}, // narrow, base 0x1000, shift 1
	{stringObject(0, []byte{0, 0x10, 0x04, 0x20, 0, 0, 0, 0}, "z"), 8, "z"},     // zpointer: 0x10020<<13 | remapped bit 0
}

// stringAt decodes the String at 0x10000 in mem; mode picks the reference encoding: bit 0 narrow,
// bits 1-2 the shift, bit 3 generational ZGC, bits 4-7 the narrow base in pages.
func stringAt(mem []byte, mode uint8) (string, bool, error) {
	const at = 0x10000
	var b Bytes
	b.Add(at, mem)
	j := &JVM{Mem: &b, r: reader{&b}}
	h := &javaHeap{j: j, narrow: mode&1 != 0, base: uint64(mode>>4) << 12, shift: uint(mode>>1) & 3, zgen: mode&8 != 0,
		lengthOff: 12, byteBase: 16}
	return h.javaString(at, stringLayout{value: 16, coder: 12})
}

func TestJavaStringObject(t *testing.T) {
	for _, s := range stringSeeds {
		if got, trunc, err := stringAt(s.mem, s.mode); err != nil || got != s.want || trunc {
			t.Errorf("mode %#x: %q, %v, %v; want %q", s.mode, got, trunc, err, s.want)
		}
	}
}

// FuzzJavaString decodes a String object built from the input, with every reference encoding.
func FuzzJavaString(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0}, uint8(0))
	for _, s := range stringSeeds {
		f.Add(s.mem, s.mode)
	}
	f.Fuzz(func(t *testing.T, mem []byte, mode uint8) {
		s, _, err := stringAt(mem, mode)
		if err == nil && !utf8.ValidString(s) {
			t.Fatalf("invalid UTF-8 %q", s)
		}
		if len(s) > 3*maxJavaString {
			t.Fatalf("%d bytes", len(s))
		}
	})
}

func FuzzDecodeJavaString(f *testing.F) {
	f.Add([]byte("main"), byte(0))
	f.Add([]byte{0x3d, 0xd8, 0x00, 0xde}, byte(1))
	f.Fuzz(func(t *testing.T, data []byte, coder byte) {
		s, err := decodeJavaString(data, coder)
		if err != nil {
			return
		}
		if !utf8.ValidString(s) {
			t.Fatalf("invalid UTF-8 %q", s)
		}
		if coder == 0 && utf8.RuneCountInString(s) != len(data) {
			t.Fatalf("Latin-1: %d runes from %d bytes", utf8.RuneCountInString(s), len(data))
		}
	})
}

// TestThreadsChurn reads the threads of a JVM that keeps starting and ending threads: every read
// must hold all the threads that never end, and nothing implausible.
func TestThreadsChurn(t *testing.T) {
	testutil.MustHaveRoot(t)
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		jvm := testutil.StartJVM(t, jdk, testutil.JVMOptions{Main: "Threads", Args: []string{"20", "churn"}, JVMArgs: stableArgs})
		vm, err := Open(context.Background(), jvm.PID)
		if err != nil {
			t.Fatal(err)
		}
		defer vm.Close()
		var reads, skipped, churners int
		deadline := time.Now().Add(3 * time.Second)
		for reads = 0; time.Now().Before(deadline); reads++ {
			got, err := vm.Threads()
			var skip *SkippedThreadsError
			if errors.As(err, &skip) {
				skipped += skip.Skipped
			} else if err != nil {
				t.Fatal(err)
			}
			stable := 0
			for _, g := range got {
				switch {
				case strings.HasPrefix(g.Name, "jvmkit-t-"):
					stable++
				case strings.HasPrefix(g.Name, "jvmkit-churn-"):
					churners++
				}
				if g.TID <= 0 || g.State == "" || !utf8.ValidString(g.Name) {
					t.Errorf("implausible thread %+v", g)
				}
			}
			if stable != 20 {
				t.Errorf("read %d: %d of the 20 stable threads", reads, stable)
			}
		}
		t.Logf("%d reads, %d short-lived threads seen, %d entries skipped", reads, churners, skipped)
		if churners == 0 {
			t.Error("no short-lived thread seen")
		}
	})
}

// TestSameJcmdName: names as JDK 11's jcmd printed them in make test, a character cut at its 256-byte reads.
func TestSameJcmdName(t *testing.T) {
	for _, c := range []struct {
		want, got string
		same      bool
	}{
		{"jvmkit-latin-ÄÖÜ-ß-é", "jvmkit-latin-ÄÖÜ-ß-é", true},
		{"jvmkit-latin-ÄÖÜ-ß-é", "jvmkit-latin-\ufffd\ufffdÖÜ-ß-é", true},
		{asJcmdPrints("jvmkit-utf16-漢字-😀"), "jvmkit-utf16-漢字-\ufffd\ufffd\ufffd", true},
		{"jvmkit-latin-ÄÖÜ-ß-é", "jvmkit-latin-\ufffd\ufffd\ufffd\ufffd-ß-é", false}, // two characters gone
		{"jvmkit-a", "jvmkit-b", false},
	} {
		if got := sameJcmdName(c.want, c.got); got != c.same {
			t.Errorf("sameJcmdName(%q, %q) = %t", c.want, c.got, got)
		}
	}
}
