package vmstructs

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
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

	"github.com/jvmkit/jvmkit/internal/javaname"
	"github.com/jvmkit/jvmkit/internal/testutil"
)

// ccManyMethodsArgs gives one nmethod per generated method (see ManyMethods.java).
var ccManyMethodsArgs = []string{"-XX:CompileCommand=quiet", "-XX:CompileCommand=dontinline,gen.*::*"}

// ccStartManyMethods starts ManyMethods with classes x methods generated methods and waits until at
// least 95% of them are compiled.
func ccStartManyMethods(t testing.TB, jdk testutil.JDK, classes, methods int) (*testutil.JVM, *JVM) {
	t.Helper()
	jvm := testutil.StartJVM(t, jdk, testutil.JVMOptions{
		Main: "ManyMethods", JVMArgs: ccManyMethodsArgs,
		Args: []string{strconv.Itoa(classes), strconv.Itoa(methods)},
	})
	vm, err := Open(context.Background(), jvm.PID)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { vm.Close() })
	want := classes * methods * 95 / 100
	deadline := time.Now().Add(4 * time.Minute)
	for got := 0; ; {
		blobs, err := vm.CodeBlobs()
		if err != nil {
			t.Fatal(err)
		}
		got = ccCountGenerated(blobs)
		if got >= want {
			t.Logf("%s: %d of %d generated methods compiled, %d blobs", jdk.Name(), got, classes*methods, len(blobs))
			return jvm, vm
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: only %d of %d generated methods compiled after 4 minutes", jdk.Name(), got, classes*methods)
		}
		time.Sleep(2 * time.Second)
	}
}

var ccGenerated = regexp.MustCompile(`^int gen\.G\d+\.m\d+\(int\)$`)

// ccCountGenerated counts the distinct generated methods (gen.G<c>.m<i>) that have an nmethod.
func ccCountGenerated(blobs []CodeBlob) int {
	seen := map[uint64]bool{}
	for _, b := range blobs {
		if b.Kind == KindNMethod && ccGenerated.MatchString(b.MethodName) {
			seen[b.Method] = true
		}
	}
	return len(seen)
}

func ccJcmd(t testing.TB, jdk testutil.JDK, pid int, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, jdk.Bin("jcmd"), append([]string{strconv.Itoa(pid)}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("jcmd %d %v: %v\n%s", pid, args, err, out)
	}
	return string(out)
}

type ccPerfEntry struct {
	start, size uint64
	name        string
}

// ccPerfmap runs Compiler.perfmap and returns its entries. JDK 17 always writes /tmp/perf-<pid>.map
// (removed afterwards; the test fails rather than remove a file it did not make), as does 21; 22+ take a
// file name.
func ccPerfmap(t testing.TB, jdk testutil.JDK, pid int) []ccPerfEntry {
	t.Helper()
	path := fmt.Sprintf("/tmp/perf-%d.map", pid)
	args := []string{"Compiler.perfmap"}
	if jdk.Feature >= 22 { // the filename argument came with JDK 22 (21 still writes /tmp/perf-<pid>.map)
		path = filepath.Join(t.TempDir(), "perf.map")
		args = append(args, path)
	} else if _, err := os.Lstat(path); err == nil {
		t.Fatalf("%s exists before Compiler.perfmap: not ours to overwrite", path)
	}
	ccJcmd(t, jdk, pid, args...)
	data, err := os.ReadFile(path)
	os.Remove(path)
	if err != nil {
		t.Fatal(err)
	}
	return ccParsePerfmap(t, data)
}

// ccParsePerfmap parses a perf map the JVM wrote.
func ccParsePerfmap(t testing.TB, data []byte) []ccPerfEntry {
	t.Helper()
	var out []ccPerfEntry
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), " ", 3)
		if len(f) != 3 {
			t.Fatalf("perf map line %q", sc.Text())
		}
		start, err1 := strconv.ParseUint(f[0], 0, 64)
		size, err2 := strconv.ParseUint(f[1], 0, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("perf map line %q", sc.Text())
		}
		out = append(out, ccPerfEntry{start, size, f[2]})
	}
	return out
}

// ccMethodLine recognises Method::external_name ("int java.lang.String.hashCode()") among the perf map's
// names; blob names never have a dotted word before the parenthesis.
var ccMethodLine = regexp.MustCompile(`^\S+ [^ (]+\.[^ (]+\(.*\)$`)

// ccCompare looks up every perf map entry among the blobs: same start, same size, same name.
func ccCompare(perf []ccPerfEntry, blobs []CodeBlob) (methods, methodsOK, others, othersOK int, diff []string) {
	byStart := map[uint64]*CodeBlob{}
	for i := range blobs {
		byStart[blobs[i].Start] = &blobs[i]
	}
	for _, e := range perf {
		isMethod := ccMethodLine.MatchString(e.name)
		b := byStart[e.start]
		ok := b != nil && b.End-b.Start == e.size && b.Label() == e.name
		if isMethod {
			methods++
			ok = ok && (b.Kind == KindNMethod || b.Kind == KindNativeNMethod)
			if ok {
				methodsOK++
			}
		} else {
			others++
			if ok {
				othersOK++
			}
		}
		if !ok {
			got := "no blob at that address"
			if b != nil {
				got = fmt.Sprintf("%s size %#x %q", b.Kind, b.End-b.Start, b.Label())
			}
			diff = append(diff, fmt.Sprintf("perf map %#x size %#x %q; ours: %s", e.start, e.size, e.name, got))
		}
	}
	return
}

func ccProcessState(t *testing.T, pid int) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+3 > len(s) {
		t.Fatalf("stat %q", s)
	}
	return s[i+2 : i+3]
}

// ccCheckPerfmap finds every Compiler.perfmap entry among the blobs.
func ccCheckPerfmap(t *testing.T, jdk testutil.JDK, perf []ccPerfEntry, blobs []CodeBlob) {
	t.Helper()
	methods, methodsOK, others, othersOK, diff := ccCompare(perf, blobs)
	t.Logf("%s: %d blobs; perf map: %d/%d nmethods and %d/%d other blobs found with the same start, size and name",
		jdk.Name(), len(blobs), methodsOK, methods, othersOK, others)
	for i, d := range diff {
		if i == 50 {
			t.Logf("... and %d more", len(diff)-50)
			break
		}
		t.Log(d)
	}
	if methods < 4000 || methodsOK*100 < methods*99 {
		t.Errorf("%d of %d perf map nmethods match, want >= 99%%", methodsOK, methods)
	}
	if others < 50 || othersOK*100 < others*99 {
		t.Errorf("%d of %d other perf map blobs match, want >= 99%%", othersOK, others)
	}
}

