package vmstructs_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jvmkit/jvmkit/internal/testutil"
	"github.com/jvmkit/jvmkit/vmstructs"
)

func TestOpen(t *testing.T) {
	testutil.MustHaveRoot(t)
	for _, opts := range []testutil.JVMOptions{{}, {Namespace: true, UID: 65534, GID: 65534}} {
		testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
			j := testutil.StartJVM(t, jdk, opts)
			vm, err := vmstructs.Open(context.Background(), j.PID)
			if err != nil {
				t.Fatal(err)
			}
			defer vm.Close()
			tb := vm.Table
			if len(tb.Fields) < 400 || len(tb.Types) < 200 || len(tb.Ints) < 200 || len(tb.Longs) < 40 { // JDK 11 has 47 long constants
				t.Errorf("table sizes %d/%d/%d/%d", len(tb.Fields), len(tb.Types), len(tb.Ints), len(tb.Longs))
			}
			v, err := vm.Version()
			if err != nil || !strings.HasPrefix(jdk.Version, v) && !strings.HasPrefix(v, jdk.Version) {
				t.Errorf("Version() = %q, %v; the JDK says %q", v, err, jdk.Version)
			}
			// Layout facts measured in the reference notes.
			want := map[int]map[string]uint64{
				11: {"CodeBlob::_name": 96, "Method::_constMethod": 8, "JavaThread::_osthread": 624},
				17: {"CodeBlob::_name": 96, "Method::_constMethod": 8},
				21: {"CodeBlob::_name": 64, "Method::_constMethod": 8, "JavaThread::_osthread": 792},
				25: {"CodeBlob::_name": 8, "Method::_constMethod": 8},
			}[jdk.Feature]
			for k, off := range want {
				typ, name, _ := strings.Cut(k, "::")
				if f, ok := tb.Field(typ, name); !ok || f.Offset != off {
					t.Errorf("%s: %+v %v, want offset %d", k, f, ok, off)
				}
			}
		})
	}
}

func TestOpenNotJVM(t *testing.T) {
	p := testutil.StartProcess(t, "sleep", "600")
	if _, err := vmstructs.Open(context.Background(), p.Process.Pid); !errors.Is(err, vmstructs.ErrNotJVM) {
		t.Errorf("sleep: %v", err)
	}
	if _, err := vmstructs.Open(context.Background(), 1<<30); !errors.Is(err, vmstructs.ErrProcessGone) {
		t.Errorf("no such pid: %v", err)
	}
}
