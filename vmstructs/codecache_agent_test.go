//go:build linux

package vmstructs_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jvmkit/jvmkit/internal/testutil"
	"github.com/jvmkit/jvmkit/perfmap"
	"github.com/jvmkit/jvmkit/vmstructs"
)

// TestCodeCacheAgent checks the code cache of JDKs without Compiler.perfmap (before 17) against the
// JVM's own JVMTI view of it: jvmkit's perf-map agent, whose CompiledMethodLoad and
// DynamicCodeGenerated events name every compiled method and stub with its address and size. Later
// JDKs are checked against Compiler.perfmap in TestCodeCache.
func TestCodeCacheAgent(t *testing.T) {
	testutil.MustHaveRoot(t)
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		if jdk.Feature >= 17 {
			t.Logf("%s has Compiler.perfmap: checked against it in TestCodeCache", jdk)
			return
		}
		jvm := testutil.StartJVM(t, jdk, testutil.JVMOptions{
			Main:    "ManyMethods",
			JVMArgs: []string{"-XX:CompileCommand=quiet", "-XX:CompileCommand=dontinline,gen.*::*"},
			Args:    []string{"10", "100"},
		})
		ctx := context.Background()
		vm, err := vmstructs.Open(ctx, jvm.PID)
		if err != nil {
			t.Fatal(err)
		}
		defer vm.Close()
		// Wait until most generated methods are compiled.
		deadline := time.Now().Add(3 * time.Minute)
		for {
			blobs, err := vm.CodeBlobs()
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, b := range blobs {
				if b.Kind == vmstructs.KindNMethod && strings.Contains(b.MethodName, " gen.G") {
					n++
				}
			}
			if n >= 950 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("only %d of 1000 generated methods compiled after 3 minutes", n)
			}
			time.Sleep(time.Second)
		}

		before, err := vm.CodeBlobs()
		if err != nil {
			t.Fatal(err)
		}
		agent, err := perfmap.FromAgent(ctx, jvm.PID, perfmap.AgentOptions{Options: "dottedclass,cleanclass"})
		if err != nil {
			t.Fatal(err)
		}
		after, err := vm.CodeBlobs()
		if err != nil {
			t.Fatal(err)
		}
		// JDK 11's CompiledMethodLoad reports an nmethod's instructions (insts_begin, insts_size), without
		// the stub section that ends our (and Compiler.perfmap's) range: the instructions end at
		// nmethod::_stub_offset from the blob.
		stubOff, ok := vm.Table.Field("nmethod", "_stub_offset")
		if !ok {
			t.Fatal("no nmethod::_stub_offset")
		}
		agentSize := func(b vmstructs.CodeBlob) uint64 {
			if b.Kind != vmstructs.KindNMethod && b.Kind != vmstructs.KindNativeNMethod {
				return b.End - b.Start
			}
			var v [4]byte
			if _, err := vm.Mem.ReadAt(v[:], b.BlobAddr+stubOff.Offset); err != nil {
				return 0
			}
			return b.BlobAddr + uint64(binary.LittleEndian.Uint32(v[:])) - b.Start
		}
		type span struct{ start, size uint64 }
		ours := map[span]string{}
		isMethod := map[uint64]bool{} // starts of nmethods and native wrappers
		stable := map[span]bool{}     // nmethods present before and after the agent ran
		seenBefore := map[span]bool{}
		for _, b := range before {
			seenBefore[span{b.Start, agentSize(b)}] = true
		}
		for _, b := range append(before, after...) {
			s := span{b.Start, agentSize(b)}
			ours[s] = agentStyle(b)
			if b.Kind == vmstructs.KindNMethod || b.Kind == vmstructs.KindNativeNMethod {
				isMethod[b.Start] = true
			}
			if b.Kind == vmstructs.KindNMethod && seenBefore[s] {
				stable[s] = true
			}
		}
		inAgent := map[span]bool{}
		var methods, methodsOK, intrinsics, stubs, stubsOK int
		var bad []string
		for _, e := range agent {
			s := span{e.Start, e.Size}
			inAgent[s] = true
			switch {
			case isMethod[e.Start] && mhIntrinsic(e.Name) && mhIntrinsic(ours[s]):
				// The native wrappers of the signature-polymorphic MethodHandle methods: JDK 11's
				// JVMTI names every one linkToStatic, whatever its Method* (which ours name).
				intrinsics++
			case isMethod[e.Start]:
				methods++
				if withoutAnonymousSuffix(ours[s]) == withoutAnonymousSuffix(e.Name) {
					methodsOK++
				} else if len(bad) < 20 {
					bad = append(bad, fmt.Sprintf("agent %#x+%#x %s; ours: %q", e.Start, e.Size, e.Name, ours[s]))
				}
			default:
				stubs++
				if ours[s] == e.Name {
					stubsOK++
				}
			}
		}
		var found int
		for s := range stable {
			if inAgent[s] {
				found++
			}
		}
		t.Logf("%s: agent's compiled methods found with the same start, size and name: %d of %d (and %d MethodHandle intrinsics); its other code: %d of %d; nmethods of the code cache (before and after) in the agent's map: %d of %d",
			jdk.Name(), methodsOK, methods, intrinsics, stubsOK, stubs, found, len(stable))
		for _, b := range bad {
			t.Log(b)
		}
		if methods < 950 || methodsOK*100 < methods*99 {
			t.Errorf("%d of the agent's %d compiled methods match ours, want >= 99%%", methodsOK, methods)
		}
		if len(stable) < 950 || found*100 < len(stable)*99 {
			t.Errorf("%d of %d nmethods are in the agent's map, want >= 99%%", found, len(stable))
		}
	})
}

// mhIntrinsic recognises the signature-polymorphic methods of MethodHandle that the JVM compiles as
// native wrappers (invokeBasic, linkToStatic, linkToSpecial, linkToVirtual, linkToInterface, ...).
func mhIntrinsic(name string) bool {
	m, ok := strings.CutPrefix(name, "java.lang.invoke.MethodHandle::")
	return ok && (m == "invokeBasic" || strings.HasPrefix(m, "linkTo"))
}

// agentStyle names a blob as the agent does with dottedclass,cleanclass: "pkg.Class::method" for
// compiled methods (ours are "ret pkg.Class.method(args)"), generated code by its blob name.
func agentStyle(b vmstructs.CodeBlob) string {
	if b.MethodName == "" {
		return b.Name
	}
	name, _, _ := strings.Cut(b.MethodName, "(")
	if i := strings.LastIndexByte(name, ' '); i >= 0 {
		name = name[i+1:]
	}
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		name = name[:i] + "::" + name[i+1:]
	}
	// dottedclass turns the "/" before a VM-anonymous class's suffix into "." as well.
	return strings.ReplaceAll(name, "/", ".")
}

// anonymousSuffix is a VM-anonymous class's suffix in agentStyle: JDK 11's JVMTI names the class by its
// mirror's identity hash ("Foo$$Lambda$1.123456::run"), Class.getName and vmstructs by the address of
// its InstanceKlass ("Foo$$Lambda$1.0x0000000800060840::run"; checked against Compiler.codelist in
// TestCodeCache).
var anonymousSuffix = regexp.MustCompile(`\.(0x[0-9a-f]{16}|[0-9]+)::`)

func withoutAnonymousSuffix(name string) string { return anonymousSuffix.ReplaceAllString(name, "::") }