// TestCodeCache compares CodeBlobs with Compiler.perfmap on a JVM with thousands of nmethods, and looks
// every blob up by pc.
func TestCodeCache(t *testing.T) {
	testutil.MustHaveRoot(t)
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		t.Parallel() // two JDKs at a time: most of the time goes in waiting for the JIT to compile the methods
		jvm, vm := ccStartManyMethods(t, jdk, 40, 100)
		var perf []ccPerfEntry
		if jdk.Feature >= 17 {
			perf = ccPerfmap(t, jdk, jvm.PID)
		}
		blobs, err := vm.CodeBlobs()
		if err != nil {
			t.Fatal(err)
		}
		if perf == nil {
			t.Logf("%s has no Compiler.perfmap: its code cache is checked against the JVMTI agent in TestCodeCacheAgent", jdk)
		} else {
			ccCheckPerfmap(t, jdk, perf, blobs)
		}

		// Each kind that every JVM has, with names.
		kinds := map[string]int{}
		for _, b := range blobs {
			kinds[b.Kind]++
			if b.Name == "" || b.Start < b.BlobAddr || b.End < b.Start || b.End > b.BlobAddr+uint64(b.BlobSize) {
				t.Errorf("blob %+v", b)
			}
			if b.Kind == KindNMethod && (b.Method == 0 || b.MethodName == "" || b.Level < 1 || b.Level > 4 ||
				b.CompileID <= 0 || b.VerifiedEntry < b.Start || b.VerifiedEntry >= b.End) {
				t.Errorf("nmethod %+v", b)
			}
		}
		t.Logf("kinds: %v", kinds)
		for _, k := range []string{KindNMethod, KindNativeNMethod, KindInterpreter, KindStubRoutines, KindAdapter,
			KindRuntimeStub, KindBuffer, KindVtable, KindDeoptimization, KindSafepoint, KindUncommonTrap, KindException} {
			if kinds[k] == 0 {
				t.Errorf("no %s blob", k)
			}
		}
		if kinds[KindStub] != 0 {
			t.Errorf("%d blobs of unknown kind", kinds[KindStub])
		}

		// FindBlob for random pcs inside each blob, through one view and through the JVM.
		c, err := vm.CodeCache()
		if err != nil {
			t.Fatal(err)
		}
		ccCheckDead(t, jdk, jvm.PID, c, blobs)
		rng := rand.New(rand.NewPCG(1, 2))
		misses := 0
		start := time.Now()
		for i := range blobs {
			b := &blobs[i]
			if b.End == b.Start {
				continue
			}
			pc := b.Start + rng.Uint64N(b.End-b.Start)
			got, err := c.FindBlob(pc)
			if err != nil || got == nil || got.BlobAddr != b.BlobAddr || got.Label() != b.Label() {
				misses++
				if b.Kind != KindNMethod || misses <= 10 {
					t.Logf("FindBlob(%#x) in %s %q: %+v, %v", pc, b.Kind, b.Label(), got, err)
				}
				// C2's buffers live for a compilation or less: it frees and reallocates a compiler thread's
				// scratch buffer when a compilation needs a larger one (Compile::init_scratch_buffer_blob) and
				// frees Compile::Fill_buffer once the compilation's code is emitted. Like nmethods, they may
				// go between the listing and the lookup.
				transient := b.Kind == KindBuffer && strings.HasPrefix(b.Label(), "Compile::")
				if b.Kind != KindNMethod && b.Kind != KindNativeNMethod && !transient {
					t.Errorf("FindBlob missed a %s, which never moves", b.Kind)
				}
			}
		}
		t.Logf("FindBlob: %d lookups in %v, %d misses", len(blobs), time.Since(start), misses)
		if misses*1000 > len(blobs) {
			t.Errorf("FindBlob missed %d of %d blobs", misses, len(blobs))
		}
		interp := blobs[slices.IndexFunc(blobs, func(b CodeBlob) bool { return b.Kind == KindInterpreter })]
		if !c.Contains(interp.Start) || c.Contains(vm.Bias) {
			t.Errorf("Contains(interpreter) = %v, Contains(libjvm) = %v", c.Contains(interp.Start), c.Contains(vm.Bias))
		}
		if got, err := vm.FindBlob(interp.End - 1); err != nil || got == nil || got.Kind != KindInterpreter {
			t.Errorf("JVM.FindBlob(interpreter end - 1) = %+v, %v", got, err)
		}
		for _, pc := range []uint64{0, vm.Bias, 1 << 63} {
			if got, err := vm.FindBlob(pc); got != nil || err != nil {
				t.Errorf("FindBlob(%#x) = %+v, %v; want nothing", pc, got, err)
			}
		}
		// MethodName on its own agrees with the listing.
		for _, b := range blobs[:min(len(blobs), 200)] {
			if b.Method == 0 {
				continue
			}
			if s, err := vm.MethodName(b.Method); err != nil || s != b.MethodName {
				t.Errorf("MethodName(%#x) = %q, %v; listing says %q", b.Method, s, err, b.MethodName)
			}
		}

		// Without libjvm's .symtab (a stripped JDK 17), kinds come from the names.
		stripped := &JVM{Mem: vm.Mem, Table: vm.Table, r: vm.r, syms: map[string]uint64{}}
		blobs2, err := stripped.CodeBlobs()
		if err != nil {
			t.Fatal(err)
		}
		kinds2 := map[string]int{}
		for _, b := range blobs2 {
			kinds2[b.Kind]++
		}
		for _, k := range []string{KindNMethod, KindInterpreter, KindStubRoutines, KindAdapter} {
			if kinds2[k] == 0 {
				t.Errorf("without symbols: no %s blob (%v)", k, kinds2)
			}
		}

		// The JVM was not disturbed: still running, not stopped, still answering.
		if !jvm.Alive() {
			t.Fatal("the JVM died")
		}
		if st := ccProcessState(t, jvm.PID); st == "T" || st == "t" {
			t.Errorf("the JVM is in state %s", st)
		}
		if out := ccJcmd(t, jdk, jvm.PID, "VM.version"); !strings.Contains(out, "JDK") {
			t.Errorf("VM.version after reading: %s", out)
		}
	})
}

// ccCodelistLine is a line of jcmd Compiler.codelist: compile id, level, state, method, [nmethod,
// code begin - code end].
var ccCodelistLine = regexp.MustCompile(`^(\d+) (-?\d+) (-?\d+) (.*) \[(0x[0-9a-f]+), (0x[0-9a-f]+) - (0x[0-9a-f]+)\]$`)

// ccCheckDead checks CodeCache.Dead against jcmd Compiler.codelist, which lists the nmethods that are
// alive (not zombie or unloaded) with their state. Dead is read first: a dead nmethod never lives
// again, so one that the later list has alive (same code and compile id) must not have been dead.
// The methods' class and name must be the list's (Method::external_name), lambdas and LambdaForms
// (JDK 11's VM-anonymous classes, JDK 15+'s hidden ones) included.
func ccCheckDead(t *testing.T, jdk testutil.JDK, pid int, c *CodeCache, blobs []CodeBlob) {
	t.Helper()
	dead := map[[2]uint64]bool{}
	names := map[[2]uint64]string{}
	var nms, ndead int
	for i := range blobs {
		b := &blobs[i]
		if b.Kind != KindNMethod {
			continue
		}
		nms++
		names[[2]uint64{b.Start, uint64(b.CompileID)}] = b.MethodName
		d, err := c.Dead(b)
		if err != nil {
			t.Fatalf("Dead(%q): %v", b.Label(), err)
		}
		if d {
			ndead++
			dead[[2]uint64{b.Start, uint64(b.CompileID)}] = true
		}
	}
	var alive, states, compared, anonymous int
	for line := range strings.Lines(ccJcmd(t, jdk, pid, "Compiler.codelist")) {
		m := ccCodelistLine.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		alive++
		id, _ := strconv.ParseUint(m[1], 10, 64)
		start, _ := strconv.ParseUint(m[6], 0, 64)
		if st, _ := strconv.Atoi(m[3]); st != 0 {
			states++
		}
		key := [2]uint64{start, id}
		if dead[key] {
			t.Errorf("Dead said %s (compile id %d) was dead; Compiler.codelist has it alive: %s", m[6], id, line)
		}
		if ours, ok := names[key]; ok {
			compared++
			want, _, _ := strings.Cut(m[4], "(") // "pkg.Class.method(sig)ret"
			if got := ccClassAndMethod(ours); got != want {
				t.Errorf("compile id %d at %s is %q, Compiler.codelist names it %q", id, m[6], got, want)
			}
			if strings.Contains(want, "/0x") { // "Foo$$Lambda$1/0x...", "LambdaForm$MH/0x..."
				anonymous++
			}
		}
	}
	t.Logf("Dead: %d of %d nmethods dead; Compiler.codelist: %d alive, %d of them not in_use; names compared: %d (%d of lambdas and LambdaForms)",
		ndead, nms, alive, states, compared, anonymous)
	if anonymous == 0 {
		t.Errorf("no compiled method of a VM-anonymous or hidden class (lambdas, LambdaForms) compared with Compiler.codelist")
	}
	if alive < nms/2 {
		t.Errorf("Compiler.codelist lists %d nmethods, the code cache has %d: is its format still %v?", alive, nms, ccCodelistLine)
	}
	if jdk.Feature >= 20 && ndead > 0 {
		t.Errorf("%d dead nmethods on JDK %d, which has no zombies", ndead, jdk.Feature)
	}
}

// ccClassAndMethod is "pkg.Class.method" of a method name as vmstructs gives it ("ret pkg.Class.method(args)").
func ccClassAndMethod(name string) string {
	name, _, _ = strings.Cut(name, "(")
	if i := strings.LastIndexByte(name, ' '); i >= 0 {
		name = name[i+1:]
	}
	return name
}

