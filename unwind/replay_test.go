//go:build linux && amd64

package unwind

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/jvmkit/jvmkit/internal/testutil"
)

// recordFixtures records testdata/walk-<jdk>.gob.gz from the Unwind workload: its threads stopped
// with ptrace (the stack read from memory) and perf samples (with their stack copies).
func recordFixtures(t *testing.T) {
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		jvm, w := liveJVM(t, jdk, "Unwind", unwindArgs)
		j := w.JVM()
		all, err := j.Threads()
		if err != nil && len(all) == 0 {
			t.Fatal(err)
		}
		jts, names := map[int]uint64{}, map[int]string{}
		for _, th := range all {
			jts[hostTID(th)] = th.JavaThread
			names[hostTID(th)] = th.Name
		}
		fr, err := newFixtureRecorder(j, jdk.Name(), jts, names, NewProcessSymbols(jvm.PID), &KernelSymbols{})
		if err != nil {
			t.Fatal(err)
		}
		threads := workloadThreads(t, w, "uw-")
		for range 10 {
			for name, th := range threads {
				err := StopThread(context.Background(), hostTID(th), 2*time.Second, func(r Regs) error {
					fr.walk(&Sample{TID: hostTID(th), JavaThread: th.JavaThread, Regs: r, Stopped: true})
					return nil
				})
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
			}
			time.Sleep(2 * time.Millisecond)
		}
		s, err := NewSampler(jvm.PID, SamplerOptions{Frequency: 199})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := s.Run(ctx, func(smp *Sample) {
			if strings.HasPrefix(names[smp.TID], "uw-") {
				fr.walk(smp)
			}
		}); err != nil {
			t.Fatal(err)
		}
		f := fr.fixture()
		complete := 0
		for _, s := range f.Samples {
			if s.Want.Complete {
				complete++
			}
		}
		path := filepath.Join("testdata", "walk-"+jdk.Name()+".gob.gz")
		if err := f.save(path); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: recorded %d samples (%d complete), %d image spans, in %s", jdk.Name(), len(f.Samples), complete, len(f.Image), path)
	})
}

// TestReplay walks the recorded samples offline and requires the stacks the live walks gave.
func TestReplay(t *testing.T) {
	if *record {
		recordFixtures(t)
	}
	for _, f := range fixtures(t) {
		t.Run(f.JDK, func(t *testing.T) {
			r := f.replayer(t)
			diffs, complete := 0, 0
			for i := range f.Samples {
				got := r.walk(i)
				if got.Complete {
					complete++
				}
				if d := cmp.Diff(f.Samples[i].Want, got); d != "" {
					if diffs++; diffs <= 3 {
						t.Errorf("sample %d (tid %d): replay differs (-live +replay):\n%s", i, f.Samples[i].Sample.TID, d)
					}
				}
			}
			native := 0
			for _, s := range f.Samples {
				for _, fr := range s.Want.Frames {
					if fr.Type == Native {
						native++
					}
				}
			}
			t.Logf("%s (%s): %d samples replayed, %d differ, %d complete; %d native frames, %d call frame information answers",
				f.JDK, f.Version, len(f.Samples), diffs, complete, native, len(f.Unwind))
			if len(f.Unwind) == 0 {
				t.Errorf("the fixture has no call frame information: record it again")
			}
			if complete*100 < len(f.Samples)*99 {
				t.Errorf("%d of %d recorded samples complete", complete, len(f.Samples))
			}
		})
	}
}

