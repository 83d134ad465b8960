package usdt_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/jvmkit/jvmkit/internal/testutil"
	"github.com/jvmkit/jvmkit/perfmap"
	"github.com/jvmkit/jvmkit/usdt"
)

func libjvm(jdk testutil.JDK) string { return filepath.Join(jdk.Home, "lib", "server", "libjvm.so") }

// TestLibjvmNotes compares the notes of every JDK's libjvm.so with readelf -n.
func TestLibjvmNotes(t *testing.T) {
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		if n, err := jdk.Probes(); err == nil && n == 0 {
			probes, err := usdt.ReadFile(libjvm(jdk))
			if notes := readelfNotes(t, libjvm(jdk)); err != nil || len(probes) != 0 || len(notes) != 0 {
				t.Fatalf("a libjvm.so without stapsdt notes: %d probes (%v), readelf shows %d notes", len(probes), err, len(notes))
			}
			testutil.SkipWithoutProbes(t, jdk) // after checking that we and readelf agree on none
		}
		probes := checkReadelf(t, libjvm(jdk))
		kinds := make(map[usdt.ArgKind]int)
		sites := make(map[string]int)
		for _, p := range probes {
			sites[p.String()]++
			for _, a := range p.Args {
				kinds[a.Kind]++
			}
			if p.Semaphore != 0 {
				t.Errorf("%s has a semaphore", &p)
			}
		}
		t.Logf("%s: %d sites of %d probes; %d register, %d memory, %d constant arguments", jdk, len(probes),
			len(sites), kinds[usdt.ArgReg], kinds[usdt.ArgMem], kinds[usdt.ArgConst])
		for _, name := range []string{"hotspot:compiled__method__load", "hotspot:object__alloc", "hotspot:class__loaded"} {
			if sites[name] == 0 {
				t.Errorf("no %s", name)
			}
		}
		out, errOut, code := jvmkit(t, "usdt", "list", libjvm(jdk))
		if code != 0 {
			t.Fatalf("jvmkit usdt list: exit status %d: %s", code, errOut)
		}
		checkList(t, out, readelfNotes(t, libjvm(jdk)))
	})
}

// javaType turns a field descriptor at the start of sig into a Java type name and returns the rest.
func javaType(sig string) (string, string) {
	dims := 0
	for strings.HasPrefix(sig, "[") {
		dims++
		sig = sig[1:]
	}
	if sig == "" {
		return "?", ""
	}
	var name string
	switch sig[0] {
	case 'L':
		end := strings.IndexByte(sig, ';')
		if end < 0 {
			return "?", ""
		}
		name, sig = strings.ReplaceAll(sig[1:end], "/", "."), sig[end+1:]
	default:
		name = map[byte]string{'B': "byte", 'C': "char", 'D': "double", 'F': "float", 'I': "int", 'J': "long",
			'S': "short", 'Z': "boolean", 'V': "void"}[sig[0]]
		sig = sig[1:]
	}
	return name + strings.Repeat("[]", dims), sig
}

// externalName formats a method the way Compiler.perfmap does (Method::external_name):
// "int java.lang.String.hashCode()" from "java/lang/String", "hashCode", "()I". A hidden class's internal
// name ends in "+0x<address>", its external name in "/0x<address>".
func externalName(class, method, sig string) string {
	class = strings.ReplaceAll(class, "/", ".")
	if i := strings.LastIndex(class, "+0x"); i >= 0 {
		class = class[:i] + "/" + class[i+1:]
	}
	params, ret, _ := strings.Cut(strings.TrimPrefix(sig, "("), ")")
	var ps []string
	for params != "" {
		var p string
		p, params = javaType(params)
		ps = append(ps, p)
	}
	r, _ := javaType(ret)
	return r + " " + class + "." + method + "(" + strings.Join(ps, ", ") + ")"
}

func TestExternalName(t *testing.T) {
	for _, tc := range [][4]string{
		{"java/lang/String", "hashCode", "()I", "int java.lang.String.hashCode()"},
		{"Busy", "spin", "(JI)J", "long Busy.spin(long, int)"},
		{"java/util/concurrent/ConcurrentHashMap", "tabAt", "([Ljava/util/concurrent/ConcurrentHashMap$Node;I)Ljava/util/concurrent/ConcurrentHashMap$Node;",
			"java.util.concurrent.ConcurrentHashMap$Node java.util.concurrent.ConcurrentHashMap.tabAt(java.util.concurrent.ConcurrentHashMap$Node[], int)"},
		{"java/lang/Object", "<init>", "()V", "void java.lang.Object.<init>()"},
		{"ManyMethods$$Lambda+0x0000000094048000", "applyAsInt", "(I)I", "int ManyMethods$$Lambda/0x0000000094048000.applyAsInt(int)"},
	} {
		if got := externalName(tc[0], tc[1], tc[2]); got != tc[3] {
			t.Errorf("%v: %q", tc, got)
		}
	}
}