// ccJavapLines returns the LineNumberTable of ManyMethods.main, as javap prints it.
func ccJavapLines(t *testing.T, jdk testutil.JDK) []linePair {
	t.Helper()
	dir := testutil.Compile(t, jdk, "ManyMethods")
	out, err := exec.Command(jdk.Bin("javap"), "-c", "-l", "-p", "-cp", dir, "ManyMethods").CombinedOutput()
	if err != nil {
		t.Fatalf("javap: %v\n%s", err, out)
	}
	_, rest, ok := strings.Cut(string(out), "public static void main(java.lang.String[])")
	if !ok {
		t.Fatalf("javap: no main\n%s", out)
	}
	_, rest, _ = strings.Cut(rest, "LineNumberTable:\n")
	var pairs []linePair
	re := regexp.MustCompile(`^\s+line (\d+): (\d+)$`)
	for _, l := range strings.Split(rest, "\n") {
		m := re.FindStringSubmatch(l)
		if m == nil {
			break
		}
		line, _ := strconv.Atoi(m[1])
		bci, _ := strconv.Atoi(m[2])
		pairs = append(pairs, linePair{int32(bci), int32(line)})
	}
	if len(pairs) < 10 {
		t.Fatalf("javap: %d lines for main\n%s", len(pairs), out)
	}
	return pairs
}

// TestCodeCacheScopes decodes the inlining chains of C2 code whose inlining is known (ManyMethods'
// chains of small generated methods) and the line numbers of ManyMethods.main against javap.
func TestCodeCacheScopes(t *testing.T) {
	testutil.MustHaveRoot(t)
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		const methods = 20
		jvm := testutil.StartJVM(t, jdk, testutil.JVMOptions{
			Main: "ManyMethods", JVMArgs: []string{"-XX:+UnlockDiagnosticVMOptions", "-XX:+DebugNonSafepoints"},
			Args: []string{"5", strconv.Itoa(methods)},
		})
		vm, err := Open(context.Background(), jvm.PID)
		if err != nil {
			t.Fatal(err)
		}
		defer vm.Close()
		javap := ccJavapLines(t, jdk)
		var chain, mains []CodeBlob
		var c *CodeCache
		for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(time.Second) {
			if c, err = vm.CodeCache(); err != nil {
				t.Fatal(err)
			}
			blobs, err := c.Blobs()
			if err != nil {
				t.Fatal(err)
			}
			chain, mains = nil, nil
			for _, b := range blobs {
				switch {
				case b.Level == 4 && b.MethodName == "int gen.G0.applyAsInt(int)":
					chain = append(chain, b)
				case strings.HasPrefix(b.MethodName, "void ManyMethods.main("):
					mains = append(mains, b)
				}
			}
			if len(chain) > 0 && len(mains) > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no C2 code for gen.G0.applyAsInt (%d) or ManyMethods.main (%d) after 3 minutes", len(chain), len(mains))
			}
		}

		// Every generated method is inlined into the chain, called at bci 1+3i.
		b := chain[0]
		found := map[int]bool{}
		for pc := b.Start; pc < b.End; pc++ {
			scopes, err := c.Scopes(&b, pc, true)
			if err != nil {
				t.Fatalf("Scopes(+%d): %v", pc-b.Start, err)
			}
			last := scopes[len(scopes)-1]
			if last.Method != b.Method || last.MethodName != b.MethodName {
				t.Fatalf("Scopes(+%d): outermost %+v, not the nmethod's method", pc-b.Start, last)
			}
			if len(scopes) == 2 {
				var i int
				if _, err := fmt.Sscanf(scopes[0].MethodName, "int gen.G0.m%d(int)", &i); err != nil ||
					scopes[1].BCI != 1+3*i || scopes[0].BCI < -1 || scopes[0].BCI > 13 || scopes[0].Line != -1 {
					t.Errorf("Scopes(+%d) = %+v", pc-b.Start, scopes)
				}
				found[i] = true
			}
		}
		if len(found) != methods {
			t.Errorf("inlined methods seen: %v, want all %d", found, methods)
		}
		// Inlined lists the same methods for the whole nmethod.
		inl, err := c.Inlined(&b)
		if err != nil {
			t.Fatal(err)
		}
		for i := range methods {
			if !slices.Contains(inl, fmt.Sprintf("int gen.G0.m%d(int)", i)) {
				t.Errorf("Inlined misses gen.G0.m%d: %q", i, inl)
			}
		}
		if slices.Contains(inl, b.MethodName) {
			t.Errorf("Inlined lists the nmethod's own method: %q", inl)
		}

		// Lines of main against javap, in every nmethod of main and for every bci javap lists.
		checked := 0
		for _, b := range mains {
			for pc := b.Start; pc < b.End; pc++ {
				scopes, err := c.Scopes(&b, pc, pc%2 == 0)
				if err != nil {
					t.Fatalf("Scopes(+%d): %v", pc-b.Start, err)
				}
				for _, s := range scopes {
					if s.Method == b.Method && s.BCI >= 0 {
						if want := lineFor(javap, s.BCI, 1<<16); s.Line != want {
							t.Errorf("%s +%d: bci %d at line %d, javap says %d", b.MethodName, pc-b.Start, s.BCI, s.Line, want)
						}
						checked++
					}
				}
			}
		}
		for _, p := range javap {
			if got, err := c.LineNumber(mains[0].Method, int(p.bci)); err != nil || got != int(p.line) {
				t.Errorf("LineNumber(main, %d) = %d, %v; javap says %d", p.bci, got, err, p.line)
			}
		}
		t.Logf("%s: %d pcs of the chain, %d scopes of main checked against javap (%d entries)", jdk.Name(), b.End-b.Start, checked, len(javap))
	})
}

// TestCodeCacheCLI runs `jvmkit codecache` against a live JVM.
func TestCodeCacheCLI(t *testing.T) {
	testutil.MustHaveRoot(t)
	bin := testutil.BuildTool(t, "cmd/jvmkit")
	jdk := testutil.JDK17(t)
	jvm := testutil.StartJVM(t, jdk, testutil.JVMOptions{Main: "Demo"})
	pid := strconv.Itoa(jvm.PID)
	run := func(args ...string) (string, string, int) {
		cmd := exec.Command(bin, args...)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()
	}
	out, stderr, code := run("codecache", pid)
	if code != 0 {
		t.Fatalf("codecache: exit %d\n%s", code, stderr)
	}
	line := regexp.MustCompile(`^0x[0-9a-f]+-0x[0-9a-f]+ [a-z-]+ (-|[0-4]) .+$`)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	var interp, nmethod string
	for _, l := range lines {
		if !line.MatchString(l) {
			t.Errorf("line %q", l)
		}
		if strings.Contains(l, " interpreter - Interpreter") {
			interp = l
		}
		if strings.Contains(l, " nmethod ") && nmethod == "" {
			nmethod = l
		}
	}
	if nmethod == "" {
		t.Fatal("no nmethod listed")
	}
	if len(lines) < 100 || interp == "" {
		t.Fatalf("%d lines, interpreter %q", len(lines), interp)
	}
	start, _, _ := strings.Cut(interp, "-")
	if out, _, code := run("codecache", pid, "--pc", start); code != 0 || out != interp+"\n" {
		t.Errorf("--pc %s: exit %d, %q; want %q", start, code, out, interp)
	}
	// In an nmethod, the inlining chain follows: tab, method, bci (and line).
	nmStart, _, _ := strings.Cut(nmethod, "-")
	out, _, code = run("codecache", pid, "--pc", nmStart)
	if first, rest, _ := strings.Cut(out, "\n"); code != 0 || first != nmethod ||
		!regexp.MustCompile(`^(\t.+\(.*\) bci=-?\d+( line=\d+)?\n)+$`).MatchString(rest) {
		t.Errorf("--pc %s: exit %d\n%s", nmStart, code, out)
	}
	// --inline: nmethod lines followed by tab-indented method names, nothing else changes.
	inl, _, code := run("codecache", pid, "--inline")
	if code != 0 || !strings.Contains(inl, nmethod+"\n") {
		t.Errorf("--inline: exit %d", code)
	}
	plain := regexp.MustCompile(`(?m)^\t.*\n`).ReplaceAllString(inl, "")
	if n := strings.Count(plain, "\n"); n < 100 || n > strings.Count(inl, "\n") {
		t.Errorf("--inline: %d blob lines", n)
	}
	if _, stderr, code := run("codecache", pid, "--pc", "0x10"); code != 1 || !strings.Contains(stderr, "no blob contains 0x10") {
		t.Errorf("--pc 0x10: exit %d, %s", code, stderr)
	}
	if _, _, code := run("codecache", pid, "--pc", "nope"); code != 2 {
		t.Errorf("--pc nope: exit %d", code)
	}
	js, stderr, code := run("--json", "codecache", pid)
	var doc struct {
		Schema string
		Data   struct {
			Version string
			Heaps   []CodeHeap
			Blobs   []CodeBlob
		}
	}
	if code != 0 || json.Unmarshal([]byte(js), &doc) != nil {
		t.Fatalf("--json: exit %d, %s", code, stderr)
	}
	if doc.Schema != "jvmkit.codecache/v1" || len(doc.Data.Heaps) == 0 || len(doc.Data.Blobs) < len(lines)*9/10 ||
		!strings.HasPrefix(jdk.Version, doc.Data.Version[:2]) {
		t.Errorf("--json: schema %q, %d heaps, %d blobs, version %q", doc.Schema, len(doc.Data.Heaps), len(doc.Data.Blobs), doc.Data.Version)
	}
	if _, _, code := run("codecache", "1073741824"); code != 3 {
		t.Errorf("no such pid: exit %d", code)
	}
}