// TestReplayCodeUnloaded walks recorded samples whose top frame is compiled after the code they ran
// was freed (its segments marked free in the code heap's segment map, as CodeHeap::deallocate does):
// the stack must end at once in a code-unloaded frame, without a wrong name.
func TestReplayCodeUnloaded(t *testing.T) {
	for _, f := range fixtures(t) {
		t.Run(f.JDK, func(t *testing.T) {
			r := f.replayer(t)
			tried := 0
			for i := range f.Samples {
				want := f.Samples[i].Want
				top := firstUser(want.Frames)
				if top < 0 || want.Frames[top].Type != Compiled && want.Frames[top].Type != Inlined || tried >= 20 {
					continue
				}
				tried++
				pc := f.Samples[i].Sample.Regs.PC
				over := freeSegment(t, r, pc)
				r.mem.over = append(append(image(nil), f.Samples[i].Overlay...), over...)
				sortImage(r.mem.over)
				smp := f.Samples[i].Sample
				r.w.Refresh() // a later view of the code cache: the blob cache is dropped
				got := r.w.Walk(&smp)
				gt := firstUser(got.Frames)
				if gt < 0 || got.Frames[gt].Type != Broken || got.Reason != ReasonCodeUnloaded {
					t.Errorf("sample %d: after unloading, %v", i, frameNames(got.Frames))
				}
				if gt != top {
					t.Errorf("sample %d: %d kernel frames before, %d after unloading", i, top, gt)
				}
			}
			if tried == 0 {
				t.Fatal("no recorded sample has a compiled top frame")
			}
			r.w.Refresh()
			t.Logf("%s: %d samples walked after their code was freed", f.JDK, tried)
		})
	}
}

// freeSegment returns bytes that mark pc's code segment free (0xFF) in its heap's segment map, as
// CodeHeap::deallocate marks a freed block's segments. Segment map bytes before it that the recording
// does not have (FindBlob reads the map in windows) are filled with 0xFF too: what they say does not
// matter once pc's segment is free.
func freeSegment(t *testing.T, r *replayer, pc uint64) image {
	for _, h := range r.w.cc.Heaps() {
		if pc >= h.Low && pc < h.High {
			seg := (pc - h.Low) >> h.Log2Segment
			var out image
			for a := h.Segmap + seg - min(seg, 255); a <= h.Segmap+seg; a++ {
				if _, ok := r.mem.base.byte1(a); ok && a != h.Segmap+seg {
					continue
				}
				if n := len(out); n > 0 && out[n-1].Addr+uint64(len(out[n-1].Data)) == a {
					out[n-1].Data = append(out[n-1].Data, 0xff)
				} else {
					out = append(out, span{Addr: a, Data: []byte{0xff}})
				}
			}
			return out
		}
	}
	t.Fatalf("pc %#x in no code heap", pc)
	return nil
}

func sortImage(im image) {
	for i := 1; i < len(im); i++ {
		for k := i; k > 0 && im[k].Addr < im[k-1].Addr; k-- {
			im[k], im[k-1] = im[k-1], im[k]
		}
	}
}

func firstUser(fs []Frame) int {
	for i, f := range fs {
		if f.Type != Kernel {
			return i
		}
	}
	return -1
}

func frameNames(fs []Frame) string {
	var s []string
	for _, f := range fs {
		s = append(s, f.String())
	}
	return strings.Join(s, " <- ")
}

