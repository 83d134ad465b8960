package perfmap_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/internal/testutil"
	"github.com/jvmkit/jvmkit/perfmap"
)

func warmBusy(t *testing.T, jdk testutil.JDK, opts testutil.JVMOptions) *testutil.JVM {
	t.Helper()
	opts.Main = "Busy"
	j := testutil.StartJVM(t, jdk, opts)
	time.Sleep(3 * time.Second)
	return j
}

func cleanMaps(t *testing.T, pid int) {
	t.Cleanup(func() {
		if _, err := perfmap.Clean(context.Background(), pid); err != nil {
			t.Logf("clean: %v", err)
		}
	})
}

type span struct{ start, size uint64 }

func TestStrategiesAgree(t *testing.T) {
	testutil.MustHaveRoot(t)
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		j := warmBusy(t, jdk, testutil.JVMOptions{})
		ctx := context.Background()
		if jdk.Feature < 17 {
			// No Compiler.perfmap before JDK 17: the jcmd strategy must say so, not write a map.
			if _, err := perfmap.FromJcmd(ctx, j.PID); err == nil {
				t.Errorf("%s: the jcmd strategy succeeded without Compiler.perfmap", jdk)
			}
			return
		}
		cleanMaps(t, j.PID)
		vm1, err := perfmap.FromVMStructs(ctx, j.PID, false)
		if err != nil {
			t.Fatal(err)
		}
		jc, err := perfmap.FromJcmd(ctx, j.PID)
		if err != nil {
			t.Fatal(err)
		}
		vm2, err := perfmap.FromVMStructs(ctx, j.PID, false)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Lstat("/tmp/perf-" + strconv.Itoa(j.PID) + ".map"); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the JVM-written map was not removed: %v", err)
		}
		seen := map[span]string{}
		for _, e := range append(vm1, vm2...) {
			seen[span{e.Start, e.Size}] = e.Name
		}
		agree := 0
		for _, e := range jc {
			if seen[span{e.Start, e.Size}] == e.Name {
				agree++
			}
		}
		if len(jc) == 0 || float64(agree) < 0.99*float64(len(jc)) {
			t.Errorf("vmstructs agrees with Compiler.perfmap on %d of %d entries, want >= 99%%", agree, len(jc))
		}
		t.Logf("%d of %d entries agree", agree, len(jc))
		paths, err := perfmap.Place(ctx, j.PID, vm2)
		if err != nil {
			t.Fatal(err)
		}
		want := "/tmp/perf-" + strconv.Itoa(j.PID) + ".map"
		if len(paths) != 1 || paths[0] != want {
			t.Fatalf("Place wrote %q, want [%s]", paths, want)
		}
		f, err := os.Open(want)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		got, err := perfmap.Parse(f)
		if err != nil || len(got) != len(vm2) {
			t.Errorf("map read back: %d entries, %v; want %d", len(got), err, len(vm2))
		}
		unfolded, err := perfmap.FromVMStructs(ctx, j.PID, true)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range unfolded {
			if strings.Contains(e.Name, "->") {
				n++
			}
		}
		t.Logf("unfold: %d of %d names have inlined methods", n, len(unfolded))
	})
}

func TestPlaceNamespace(t *testing.T) {
	testutil.MustHaveRoot(t)
	jdk := testutil.JDK17(t)
	j := warmBusy(t, jdk, testutil.JVMOptions{Namespace: true})
	ctx := context.Background()
	cleanMaps(t, j.PID)
	entries, err := perfmap.FromVMStructs(ctx, j.PID, false)
	if err != nil {
		t.Fatal(err)
	}
	inside := "/proc/" + strconv.Itoa(j.PID) + "/root/tmp/perf-" + strconv.Itoa(j.NSPID) + ".map"
	host := "/tmp/perf-" + strconv.Itoa(j.PID) + ".map"

	// A symbolic link planted at the host path is refused, not followed.
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, host); err != nil {
		t.Fatal(err)
	}
	_, err = perfmap.Place(ctx, j.PID, entries)
	if !errors.Is(err, perfmap.ErrNotRegular) {
		t.Errorf("Place over a symlink: %v, want ErrNotRegular", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Errorf("symlink target changed: %q", b)
	}
	if err := os.Remove(host); err != nil {
		t.Fatal(err)
	}

	paths, err := perfmap.Place(ctx, j.PID, entries)
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 2 || paths[0] != inside || paths[1] != host {
		t.Fatalf("Place wrote %q, want [%s %s]", paths, inside, host)
	}
	for _, p := range paths {
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			t.Fatal(err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Uid != 0 {
			t.Errorf("%s: mode %o uid %d, want a regular file owned by root", p, st.Mode, st.Uid)
		}
	}
	removed, err := perfmap.Clean(ctx, j.PID)
	if err != nil || len(removed) != 2 {
		t.Fatalf("Clean: %q, %v", removed, err)
	}
	for _, p := range paths {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still exists: %v", p, err)
		}
	}
}

func TestPerfResolvesJava(t *testing.T) {
	testutil.MustHaveRoot(t)
	perf := testutil.MustHaveTool(t, "perf")
	jdk := testutil.JDK17(t)
	j := warmBusy(t, jdk, testutil.JVMOptions{JVMArgs: []string{"-XX:+PreserveFramePointer"}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cleanMaps(t, j.PID)
	data := filepath.Join(t.TempDir(), "perf.data")
	rec := exec.CommandContext(ctx, perf, "record", "-o", data, "-e", "cpu-clock", "-F", "999", "-g", "-p", strconv.Itoa(j.PID), "--", "sleep", "3")
	if out, err := rec.CombinedOutput(); err != nil {
		testutil.Skipf(t, "perf record: %v\n%s", err, out)
	}
	entries, err := perfmap.FromVMStructs(ctx, j.PID, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := perfmap.Place(ctx, j.PID, entries); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(ctx, perf, "script", "-i", data).Output()
	if err != nil {
		t.Fatalf("perf script: %v", err)
	}
	if !strings.Contains(string(out), "Busy.spin") {
		t.Errorf("perf script does not name Busy.spin; %d bytes of output", len(out))
	}
}