// ccLayout is a recorded HotSpot layout for synthetic code caches: the offsets of JDK 17 or JDK 25.
type ccLayout struct {
	jdk17 bool
}

func (l ccLayout) hbSize() uint64 {
	if l.jdk17 {
		return 16
	}
	return 8
}

// stateOff is the offset of nmethod::_state.
func (l ccLayout) stateOff() uint64 {
	if l.jdk17 {
		return 315
	}
	return 219
}

func (l ccLayout) nmethodSize() uint64 {
	if l.jdk17 {
		return 352
	}
	return 224
}

// tables returns the VMStructs entries of the layout; statics point into img.
func (l ccLayout) tables(heaps, release, major uint64) ([]Field, []Type, []Constant) {
	fields := []Field{
		{Type: "CodeCache", Name: "_heaps", TypeString: "GrowableArray<CodeHeap*>*", Static: true, Address: heaps},
		{Type: "Abstract_VM_Version", Name: "_s_vm_release", TypeString: "const char*", Static: true, Address: release},
		{Type: "Abstract_VM_Version", Name: "_vm_major_version", TypeString: "int", Static: true, Address: major},
		{Type: "PcDesc", Name: "_pc_offset", TypeString: "int", Offset: 0},
		{Type: "PcDesc", Name: "_scope_decode_offset", TypeString: "int", Offset: 4},
		{Type: "ConstMethod", Name: "_constMethod_size", TypeString: "int", Offset: 24},
		{Type: "GrowableArray<int>", Name: "_data", TypeString: "int*", Offset: 8},
		{Type: "VirtualSpace", Name: "_low_boundary", TypeString: "char*", Offset: 0},
		{Type: "VirtualSpace", Name: "_high_boundary", TypeString: "char*", Offset: 8},
		{Type: "VirtualSpace", Name: "_low", TypeString: "char*", Offset: 16},
		{Type: "VirtualSpace", Name: "_high", TypeString: "char*", Offset: 24},
		{Type: "HeapBlock", Name: "_header", TypeString: "HeapBlock::Header", Offset: 0},
		{Type: "Method", Name: "_constMethod", TypeString: "ConstMethod*", Offset: 8},
		{Type: "ConstMethod", Name: "_constants", TypeString: "ConstantPool*", Offset: 8},
		{Type: "ConstantPool", Name: "_pool_holder", TypeString: "InstanceKlass*", Offset: 24},
		{Type: "ConstantPool", Name: "_length", TypeString: "int", Offset: 60},
		{Type: "Klass", Name: "_name", TypeString: "Symbol*", Offset: 24},
		{Type: "Symbol", Name: "_length", TypeString: "u2", Offset: 4},
		{Type: "Symbol", Name: "_body", TypeString: "", Offset: 6},
		{Type: "nmethod", Name: "_state", TypeString: "volatile signed char", Offset: l.stateOff()},
	}
	types := []Type{
		{Name: "int", Size: 4}, {Name: "u2", Size: 2}, {Name: "bool", Size: 1}, {Name: "size_t", Size: 8},
		{Name: "uint32_t", Size: 4}, {Name: "int16_t", Size: 2}, {Name: "address", Size: 8},
		{Name: "CodeBlobKind", Size: 1}, {Name: "CompLevel", Size: 1}, {Name: "ConstantPool", Size: 72},
		{Name: "PcDesc", Size: 16}, {Name: "u4", Size: 4}, {Name: "volatile signed char", Size: 1},
	}
	var ints []Constant
	if l.jdk17 {
		fields = append(fields,
			Field{Type: "GenericGrowableArray", Name: "_len", TypeString: "int", Offset: 0},
			Field{Type: "CodeHeap", Name: "_memory", TypeString: "VirtualSpace", Offset: 8},
			Field{Type: "CodeHeap", Name: "_segmap", TypeString: "VirtualSpace", Offset: 120},
			Field{Type: "CodeHeap", Name: "_log2_segment_size", TypeString: "int", Offset: 256},
			Field{Type: "HeapBlock::Header", Name: "_length", TypeString: "size_t", Offset: 0},
			Field{Type: "HeapBlock::Header", Name: "_used", TypeString: "bool", Offset: 8},
			Field{Type: "CodeBlob", Name: "_name", TypeString: "const char*", Offset: 96},
			Field{Type: "CodeBlob", Name: "_size", TypeString: "int", Offset: 12},
			Field{Type: "CodeBlob", Name: "_frame_complete_offset", TypeString: "int", Offset: 20},
			Field{Type: "CodeBlob", Name: "_frame_size", TypeString: "int", Offset: 28},
			Field{Type: "CodeBlob", Name: "_code_begin", TypeString: "address", Offset: 32},
			Field{Type: "CodeBlob", Name: "_code_end", TypeString: "address", Offset: 40},
			Field{Type: "CompiledMethod", Name: "_method", TypeString: "Method*", Offset: 112},
			Field{Type: "nmethod", Name: "_verified_entry_point", TypeString: "address", Offset: 224},
			Field{Type: "nmethod", Name: "_compile_id", TypeString: "int", Offset: 304},
			Field{Type: "nmethod", Name: "_comp_level", TypeString: "int", Offset: 308},
			Field{Type: "ConstMethod", Name: "_name_index", TypeString: "u2", Offset: 34},
			Field{Type: "ConstMethod", Name: "_signature_index", TypeString: "u2", Offset: 36},
			Field{Type: "ConstMethod", Name: "_flags", TypeString: "u2", Offset: 28},
			Field{Type: "ConstMethod", Name: "_code_size", TypeString: "u2", Offset: 32},
			Field{Type: "CompiledMethod", Name: "_scopes_data_begin", TypeString: "address", Offset: 120},
			Field{Type: "nmethod", Name: "_metadata_offset", TypeString: "int", Offset: 260},
			Field{Type: "nmethod", Name: "_scopes_pcs_offset", TypeString: "int", Offset: 268},
			Field{Type: "nmethod", Name: "_dependencies_offset", TypeString: "int", Offset: 272},
		)
		types = append(types, Type{Name: "HeapBlock", Size: 16}, Type{Name: "ConstMethod", Size: 48})
		ints = append(ints, Constant{Name: "ConstMethod::_has_linenumber_table", Value: 1})
	} else {
		fields = append(fields,
			Field{Type: "GrowableArrayBase", Name: "_len", TypeString: "int", Offset: 0},
			Field{Type: "CodeHeap", Name: "_memory", TypeString: "VirtualSpace", Offset: 0},
			Field{Type: "CodeHeap", Name: "_segmap", TypeString: "VirtualSpace", Offset: 112},
			Field{Type: "CodeHeap", Name: "_log2_segment_size", TypeString: "int", Offset: 248},
			Field{Type: "HeapBlock::Header", Name: "_length", TypeString: "uint32_t", Offset: 0},
			Field{Type: "HeapBlock::Header", Name: "_used", TypeString: "bool", Offset: 4},
			Field{Type: "CodeBlob", Name: "_name", TypeString: "const char*", Offset: 8},
			Field{Type: "CodeBlob", Name: "_size", TypeString: "int", Offset: 24},
			Field{Type: "CodeBlob", Name: "_code_offset", TypeString: "int", Offset: 36},
			Field{Type: "CodeBlob", Name: "_data_offset", TypeString: "int", Offset: 40},
			Field{Type: "CodeBlob", Name: "_frame_size", TypeString: "int", Offset: 44},
			Field{Type: "CodeBlob", Name: "_frame_complete_offset", TypeString: "int16_t", Offset: 54},
			Field{Type: "CodeBlob", Name: "_kind", TypeString: "CodeBlobKind", Offset: 56},
			Field{Type: "nmethod", Name: "_method", TypeString: "Method*", Offset: 80},
			Field{Type: "nmethod", Name: "_verified_entry_offset", TypeString: "u2", Offset: 154},
			Field{Type: "nmethod", Name: "_compile_id", TypeString: "int", Offset: 212},
			Field{Type: "nmethod", Name: "_comp_level", TypeString: "CompLevel", Offset: 216},
			Field{Type: "ConstMethod", Name: "_name_index", TypeString: "u2", Offset: 36},
			Field{Type: "ConstMethod", Name: "_signature_index", TypeString: "u2", Offset: 38},
			Field{Type: "ConstMethod", Name: "_flags._flags", TypeString: "u4", Offset: 28},
			Field{Type: "ConstMethod", Name: "_code_size", TypeString: "u2", Offset: 34},
			Field{Type: "CodeBlob", Name: "_mutable_data", TypeString: "address", Offset: 16},
			Field{Type: "CodeBlob", Name: "_relocation_size", TypeString: "int", Offset: 28},
			Field{Type: "CodeBlob", Name: "_mutable_data_size", TypeString: "int", Offset: 48},
			Field{Type: "nmethod", Name: "_immutable_data", TypeString: "address", Offset: 96},
			Field{Type: "nmethod", Name: "_immutable_data_size", TypeString: "int", Offset: 160},
			Field{Type: "nmethod", Name: "_scopes_pcs_offset", TypeString: "int", Offset: 196},
			Field{Type: "nmethod", Name: "_scopes_data_offset", TypeString: "int", Offset: 200},
		)
		types = append(types, Type{Name: "HeapBlock", Size: 8}, Type{Name: "ConstMethod", Size: 56})
		ints = append(ints, Constant{Name: "ConstMethodFlags::_misc_has_linenumber_table", Value: 1})
		for i, k := range []string{"Nmethod", "Buffer", "Adapter", "Vtable", "MHAdapter", "RuntimeStub"} {
			ints = append(ints, Constant{Name: "CodeBlobKind::" + k, Value: int64(i + 1)})
		}
	}
	return fields, types, ints
}

