package usdt

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

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
			verify(t, i, p, insns, map[string]*ebpf.Map{mapEvents: events, mapDrops: drops})
			loaded++
		}
		t.Logf("%s: the verifier accepted the programs of all %d sites (%d string copies)", jdk.Name(), loaded, strs)
	})
}

// TestLoadWindowProgram has the kernel's verifier check the aggregation program with every part of a
// sampled weight and TLAB windows (HotSpot's object__alloc with --switch-flags), on each JDK's probe sites.
func TestLoadWindowProgram(t *testing.T) {
	testutil.MustHaveRoot(t)
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		testutil.SkipWithoutProbes(t, jdk)
		probes, err := ReadFile(filepath.Join(jdk.Home, "lib", "server", "libjvm.so"))
		if err != nil {
			t.Fatal(err)
		}
		epoch, direct, top := int32(16), int32(8), int32(24)
		opts := AggregateOptions{PID: os.Getpid(), Key: []int{1, 2}, Sum: []int{3}, SumMin: 8, SumMax: 1 << 40,
			String: &StringArg{Ptr: 1, Len: 2},
			Weight: &ThreadWeight{Add: []int32{8, 24}, Sub: []int32{16}, Epoch: &epoch, Direct: &direct, Top: &top, Size: 3, Max: 1 << 30,
				Window: &BufferWindow{Bytes: 4096, Stable: 0x7000, Handle: func(Window) {}}}}
		opts, err = opts.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		maps := map[string]*ebpf.MapSpec{
			mapCounts:  {Type: ebpf.Hash, KeySize: uint32(opts.keySize()), ValueSize: uint32(opts.valueSize()), MaxEntries: 16},
			mapMissed:  {Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: 6},
			mapGate:    {Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1},
			mapThreads: {Type: ebpf.Hash, KeySize: 4, ValueSize: threadValueSize, MaxEntries: 16},
			mapWindows: {Type: ebpf.RingBuf, MaxEntries: 1 << 20},
		}
		loaded := 0
		for i := range probes {
			p := &probes[i]
			if p.Name != "object__alloc" {
				continue
			}
			s := aggSpec{probe: p, site: uint32(i), opts: opts}
			insns, err := s.program()
			if err != nil {
				t.Fatalf("site %d %s: %v", i, p, err)
			}
			made := map[string]*ebpf.Map{}
			for name, spec := range maps {
				m, err := ebpf.NewMap(spec)
				if err != nil {
					t.Fatal(err)
				}
				defer m.Close()
				made[name] = m
			}
			verify(t, i, p, insns, made)
			loaded++
		}
		if loaded == 0 {
			t.Fatal("no object__alloc site")
		}
		t.Logf("%s: the verifier accepted the windowed aggregation of %d object__alloc sites", jdk.Name(), loaded)
	})
}

// verify has the kernel's verifier load site i's program insns, with maps by the names it refers to.
func verify(t *testing.T, i int, p *Probe, insns asm.Instructions, maps map[string]*ebpf.Map) {
	t.Helper()
	for name, m := range maps {
		if err := insns.AssociateMap(name, m); err != nil {
			t.Fatal(err)
		}
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.Kprobe, License: "GPL", Instructions: insns})
	if err != nil {
		t.Fatalf("site %d %s (%s): %v", i, p, p.ArgString, err)
	}
	_ = prog.Close()
}
