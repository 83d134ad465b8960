package fleet

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/google/pprof/profile"

	"github.com/jvmkit/jvmkit/flame"
	"github.com/jvmkit/jvmkit/unwind"
)

// Window is one JVM's profile over one window, as the sinks get it.
type Window struct {
	Target     Target
	Start, End time.Time
	// Samples is the number of CPU samples; Broken the number of them whose stack ended early.
	Samples, Broken int64
	// Truncated counts samples folded into a "[truncated]" stack because the window's distinct
	// stacks reached Options.MaxStacks.
	Truncated int64
	// Pprof is the profile, gzipped profile.proto: sample types samples/count and cpu/nanoseconds,
	// frames named as `jvmkit profile` names them, the target's labels in its comments.
	Pprof []byte
}

// Profile decodes the window's pprof.
func (w *Window) Profile() (*profile.Profile, error) {
	return profile.ParseData(w.Pprof)
}

// frameKey identifies a frame's label without building it for every sample.
type frameKey struct {
	name string
	typ  unwind.FrameType
}

// stacks sums one JVM's sampled stacks over a window. Frames are interned (a stack is a string of
// 4-byte frame ids), so a window costs memory per distinct stack and frame, not per sample.
type stacks struct {
	mu        sync.Mutex
	frames    map[frameKey]uint32
	labels    []string // by id
	counts    map[string]int64
	samples   int64
	broken    int64
	truncated int64
	maxStacks int
	buf       []byte
	start     time.Time
}

func newStacks(maxStacks int, start time.Time) *stacks {
	return &stacks{frames: map[frameKey]uint32{}, counts: map[string]int64{}, maxStacks: maxStacks, start: start}
}

const truncatedLabel = "[truncated: too many distinct stacks in this window]"

func (s *stacks) add(st *unwind.Stack) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.samples++
	if !st.Complete {
		s.broken++
	}
	s.buf = s.buf[:0]
	for i := len(st.Frames) - 1; i >= 0; i-- { // root first, as folded stacks are
		f := &st.Frames[i]
		k := frameKey{f.Name, f.Type}
		id, ok := s.frames[k]
		if !ok {
			id = uint32(len(s.labels))
			s.frames[k] = id
			s.labels = append(s.labels, f.Label())
		}
		s.buf = binary.LittleEndian.AppendUint32(s.buf, id)
	}
	if n, ok := s.counts[string(s.buf)]; ok { // no allocation for a stack seen before
		s.counts[string(s.buf)] = n + 1
		return
	}
	if len(s.counts) >= s.maxStacks {
		s.truncated++
		s.buf = binary.LittleEndian.AppendUint32(s.buf[:0], s.intern(truncatedLabel))
	}
	s.counts[string(s.buf)]++
}

func (s *stacks) intern(label string) uint32 {
	k := frameKey{label, unwind.Broken}
	id, ok := s.frames[k]
	if !ok {
		id = uint32(len(s.labels))
		s.frames[k] = id
		s.labels = append(s.labels, label)
	}
	return id
}

// folded returns the window's stacks as flame.Folded (root first, sorted), the form `jvmkit profile`
// writes and converts to pprof.
func (s *stacks) folded() *flame.Folded {
	keys := make([]string, 0, len(s.counts))
	for k := range s.counts {
		keys = append(keys, k)
	}
	slices.Sort(keys) // by frame ids: deterministic for a window, cheap
	f := &flame.Folded{Event: "cpu-clock", Stacks: make([]flame.Stack, 0, len(keys))}
	for _, key := range keys {
		b := []byte(key)
		frames := make([]string, 0, len(b)/4)
		for len(b) >= 4 {
			frames = append(frames, s.labels[binary.LittleEndian.Uint32(b)])
			b = b[4:]
		}
		f.Stacks = append(f.Stacks, flame.Stack{Frames: frames, Count: s.counts[key]})
	}
	return f
}

// buildPprof makes a window's pprof from its stacks: flame.Pprof's profile (one Function and
// Location per frame label, as `jvmkit profile --format pprof` writes) with a second sample type,
// cpu/nanoseconds (each sample one period of cpu-clock), the period, the time and the labels.
func buildPprof(t Target, f *flame.Folded, start, end time.Time, freq int) ([]byte, error) {
	p, err := flame.Pprof(f, flame.PprofOptions{SampleType: "samples", Unit: "count",
		CPUPeriod: time.Second / time.Duration(freq), Start: start, End: end})
	if err != nil {
		return nil, err
	}
	for _, l := range t.Labels() {
		p.Comments = append(p.Comments, l[0]+"="+l[1])
	}
	if err := p.CheckValid(); err != nil {
		return nil, fmt.Errorf("pprof: %w", err)
	}
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