// ccBlobSpec describes one block of a synthetic code heap.
type ccBlobSpec struct {
	segs   int
	free   bool
	kind   string // KindNMethod, KindBuffer, KindAdapter, KindRuntimeStub
	name   string
	method [3]string // nmethods: class (internal form), name, signature
	level  int
}

var ccKindValues = map[string]int64{KindNMethod: 1, KindBuffer: 2, KindAdapter: 3, KindRuntimeStub: 6}

var ccVtables = map[string]string{KindNMethod: "_ZTV7nmethod", KindBuffer: "_ZTV10BufferBlob",
	KindAdapter: "_ZTV11AdapterBlob", KindRuntimeStub: "_ZTV11RuntimeStub"}

// ccImage is a synthetic JVM: one code heap of 128-byte segments, its segment map, blobs and the
// metadata of their methods.
type ccImage struct {
	l                 ccLayout
	img               *fakeImage
	heap, segmap      []byte
	heapLow, mapLow   uint64
	fields            []Field
	types             []Type
	ints              []Constant
	want              []CodeBlob
	blockOf           []uint64 // block address of each spec
	heapObj, heapsArr uint64
	inner             uint64   // the Method* every nmethod inlines
	debug             [][]byte // the nmethods' PcDescs, scopes data and metadata (for the fuzzer)
}

// ccOuterLines is the line number table of every nmethod's own method; the inlined method has none.
var ccOuterLines = []linePair{{0, 10}, {4, 11}, {9, 15}, {40, 9}, {300, 2000}}

// ccX is the number of excluded UNSIGNED5 byte values of the layout's JDK.
func (l ccLayout) x() uint32 {
	if l.jdk17 {
		return 0
	}
	return 1
}

const ccLog2Seg = 7

