//go:build linux && amd64

package unwind

import (
	"context"
	"testing"

	"github.com/jvmkit/jvmkit/internal/testutil"
	"github.com/jvmkit/jvmkit/vmstructs"
)

// TestProcessSymbolsContainers names libjvm's functions in JVMs of every container kind (podman/runc
// on an overlay, pivot_root, chroot): the library is found through the JVM's root or, under chroot,
// whose maps show the host's path, through /proc/<pid>/map_files. The addresses come from VMStructs'
// own read of the library's dynamic symbols.
func TestProcessSymbolsContainers(t *testing.T) {
	testutil.ForEachContainerJDK(t, func(t *testing.T, kind testutil.ContainerKind, jdk testutil.JDK) {
		jvm := testutil.StartJVM(t, jdk, testutil.JVMOptions{Container: kind, UID: 1000, GID: 1000})
		vm, err := vmstructs.Open(context.Background(), jvm.PID)
		if err != nil {
			t.Fatal(err)
		}
		defer vm.Close()
		syms := NewProcessSymbols(jvm.PID)
		for _, fn := range []string{"JNI_CreateJavaVM", "JVM_CurrentTimeMillis"} {
			addr, ok := vm.Symbol(fn)
			if !ok {
				t.Fatalf("no %s in libjvm", fn)
			}
			name, module, ok := syms.Symbolize(addr + 1)
			if !ok || name != fn || module != "libjvm.so" {
				t.Errorf("Symbolize(%s+1 = %#x) = %q, %q, %v", fn, addr+1, name, module, ok)
			}
		}
	})
}