// TestCompiledMethodLoad traces hotspot:compiled__method__load with jvmkit usdt trace while a JVM compiles
// thousands of methods, then compares each traced method's code address with the JVM's own perf map
// (Compiler.perfmap). The probe needs no flag: HotSpot fires it from nmethod::post_compiled_method_load_event
// unconditionally (JDK 17 and 25 alike).
func TestCompiledMethodLoad(t *testing.T) {
	testutil.MustHaveBPF(t)
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		t.Parallel() // two JDKs at a time: each traces for a fixed 8 s
		testutil.SkipWithoutProbes(t, jdk)
		for _, ns := range []bool{false, true} {
			name := "plain"
			if ns {
				name = "namespace"
				// The pid and mount namespace changes nothing JDK-specific: once, where the tier runs whole.
				if testutil.DepthOf(t, jdk) != testutil.Full {
					continue
				}
			}
			t.Run(name, func(t *testing.T) { testCompiledMethodLoad(t, jdk, ns) })
		}
	})
}

func testCompiledMethodLoad(t *testing.T, jdk testutil.JDK, namespace bool) {
	j := testutil.StartJVM(t, jdk, testutil.JVMOptions{
		Main:      "ManyMethods",
		Args:      []string{"40", "50"},
		JVMArgs:   []string{"-XX:CompileCommand=quiet", "-XX:CompileCommand=dontinline,gen.*::*", "-XX:+UseSerialGC"},
		Namespace: namespace,
	})
	stdout, stderr, code := testutil.RunTool(t, "cmd/jvmkit", "usdt", "trace", strconv.Itoa(j.PID), "hotspot:compiled__method__load",
		"--string", "compiled__method__load=0:1,2:3,4:5", "--duration", "8s")
	if code != 0 {
		t.Fatalf("jvmkit usdt trace: exit status %d\n%s", code, stderr)
	}
	entries, err := perfmap.FromJcmd(context.Background(), j.PID)
	if err != nil {
		t.Fatal(err)
	}
	byStart := make(map[uint64]perfmap.Entry)
	for _, e := range entries {
		byStart[e.Start] = e
	}

	type load struct {
		name       string
		addr, size uint64
	}
	latest := make(map[uint64]load) // by address: a freed nmethod's space can be reused
	events := 0
	dec := json.NewDecoder(strings.NewReader(stdout))
	for dec.More() {
		var ev struct {
			PID     int               `json:"pid"`
			Probe   string            `json:"probe"`
			Args    []json.Number     `json:"args"`
			Strings map[string]string `json:"strings"`
		}
		if err := dec.Decode(&ev); err != nil {
			t.Fatal(err)
		}
		events++
		if ev.PID != j.PID || ev.Probe != "compiled__method__load" || len(ev.Args) != 8 || len(ev.Strings) != 3 {
			t.Fatalf("event %+v", ev)
		}
		addr, err1 := strconv.ParseUint(ev.Args[6].String(), 10, 64)
		size, err2 := strconv.ParseUint(ev.Args[7].String(), 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("event %+v", ev)
		}
		latest[addr] = load{externalName(ev.Strings["0"], ev.Strings["2"], ev.Strings["4"]), addr, size}
	}
	found, named, gen := 0, 0, 0
	var mismatches []string
	for addr, l := range latest {
		e, ok := byStart[addr]
		if !ok {
			continue // unloaded since (a lower tier replaced by a higher one)
		}
		found++
		if e.Name == l.name && l.size > 0 && l.size <= e.Size {
			named++
			if strings.Contains(l.name, " gen.G") {
				gen++
			}
		} else if len(mismatches) < 10 {
			mismatches = append(mismatches, l.name+" size "+strconv.FormatUint(l.size, 16)+" vs perfmap "+e.Name+" size "+strconv.FormatUint(e.Size, 16))
		}
	}
	t.Logf("%s: %d load events, %d addresses, %d of them in Compiler.perfmap (%d entries), %d with the same name (%d gen.* methods)",
		jdk.Name(), events, len(latest), found, len(entries), named, gen)
	if named != found {
		t.Errorf("%d of %d addresses in the perf map have another name or a larger size: %v", found-named, found, mismatches)
	}
	if gen < 200 || found < len(latest)/2 {
		t.Errorf("only %d of %d traced addresses are in the perf map, %d of them gen.* methods", found, len(latest), gen)
	}
	if !strings.Contains(stderr, " 0 dropped") {
		t.Errorf("drops: %s", stderr)
	}
}