func ccBuild(l ccLayout, specs []ccBlobSpec, spare int) *ccImage {
	c := &ccImage{l: l, img: newFakeImage()}
	img := c.img
	le := func(b []byte, off uint64, v uint64, n int) {
		copy(b[off:], binary.LittleEndian.AppendUint64(nil, v)[:n])
	}
	segs := spare
	for _, s := range specs {
		segs += s.segs
	}
	c.heap = make([]byte, segs<<ccLog2Seg)
	c.segmap = slices.Repeat([]byte{freeSegment}, segs)
	c.heapLow = img.alloc(c.heap)
	c.mapLow = img.alloc(c.segmap)
	vtables := map[string]uint64{}
	for kind, sym := range ccVtables {
		vtables[kind] = img.alloc(make([]byte, 64))
		img.syms[sym] = vtables[kind]
	}
	seg := 0
	for i, s := range specs {
		block := c.heapLow + uint64(seg)<<ccLog2Seg
		c.blockOf = append(c.blockOf, block)
		for k := range s.segs {
			c.segmap[seg+k] = byte(min(k, 0xFE))
		}
		off := uint64(seg) << ccLog2Seg
		if l.jdk17 {
			le(c.heap, off, uint64(s.segs), 8)
			le(c.heap, off+8, b2u(!s.free), 1)
		} else {
			le(c.heap, off, uint64(s.segs), 4)
			le(c.heap, off+4, b2u(!s.free), 1)
		}
		seg += s.segs
		if s.free {
			continue
		}
		blob := block + l.hbSize()
		bo := off + l.hbSize()
		size := uint64(s.segs)<<ccLog2Seg - l.hbSize()
		hdr := uint64(64)
		if s.kind == KindNMethod {
			hdr = l.nmethodSize()
		}
		codeOff, dataOff := hdr+32, size-16
		b := CodeBlob{Start: blob + codeOff, End: blob + dataOff, BlobAddr: blob, BlobSize: int(size),
			Kind: s.kind, Name: s.name, FrameSize: 16 * (i + 1), FrameComplete: 5}
		namePtr := img.str(s.name)
		if l.jdk17 {
			le(c.heap, bo, vtables[s.kind]+16, 8)
			le(c.heap, bo+96, namePtr, 8)
			le(c.heap, bo+12, size, 4)
			le(c.heap, bo+20, 5, 4)
			le(c.heap, bo+28, uint64(2*(i+1)), 4)
			le(c.heap, bo+32, b.Start, 8)
			le(c.heap, bo+40, b.End, 8)
		} else {
			le(c.heap, bo+8, namePtr, 8)
			le(c.heap, bo+24, size, 4)
			le(c.heap, bo+36, codeOff, 4)
			le(c.heap, bo+40, dataOff, 4)
			le(c.heap, bo+44, uint64(2*(i+1)), 4)
			le(c.heap, bo+54, 5, 2)
			le(c.heap, bo+56, uint64(ccKindValues[s.kind]), 1)
		}
		if s.kind == KindNMethod {
			b.Level, b.CompileID, b.VerifiedEntry = s.level, 100+i, b.Start+16
			b.Method = c.method(s.method, ccOuterLines)
			if c.inner == 0 {
				c.inner = c.method([3]string{"java/lang/Math", "abs", "(I)I"}, nil)
			}
			c.debugInfo(bo, blob, b.Method)
			b.MethodName = ccExternal(s.method)
			if l.jdk17 {
				le(c.heap, bo+112, b.Method, 8)
				le(c.heap, bo+224, b.VerifiedEntry, 8)
				le(c.heap, bo+304, uint64(b.CompileID), 4)
				le(c.heap, bo+308, uint64(b.Level), 4)
			} else {
				le(c.heap, bo+80, b.Method, 8)
				le(c.heap, bo+154, 16, 2)
				le(c.heap, bo+212, uint64(b.CompileID), 4)
				le(c.heap, bo+216, uint64(b.Level), 1)
			}
		}
		c.want = append(c.want, b)
	}

	// The heap, its list and the statics.
	var hobj [264]byte
	mem, sm := uint64(0), uint64(112)
	if l.jdk17 {
		mem, sm = 8, 120
	}
	for _, v := range []struct{ off, val uint64 }{
		{mem, c.heapLow}, {mem + 8, c.heapLow + uint64(len(c.heap)) + 4096},
		{mem + 16, c.heapLow}, {mem + 24, c.heapLow + uint64(len(c.heap))},
		{sm + 16, c.mapLow}, {sm + 24, c.mapLow + uint64(len(c.segmap))},
	} {
		le(hobj[:], v.off, v.val, 8)
	}
	log2Off := uint64(248)
	if l.jdk17 {
		log2Off = 256
	}
	le(hobj[:], log2Off, ccLog2Seg, 4)
	c.heapObj = img.alloc(hobj[:])
	data := img.alloc(binary.LittleEndian.AppendUint64(nil, c.heapObj))
	arr := make([]byte, 16)
	le(arr, 0, 1, 4)
	le(arr, 8, data, 8)
	c.heapsArr = img.alloc(arr)
	heaps := img.alloc(binary.LittleEndian.AppendUint64(nil, c.heapsArr))
	release := img.alloc(binary.LittleEndian.AppendUint64(nil, img.str("25.0.3+9-LTS")))
	major := uint64(25)
	if l.jdk17 {
		major = 17
	}
	c.fields, c.types, c.ints = l.tables(heaps, release, img.alloc(binary.LittleEndian.AppendUint64(nil, major)))
	return c
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// ccExternal is the expected external name of a method spec (the test's own, simple rendering).
func ccExternal(m [3]string) string {
	if _, err := javaname.ParseMethodDescriptor(m[2]); err != nil {
		panic(err)
	}
	return javaname.Name(m[0], m[1], m[2], javaname.Options{Params: true, Return: true})
}

// method writes a Method, its ConstMethod (with lines, if any), ConstantPool, class and symbols.
func (c *ccImage) method(m [3]string, lines []linePair) uint64 {
	img := c.img
	sym := func(s string) uint64 {
		b := make([]byte, 6+len(s))
		binary.LittleEndian.PutUint16(b[4:], uint16(len(s)))
		copy(b[6:], s)
		return img.alloc(b)
	}
	klass := make([]byte, 32)
	binary.LittleEndian.PutUint64(klass[24:], sym(m[0]))
	cp := make([]byte, 72+8*8)
	binary.LittleEndian.PutUint64(cp[24:], img.alloc(klass))
	binary.LittleEndian.PutUint32(cp[60:], 8)
	binary.LittleEndian.PutUint64(cp[72+8*3:], sym(m[1]))
	binary.LittleEndian.PutUint64(cp[72+8*6:], sym(m[2])|1) // a tagged slot
	// ConstMethod, 64 bytes of bytecodes, the line number table; padded to words.
	sizeof, ni, si, codeSize := 48, 34, 36, 32
	if !c.l.jdk17 {
		sizeof, ni, si, codeSize = 56, 36, 38, 34
	}
	const code = 64
	cm := make([]byte, sizeof+code)
	if lines != nil {
		cm = append(cm, ccEncodeLines(lines, c.l.x())...)
		binary.LittleEndian.PutUint16(cm[28:], 1) // has_linenumber_table
	}
	cm = append(cm, make([]byte, 8-len(cm)%8)...)
	binary.LittleEndian.PutUint32(cm[24:], uint32(len(cm)/8))
	binary.LittleEndian.PutUint16(cm[codeSize:], code)
	binary.LittleEndian.PutUint64(cm[8:], img.alloc(cp))
	binary.LittleEndian.PutUint16(cm[ni:], 3)
	binary.LittleEndian.PutUint16(cm[si:], 6)
	meth := make([]byte, 16)
	binary.LittleEndian.PutUint64(meth[8:], img.alloc(cm))
	return img.alloc(meth)
}

// debugInfo writes an nmethod's debug information: metadata {its method, the inlined method}, two
// scope records (the method at bci 5; the inlined method at bci 3 called from it) and PcDescs
// (-1: none; 10: the method; 20: the inlined chain; the end sentinel).
func (c *ccImage) debugInfo(bo, nm, method uint64) {
	x := c.l.x()
	data := []byte{0} // offset 0 is "no scope"
	rec := func(sender, idx, bci uint32) uint32 {
		off := uint32(len(data))
		for _, v := range []uint32{sender, idx, bci + 1} {
			data = append(data, ccEncodeUnsigned5(v, x)...)
		}
		return off
	}
	outer := rec(0, 1, 5)
	inner := rec(outer, 2, 3)
	var pcs []byte
	for _, p := range [][2]uint32{{0xFFFFFFFF, 0}, {10, outer}, {20, inner}, {0x7FFFFFFF, 0}} {
		e := make([]byte, 16)
		binary.LittleEndian.PutUint32(e, p[0])
		binary.LittleEndian.PutUint32(e[4:], p[1])
		pcs = append(pcs, e...)
	}
	meta := binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, method), c.inner)
	le := func(off, v uint64, n int) { copy(c.heap[bo+off:], binary.LittleEndian.AppendUint64(nil, v)[:n]) }
	if c.l.jdk17 {
		// [metadata][scopes data][PcDescs], at offsets from the nmethod.
		region := append(append(slices.Clone(meta), data...), pcs...)
		r := c.img.alloc(region)
		le(260, r-nm, 4)
		le(120, r+16, 8)
		le(268, r+16+uint64(len(data))-nm, 4)
		le(272, r+uint64(len(region))-nm, 4)
		c.debug = append(c.debug, region)
		return
	}
	// Immutable data [PcDescs][scopes data]; mutable data [relocations][metadata].
	imm := append(slices.Clone(pcs), data...)
	mut := append(make([]byte, 8), meta...)
	le(96, c.img.alloc(imm), 8)
	le(160, uint64(len(imm)), 4)
	le(196, 0, 4)
	le(200, uint64(len(pcs)), 4)
	le(16, c.img.alloc(mut), 8)
	le(28, 8, 4)
	le(48, uint64(len(mut)), 4)
	c.debug = append(c.debug, imm, mut)
}

// ccEncodeUnsigned5 is HotSpot's UNSIGNED5 writer (the test's own).
func ccEncodeUnsigned5(v, x uint32) []byte {
	l := 256 - x - 64
	var out []byte
	for i := 0; i < 4 && v >= l; i++ {
		v -= l
		out = append(out, byte(x+l+v%64))
		v /= 64
	}
	return append(out, byte(x+v))
}

// ccEncodeLines is CompressedLineNumberWriteStream (the test's own), with the terminating 0.
func ccEncodeLines(pairs []linePair, x uint32) []byte {
	var out []byte
	var bci, line int32
	zz := func(v int32) uint32 { return uint32(v<<1) ^ uint32(v>>31) }
	for _, p := range pairs {
		db, dl := p.bci-bci, p.line-line
		bci, line = p.bci, p.line
		if db == 0 && dl == 0 {
			continue
		}
		if db&^0x1F == 0 && dl&^7 == 0 && db<<3|dl != 0xFF {
			out = append(out, byte(db<<3|dl))
			continue
		}
		out = append(out, 0xFF)
		out = append(out, ccEncodeUnsigned5(zz(db), x)...)
		out = append(out, ccEncodeUnsigned5(zz(dl), x)...)
	}
	return append(out, 0)
}

// jvm returns the synthetic JVM; omit drops a field ("Type::name") or a type from its table.
func (c *ccImage) jvm(omit string) *JVM {
	fields := slices.DeleteFunc(slices.Clone(c.fields), func(f Field) bool { return f.Type+"::"+f.Name == omit })
	types := slices.DeleteFunc(slices.Clone(c.types), func(ty Type) bool { return ty.Name == omit })
	syms := map[string]uint64{}
	for k, v := range c.img.syms {
		syms[k] = v
	}
	return &JVM{Mem: &c.img.mem, Table: NewTable(fields, types, c.ints, nil), r: reader{&c.img.mem}, syms: syms}
}

