package usdt

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/jvmkit/jvmkit/internal/testutil"
)

// TestLoadLibjvmPrograms has the kernel's verifier check the program of every probe site of every JDK's
// libjvm.so, with a string copy for each (pointer, length) pair the site could have, without attaching
// anything.
func TestLoadLibjvmPrograms(t *testing.T) {
	testutil.MustHaveRoot(t)
	events, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.RingBuf, MaxEntries: 1 << 20})
	if err != nil {
		testutil.Skipf(t, "test needs BPF ring buffers (Linux 5.8, CAP_BPF): %v", err)
	}
	defer events.Close()
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		testutil.SkipWithoutProbes(t, jdk)
		probes, err := ReadFile(filepath.Join(jdk.Home, "lib", "server", "libjvm.so"))
		if err != nil {
			t.Fatal(err)
		}
		drops, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: uint32(len(probes))})
		if err != nil {
			t.Fatal(err)
		}
		defer drops.Close()
		loaded, strs := 0, 0
		for i := range probes {
			p := &probes[i]
			s := progSpec{probe: p, site: uint32(i), stringSize: 256, pid: uint32(os.Getpid())}
			// Every pointer-sized argument followed by a 4-byte one could be a HotSpot (pointer, length) pair.
			for j := 0; j+1 < len(p.Args); j++ {
				if p.Args[j].Size == 8 && p.Args[j+1].Size == 4 {
					s.strings = append(s.strings, StringArg{Ptr: j, Len: j + 1})
				}
			}
			strs += len(s.strings)
			insns, err := s.program()
			if err != nil {
				t.Fatalf("site %d %s: %v", i, p, err)
			}
			if err := insns.AssociateMap(mapEvents, events); err != nil {
				t.Fatal(err)
			}
			if err := insns.AssociateMap(mapDrops, drops); err != nil {
				t.Fatal(err)
			}
			prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.Kprobe, License: "GPL", Instructions: insns})
			if err != nil {
				t.Fatalf("site %d %s (%s): %v", i, p, p.ArgString, err)
			}
			_ = prog.Close()
			loaded++
		}
		t.Logf("%s: the verifier accepted the programs of all %d sites (%d string copies)", jdk.Name(), loaded, strs)
	})
}
