//go:build linux && amd64

package unwind

import (
	"strings"
	"testing"

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