func ccSampleSpecs() []ccBlobSpec {
	return []ccBlobSpec{
		{segs: 40, kind: KindBuffer, name: "Interpreter"},
		{segs: 3, kind: KindAdapter, name: "I2C/C2I adapters"},
		{segs: 2, free: true},
		{segs: 300, kind: KindBuffer, name: "StubRoutines (1)"}, // more than 0xFE segments: several hops
		{segs: 4, kind: KindNMethod, name: "nmethod", level: 4,
			method: [3]string{"java/lang/String", "indexOf", "(II)I"}},
		{segs: 5, kind: KindNMethod, name: "native nmethod", level: 0,
			method: [3]string{"pkg/Lambda$$Lambda+0x0000000800c01234", "run", "([[Ljava/lang/String;J)[Ljava/lang/Object;"}},
		{segs: 3, kind: KindRuntimeStub, name: "Shared Runtime wrong_method_blob"},
		{segs: 6, kind: KindNMethod, name: "nmethod", level: 3,
			method: [3]string{"Hello", "<init>", "()V"}},
	}
}

func TestCodeCacheRecorded(t *testing.T) {
	for _, l := range []ccLayout{{jdk17: true}, {jdk17: false}} {
		t.Run(fmt.Sprintf("jdk17=%v", l.jdk17), func(t *testing.T) {
			c := ccBuild(l, ccSampleSpecs(), 10)
			vm := c.jvm("")
			got, err := vm.CodeBlobs()
			if err != nil {
				t.Fatal(err)
			}
			want := slices.Clone(c.want)
			for i := range want {
				want[i].Kind = refineKind(want[i].Kind, want[i].Name)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("CodeBlobs (-want +got):\n%s", d)
			}
			if want[3].MethodName != "int java.lang.String.indexOf(int, int)" ||
				want[4].MethodName != "java.lang.Object[] pkg.Lambda$$Lambda/0x0000000800c01234.run(java.lang.String[][], long)" ||
				want[4].Kind != KindNativeNMethod || want[5].MethodName != "" || want[5].Kind != KindRuntimeStub ||
				want[0].Kind != KindInterpreter || want[2].Kind != KindStubRoutines {
				t.Errorf("names and kinds: %+v", want)
			}
			cc, err := vm.CodeCache()
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(3, 4))
			for _, b := range want {
				for _, pc := range []uint64{b.BlobAddr, b.Start, b.End - 1, b.Start + rng.Uint64N(b.End-b.Start)} {
					f, err := cc.FindBlob(pc)
					if err != nil || f == nil || !cmp.Equal(*f, b) {
						t.Errorf("FindBlob(%#x) = %+v, %v; want %+v", pc, f, err, b)
					}
				}
			}
			free := c.blockOf[2]
			end := c.heapLow + uint64(len(c.heap))
			for _, pc := range []uint64{free, free + 200, end - 1, end, c.heapLow - 1, 0} {
				if f, err := cc.FindBlob(pc); f != nil || err != nil {
					t.Errorf("FindBlob(%#x) in free space = %+v, %v", pc, f, err)
				}
			}
			if !cc.Contains(c.heapLow) || cc.Contains(c.heapLow-1) || !cc.Contains(end+4095) || cc.Contains(end+4096) {
				t.Errorf("Contains: bounds are not the heap's reserved memory")
			}
			if h := cc.Heaps(); len(h) != 1 || h[0].Low != c.heapLow || h[0].Log2Segment != ccLog2Seg {
				t.Errorf("heaps %+v", h)
			}
			if s, err := vm.MethodName(want[6].Method); err != nil || s != "void Hello.<init>()" {
				t.Errorf("MethodName = %q, %v", s, err)
			}

			// Scopes: the PcDesc at or after pc, its chain of records, names and lines.
			nm := want[3]
			outer := func(bci, line int) Scope { return Scope{nm.Method, nm.MethodName, bci, line} }
			inner := Scope{c.inner, "int java.lang.Math.abs(int)", 3, -1}
			for _, tc := range []struct {
				off  uint64
				top  bool
				want []Scope
			}{
				{5, true, []Scope{outer(5, 11)}},
				{9, true, []Scope{outer(5, 11)}},
				{10, false, []Scope{outer(5, 11)}},
				{10, true, []Scope{inner, outer(5, 11)}},
				{20, false, []Scope{inner, outer(5, 11)}},
				{20, true, []Scope{outer(-1, 10)}}, // the end sentinel: no scope
				{nm.End - nm.Start - 1, false, []Scope{outer(-1, 10)}},
			} {
				got, err := cc.Scopes(&nm, nm.Start+tc.off, tc.top)
				if err != nil || !cmp.Equal(got, tc.want) {
					t.Errorf("Scopes(+%d, top %v) = %+v, %v; want %+v", tc.off, tc.top, got, err, tc.want)
				}
			}
			for bci, line := range map[int]int{-1: 10, 0: 10, 3: 10, 4: 11, 8: 11, 9: 15, 39: 15, 40: 9, 63: 9, 64: -1, -2: -1} {
				if got, err := cc.LineNumber(nm.Method, bci); err != nil || got != line {
					t.Errorf("LineNumber(bci %d) = %d, %v; want %d", bci, got, err, line)
				}
			}
			if _, err := cc.Scopes(&want[0], want[0].Start, true); err == nil {
				t.Error("Scopes of the interpreter: no error")
			}
			if _, err := cc.Scopes(&nm, nm.End, true); err == nil {
				t.Error("Scopes outside the nmethod: no error")
			}
		})
	}
}

// TestCodeCacheDead: zombie and unloaded nmethods are dead on JDK 17 (the sweeper's states); JDK 25
// has no such states, and other blobs are never dead.
func TestCodeCacheDead(t *testing.T) {
	for _, l := range []ccLayout{{jdk17: true}, {jdk17: false}} {
		t.Run(fmt.Sprintf("jdk17=%v", l.jdk17), func(t *testing.T) {
			c := ccBuild(l, ccSampleSpecs(), 0)
			cc, err := c.jvm("").CodeCache()
			if err != nil {
				t.Fatal(err)
			}
			blobs, err := cc.Blobs()
			if err != nil {
				t.Fatal(err)
			}
			setState := func(b *CodeBlob, st int8) { c.heap[b.BlobAddr-c.heapLow+l.stateOff()] = byte(st) }
			for i := range blobs {
				b := &blobs[i]
				for st := int8(-1); st <= 4; st++ {
					setState(b, st)
					want := l.jdk17 && (st == 3 || st == 4) && (b.Kind == KindNMethod || b.Kind == KindNativeNMethod)
					if got, err := cc.Dead(b); got != want || err != nil {
						t.Errorf("Dead(%s %q) in state %d = %v, %v; want %v", b.Kind, b.Label(), st, got, err, want)
					}
				}
				setState(b, 0)
			}
			if got, err := cc.Dead(nil); got || err != nil {
				t.Errorf("Dead(nil) = %v, %v", got, err)
			}

			// Without the entry: a *MissingError, and not dead.
			cc2, err := c.jvm("nmethod::_state").CodeCache()
			if err != nil {
				t.Fatal(err)
			}
			var me *MissingError
			if got, err := cc2.Dead(&blobs[3]); got || !errors.As(err, &me) || !slices.Contains(me.Missing, "nmethod::_state") {
				t.Errorf("Dead without nmethod::_state = %v, %v", got, err)
			}
		})
	}
}

