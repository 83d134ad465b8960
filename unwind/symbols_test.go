//go:build linux && amd64

package unwind

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jvmkit/jvmkit/internal/filecache"
	"github.com/jvmkit/jvmkit/internal/procfs"
	"github.com/jvmkit/jvmkit/internal/testutil"
)

// TestCodeMappings asks a live JVM's native symbolizer which of its mappings hold code: libjvm's text
// and the vDSO do; libjvm's read-only and data segments, the CDS archive (classes.jsa), the modules
// image, the heap and stacks do not, so a stale word pointing there never becomes a frame.
func TestCodeMappings(t *testing.T) {
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		jvm, _ := liveJVM(t, jdk, "Sleeper", nil)
		maps, err := procfs.Default.Maps(jvm.PID)
		if err != nil {
			t.Fatal(err)
		}
		s := NewProcessSymbols(jvm.PID)
		seen := map[string]bool{}
		for _, m := range maps {
			var kind string
			exec := len(m.Perms) > 2 && m.Perms[2] == 'x'
			switch {
			case strings.HasSuffix(m.Path, "/libjvm.so") && exec:
				kind = "libjvm text"
			case strings.HasSuffix(m.Path, "/libjvm.so"):
				kind = "libjvm data"
			case strings.HasSuffix(m.Path, "/classes.jsa"):
				kind = "classes.jsa"
			case strings.HasSuffix(m.Path, "/lib/modules"):
				kind = "modules"
			case m.Path == "[vdso]":
				kind = "vdso"
			case m.Path == "[stack]" || m.Path == "[heap]":
				kind = m.Path
			default:
				continue
			}
			want := kind == "libjvm text" || kind == "vdso"
			// (The last bytes of a text mapping may be padding beyond the segment: not code.)
			for _, pc := range []uint64{m.Start, m.Start + (m.End-m.Start)/2} {
				if got := s.isCode(pc); got != want {
					t.Errorf("%s %s at %#x: code %v, want %v", kind, m.Perms, pc, got, want)
				}
				if info := s.unwindInfo(pc, true); info.Code != want {
					t.Errorf("%s %s at %#x: unwindInfo.Code %v, want %v", kind, m.Perms, pc, info.Code, want)
				}
			}
			seen[kind] = true
		}
		for _, k := range []string{"libjvm text", "libjvm data", "modules", "vdso", "[stack]"} {
			if !seen[k] {
				t.Errorf("no %s mapping in the JVM", k)
			}
		}
	})
}

// TestSharedFileSymbols: two processes that map the same libraries share what was read of them (the
// fleet agent profiles many JVMs of one JDK), and the shared copy goes when neither uses it any more.
func TestSharedFileSymbols(t *testing.T) {
	var pids []int
	for range 2 {
		cmd := exec.Command("sleep", "60")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		pids = append(pids, cmd.Process.Pid)
	}
	var libcPath string
	libc := func(pid int) *elfSymbols {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			s := NewProcessSymbols(pid)
			for i := range s.maps {
				m := &s.maps[i]
				if strings.Contains(path.Base(m.Path), "libc.so") && m.code() {
					libcPath = m.Path
					name, module, ok := s.Symbolize(m.Start + 0x1000)
					t.Logf("pid %d: %#x is %s in %s (%v)", pid, m.Start+0x1000, name, module, ok)
					_, es := s.module(m.Start)
					return es
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("pid %d maps no libc", pid)
			}
			time.Sleep(10 * time.Millisecond) // the dynamic linker has not mapped it yet
		}
	}
	a, b := libc(pids[0]), libc(pids[1])
	if a != b {
		t.Error("two processes mapping the same libc read it twice")
	}
	if len(a.syms) == 0 {
		t.Error("libc: no symbols read")
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/root%s", pids[0], libcPath))
	if err != nil {
		t.Fatal(err)
	}
	id, _ := filecache.Identify(f)
	f.Close()
	if !sharedFiles.Has(id) {
		t.Fatal("libc is not among the shared files")
	}
	deadline := time.Now().Add(10 * time.Second)
	for sharedFiles.Has(id) {
		if time.Now().After(deadline) {
			t.Fatal("libc's shared symbols are still held when nothing uses them")
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}