// FuzzWalk walks recorded samples with mutated registers and a fuzzed stack copy: the walk must not
// panic, must stay within its step limit and end in at most MaxDepth frames plus the broken one.
func FuzzWalk(f *testing.F) {
	fxs := fixtures(f)
	var rs []*replayer
	for _, fx := range fxs {
		rs = append(rs, fx.replayer(f))
	}
	f.Add(uint16(0), uint16(0), uint64(0), uint64(0), uint64(0), []byte{})
	f.Add(uint16(3), uint16(1), uint64(8), uint64(0), uint64(0), []byte{1, 2, 3, 4, 5, 6, 7, 8})
	f.Add(uint16(7), uint16(2), uint64(0), uint64(16), uint64(0x100), make([]byte, 64))
	f.Add(uint16(11), uint16(3), uint64(^uint64(0)), uint64(0), uint64(1), []byte("\x00\x00\x00\x00\x00\x00\x00\x00\xff\xff"))
	f.Fuzz(func(t *testing.T, which, mode uint16, dpc, dsp uint64, x uint64, stack []byte) {
		r := rs[int(which)%len(rs)]
		i := int(which) % len(r.f.Samples)
		s := r.f.Samples[i].Sample
		r.mem.over = r.f.Samples[i].Overlay
		switch mode % 6 {
		case 0: // stack bytes over the sample's own
		case 1:
			s.Regs.PC += dpc
		case 2:
			s.Regs.SP += dsp &^ 7
			s.Regs.FP += dpc
		case 3:
			s.Regs.SP += dsp
		case 4:
			s.Regs.BX, s.Regs.R13, s.Regs.AX = x, dpc, dsp
		case 5:
			// A pc into the code cache, a random place.
			s.Regs.PC = r.codeLo + x%max(r.codeHi-r.codeLo, 1)
		}
		s.Stack = stack
		s.Kernel = nil
		r.w.opts.MaxDepth = 64 + int(dsp%64)
		defer func() { r.w.opts.MaxDepth = 2048 }()
		st := r.w.Walk(&s)
		if len(st.Frames) > r.w.opts.MaxDepth+1 {
			t.Fatalf("%d frames with MaxDepth %d", len(st.Frames), r.w.opts.MaxDepth)
		}
		if r.w.steps > maxSteps(r.w.opts.MaxDepth) {
			t.Fatalf("%d steps, limit %d", r.w.steps, maxSteps(r.w.opts.MaxDepth))
		}
		if !st.Complete && (len(st.Frames) == 0 || st.Frames[len(st.Frames)-1].Type != Broken) {
			t.Fatalf("incomplete stack without a broken frame: %v", frameNames(st.Frames))
		}
	})
}

// TestWalkRandomStacks is FuzzWalk's property on a fixed number of random inputs, so that plain
// `go test` exercises it beyond the seed corpus.
func TestWalkRandomStacks(t *testing.T) {
	fxs := fixtures(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, fx := range fxs {
		r := fx.replayer(t)
		for n := range 3000 {
			i := rng.IntN(len(fx.Samples))
			s := fx.Samples[i].Sample
			r.mem.over = fx.Samples[i].Overlay
			// The sample's real stack words, some replaced by random ones or by code addresses.
			stack := make([]byte, 2048)
			for k := 0; k < len(stack); k += 8 {
				var b [8]byte
				r.mem.ReadAt(b[:], s.Regs.SP+uint64(k))
				v := binary.LittleEndian.Uint64(b[:])
				switch rng.IntN(8) {
				case 0:
					v = rng.Uint64()
				case 1:
					v = r.codeLo + rng.Uint64N(max(r.codeHi-r.codeLo, 1))
				case 2:
					v = s.Regs.SP + rng.Uint64N(4096)
				}
				binary.LittleEndian.PutUint64(stack[k:], v)
			}
			s.Stack = stack
			if n%3 == 0 {
				s.Regs.PC = r.codeLo + rng.Uint64N(max(r.codeHi-r.codeLo, 1))
			}
			st := r.w.Walk(&s)
			if len(st.Frames) > r.w.opts.MaxDepth+1 || r.w.steps > maxSteps(r.w.opts.MaxDepth) {
				t.Fatalf("%d frames, %d steps", len(st.Frames), r.w.steps)
			}
		}
		t.Logf("%s: 3000 random stacks walked: %v", fx.JDK, r.w.Counts())
	}
}

// BenchmarkWalk walks the recorded samples offline, memory reads served from the recorded image:
// the walker's own cost per stack, with its caches warm as they are while profiling.
func BenchmarkWalk(b *testing.B) {
	for _, fx := range fixtures(b) {
		b.Run(fx.JDK, func(b *testing.B) {
			r := fx.replayer(b)
			for i := range fx.Samples { // warm the caches
				r.walk(i)
			}
			frames := 0
			b.ResetTimer()
			for n := 0; n < b.N; n++ {
				i := n % len(fx.Samples)
				r.mem.over = fx.Samples[i].Overlay
				smp := fx.Samples[i].Sample
				for range r.w.Frames(&smp) {
					frames++
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "stacks/s")
			b.ReportMetric(float64(frames)/float64(b.N), "frames/stack")
		})
	}
}