// TestCodeCacheMissingEntry: a table without an entry the code cache needs says which, and the rest of
// the JVM still reads.
func TestCodeCacheMissingEntry(t *testing.T) {
	for _, tc := range []struct{ omit, want string }{
		{"CodeBlob::_name", "CodeBlob::_name"},
		{"HeapBlock", "sizeof(HeapBlock)"},
		{"CodeCache::_heaps", "CodeCache::_heaps"},
		{"CodeBlob::_data_offset", "CodeBlob::_code_end|_data_offset"},
	} {
		vm := ccBuild(ccLayout{}, ccSampleSpecs(), 0).jvm(tc.omit)
		_, err1 := vm.CodeBlobs()
		_, err2 := vm.FindBlob(0x1000)
		for _, err := range []error{err1, err2} {
			var me *MissingError
			if !errors.As(err, &me) || !errors.Is(err, ErrUnsupportedJVM) || !slices.Contains(me.Missing, tc.want) ||
				!strings.Contains(err.Error(), "code cache") {
				t.Errorf("without %s: %v, want a MissingError naming %s", tc.omit, err, tc.want)
			}
		}
		if v, err := vm.Version(); err != nil || v != "25.0.3+9-LTS" {
			t.Errorf("without %s: Version() = %q, %v", tc.omit, v, err)
		}
	}
	// Without what method names need, the blobs still list, with the error.
	vm := ccBuild(ccLayout{}, ccSampleSpecs(), 0).jvm("Symbol::_body")
	blobs, err := vm.CodeBlobs()
	var me *MissingError
	if len(blobs) != 7 || !errors.As(err, &me) || !slices.Contains(me.Missing, "Symbol::_body") || blobs[3].MethodName != "" {
		t.Errorf("without Symbol::_body: %d blobs, %v", len(blobs), err)
	}
	if _, err := vm.MethodName(blobs[3].Method); !errors.As(err, &me) {
		t.Errorf("MethodName without Symbol::_body: %v", err)
	}
	// Scopes without names, or without lines, or without PcDescs.
	for _, tc := range []struct {
		omit       string
		name, line bool
	}{{"Symbol::_body", false, true}, {"ConstMethod::_code_size", true, false}, {"PcDesc::_pc_offset", false, false}} {
		vm := ccBuild(ccLayout{}, ccSampleSpecs(), 0).jvm(tc.omit)
		c, err := vm.CodeCache()
		if err != nil {
			t.Fatal(err)
		}
		blobs, _ := c.Blobs()
		nm := blobs[3]
		scopes, err := c.Scopes(&nm, nm.Start+10, true)
		if !errors.As(err, &me) || !slices.Contains(me.Missing, tc.omit) {
			t.Errorf("Scopes without %s: %v", tc.omit, err)
		}
		if tc.omit == "PcDesc::_pc_offset" {
			if scopes != nil {
				t.Errorf("Scopes without PcDescs: %+v", scopes)
			}
			continue
		}
		if len(scopes) != 2 || (scopes[1].MethodName != "") == !tc.name || (scopes[1].Line == 11) == !tc.line || scopes[1].BCI != 5 {
			t.Errorf("Scopes without %s: %+v", tc.omit, scopes)
		}
	}
}

func TestUnsigned5(t *testing.T) {
	for _, tc := range []struct {
		x    uint32
		v    uint32
		want []byte
	}{
		{0, 0, []byte{0}}, {0, 191, []byte{191}}, {0, 192, []byte{192, 0}}, {0, 193, []byte{193, 0}},
		{1, 0, []byte{1}}, {1, 190, []byte{191}}, {1, 191, []byte{192, 1}},
	} {
		if got := ccEncodeUnsigned5(tc.v, tc.x); !slices.Equal(got, tc.want) {
			t.Errorf("encode(%d, x=%d) = %v, want %v", tc.v, tc.x, got, tc.want)
		}
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, x := range []uint32{0, 1} {
		for i := range 20000 {
			v := rng.Uint32() >> (i % 32)
			b := ccEncodeUnsigned5(v, x)
			got, next, ok := readUnsigned5(append(b, 7, 7), 0, x)
			if !ok || got != v || next != len(b) || len(b) > unsigned5Max {
				t.Fatalf("x=%d: %d -> %v -> %d, %d, %v", x, v, b, got, next, ok)
			}
			if x == 1 && slices.Contains(b, 0) {
				t.Fatalf("x=1: %d encodes with a zero byte: %v", v, b)
			}
		}
	}
	for _, bad := range [][]byte{{}, {200}, {200, 200, 200}, {0}} {
		if _, _, ok := readUnsigned5(bad, 0, 1); ok {
			t.Errorf("%v accepted", bad)
		}
	}
}

func TestLineTable(t *testing.T) {
	pairs := []linePair{{0, 28}, {17, 29}, {35, 30}, {120, 38}, {147, 35}, {153, 40}, {2000, 70000}, {2001, 1}}
	for _, x := range []uint32{0, 1} {
		got, ok := decodeLineTable(append(ccEncodeLines(pairs, x), 9, 9), x)
		if !ok || !slices.Equal(got, pairs) {
			t.Errorf("x=%d: %v, %v", x, got, ok)
		}
		if _, ok := decodeLineTable(ccEncodeLines(pairs, x)[:5], x); ok {
			t.Errorf("x=%d: a truncated table decodes", x)
		}
	}
	for bci, want := range map[int]int{0: 28, 16: 28, 17: 29, 146: 38, 147: 35, 150: 35, 2000: 70000, 2001: 1, 2002: 1, -1: 28, 5000: -1} {
		if got := lineFor(pairs, bci, 5000); got != want {
			t.Errorf("lineFor(%d) = %d, want %d", bci, got, want)
		}
	}
}

func FuzzLineTable(f *testing.F) {
	f.Add([]byte{0x08, 0xFF, 0x05, 0x07, 0}, true)
	f.Add(ccEncodeLines([]linePair{{0, 1}, {300, 2}}, 0), false)
	f.Fuzz(func(t *testing.T, b []byte, jdk20 bool) {
		x := uint32(0)
		if jdk20 {
			x = 1
		}
		pairs, _ := decodeLineTable(b, x)
		if len(pairs) > len(b) {
			t.Fatalf("%d pairs from %d bytes", len(pairs), len(b))
		}
		_ = lineFor(pairs, len(b), 1<<16)
		for pos := 0; pos < len(b); {
			_, next, ok := readUnsigned5(b, pos, x)
			if !ok {
				break
			}
			if next <= pos || next > pos+unsigned5Max {
				t.Fatalf("readUnsigned5 at %d: next %d", pos, next)
			}
			pos = next
		}
	})
}

// FuzzCodeCache walks a code heap and a segment map damaged by arbitrary patches, and looks up
// arbitrary pcs: no panic, bounded work. Patches (3 bytes each: a little-endian offset into the heap
// followed by its segment map, and a byte) keep the inputs small and start from real structures;
// pointers in them may lead anywhere in the image.
func FuzzCodeCache(f *testing.F) {
	f.Add(true, []byte{}, []byte{0, 1, 2, 3, 200, 100})
	f.Add(false, []byte{}, []byte{0, 1, 2, 3, 200, 100})
	f.Add(false, []byte{0, 0, 0xff, 4, 0, 0xff, 8, 0, 0}, []byte{1, 2, 3})
	f.Add(true, []byte{0x10, 0x02, 0x80, 0x90, 0x02, 0x07}, []byte{9})
	// A block length near 2^64 once sent the walk backwards forever.
	f.Add(true, []byte{0, 0, 0xf0, 1, 0, 0xff, 2, 0, 0xff, 3, 0, 0xff, 4, 0, 0xff, 5, 0, 0xff, 6, 0, 0xff, 7, 0, 0xff}, []byte{})
	specs := slices.Delete(ccSampleSpecs(), 3, 4) // without the big block: small inputs fuzz faster
	f.Fuzz(func(t *testing.T, jdk17 bool, patches, pcs []byte) {
		c := ccBuild(ccLayout{jdk17: jdk17}, specs, 4)
		regions := append([][]byte{c.heap, c.segmap}, c.debug...)
		size := 0
		for _, r := range regions {
			size += len(r)
		}
		for ; len(patches) >= 3; patches = patches[3:] {
			off := int(binary.LittleEndian.Uint16(patches)) % size
			for _, r := range regions {
				if off < len(r) {
					r[off] = patches[2]
					break
				}
				off -= len(r)
			}
		}
		vm := c.jvm("")
		blobs, err := vm.CodeBlobs()
		if err == nil && len(blobs) > len(c.segmap) {
			t.Fatalf("%d blobs from %d segments", len(blobs), len(c.segmap))
		}
		cc, err := vm.CodeCache()
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range pcs[:min(len(pcs), 64)] {
			_, _ = cc.FindBlob(c.heapLow + uint64(p)*uint64(i+1)*16)
		}
		for i := range blobs {
			b := &blobs[i]
			for _, p := range pcs[:min(len(pcs), 8)] {
				if b.End > b.Start {
					_, _ = cc.Scopes(b, b.Start+uint64(p)%(b.End-b.Start), p%2 == 0)
				}
			}
		}
	})
}
