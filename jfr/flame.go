package jfr

import (
	"fmt"
	"sort"
	"strings"

	"github.com/jvmkit/jvmkit/flame"
)

// FlameKind is what a flame graph of a recording weighs.
type FlameKind string

const (
	// FlameCPU counts JDK 25's jdk.CPUTimeSample events when the recording has any (threads sampled
	// by their CPU time, in Java or native code), else jdk.ExecutionSample events (Java threads
	// sampled while running Java code). A recording with both has its CPUTimeSample events drawn:
	// they sample by CPU time, as a CPU profile should, and ExecutionSample's period is wall time.
	FlameCPU FlameKind = "cpu"
	// FlameWall counts jdk.ExecutionSample and jdk.NativeMethodSample events: running Java code and
	// waiting in native methods.
	FlameWall FlameKind = "wall"
	// FlameAlloc weighs jdk.ObjectAllocationSample events by their weight (bytes, JDK 16+), or, in
	// recordings without them (JDK 11), jdk.ObjectAllocationInNewTLAB by tlabSize and
	// jdk.ObjectAllocationOutsideTLAB by allocationSize. The allocated class is the leaf frame.
	FlameAlloc FlameKind = "alloc"
	// FlameLock weighs jdk.JavaMonitorEnter events by duration; the monitor's class is the leaf.
	FlameLock FlameKind = "lock"
	// FlamePark weighs jdk.ThreadPark events by duration; the parked-on object's class is the leaf.
	FlamePark FlameKind = "park"
	// FlameIO weighs jdk.FileRead, FileWrite, SocketRead and SocketWrite events by duration; the
	// event's name is the leaf.
	FlameIO FlameKind = "io"
)

// FlameKinds lists the kinds, for usage messages.
var FlameKinds = []FlameKind{FlameCPU, FlameWall, FlameAlloc, FlameLock, FlamePark, FlameIO}

// FlameOptions choose a flame graph's events and shape.
type FlameOptions struct {
	Kind FlameKind
	// NoThreads leaves out the root frame that names the thread (the Java thread name, else the OS
	// one), which `jvmkit profile` puts first.
	NoThreads bool
}

// FlameStats describe what Flame used.
type FlameStats struct {
	Events    map[string]int // events used, by type
	NoStack   int            // events without a stack trace (drawn as "[no stack trace]")
	Truncated int            // events whose stack the JVM cut at its depth (drawn under "[truncated]")
	// Lost counts the events drawn with a reference that a damaged recording lost (see
	// LostConstant): a lost stack is drawn as "[stack lost: recording cut off]", a lost thread, method
	// or leaf class likewise.
	Lost int
	// Unused counts the events of a type the kind could use but did not: jdk.ExecutionSample when
	// cpu draws jdk.CPUTimeSample.
	Unused map[string]int64
	// Failed and Biased count jdk.CPUTimeSample events whose stack the JVM failed to walk (drawn as
	// "[stack walk failed]") and those it took at the next safepoint instead of where the thread was.
	Failed, Biased int
	// LostSamples sums jdk.CPUTimeSamplesLost: CPU time samples the JVM dropped (its queue full).
	LostSamples int64
	// SampleType and Unit name the weight, as pprof does: "samples"/"count", "alloc_space"/"bytes",
	// "delay"/"nanoseconds", "io"/"nanoseconds".
	SampleType, Unit string
}

// Markers in folded stacks for what a recording cannot prove: a stack JFR cut at its depth (its root
// is missing), and an event recorded without a stack.
const (
	FrameTruncated   = "[truncated]"
	FrameNoStack     = "[no stack trace]"
	FrameStackFailed = "[stack walk failed]"
)

// lostFrame names a frame for what a damaged recording lost: "[stack lost: recording cut off]".
func lostFrame(what string, l *LostConstant) string { return "[" + what + " lost: " + l.Reason() + "]" }

type flameSource struct {
	types  []string
	weight func(r *Recording, e *Event) int64
	leaf   func(e *Event) string
}

func durationWeight(r *Recording, e *Event) int64 { return int64(e.Duration()) }

func lostSamples(_ *Recording, e *Event) int64 {
	v, _ := e.Int("lostSamples")
	return v
}

func fieldWeight(name string) func(*Recording, *Event) int64 {
	return func(_ *Recording, e *Event) int64 {
		v, _ := e.Int(name)
		return v
	}
}

func classLeaf(field string) func(*Event) string {
	return func(e *Event) string {
		if l, ok := e.Get(field).(*LostConstant); ok {
			return lostFrame("class", l)
		}
		return classOf(e.Child(field))
	}
}

const (
	cpuTimeSample      = "jdk.CPUTimeSample"
	cpuTimeSamplesLost = "jdk.CPUTimeSamplesLost"
	executionSample    = "jdk.ExecutionSample"
)

// HasType tells whether the recording's metadata declares the named event type, which says what its
// JVM can record (jdk.CPUTimeSample: JDK 25 and later).
func (r *Recording) HasType(name string) bool {
	m := r.Metadata()
	return m != nil && m.TypeByName(name) != nil
}

// Flame folds the recording's events of a kind into stacks: the thread, then the frames root first,
// weighed as the kind says. Frames are named as `jvmkit profile` names them (see Frame.Label). In a
// damaged recording it folds the events before the damage and returns the damage too.
func Flame(r *Recording, opts FlameOptions) (*flame.Folded, FlameStats, error) {
	var sources []flameSource
	st := FlameStats{Events: map[string]int{}, Unused: map[string]int64{}}
	f := &flame.Folded{}
	switch opts.Kind {
	case FlameCPU, FlameWall:
		sources = []flameSource{{types: []string{executionSample}}}
		switch {
		case opts.Kind == FlameWall:
			sources[0].types = append(sources[0].types, "jdk.NativeMethodSample")
		case r.count(cpuTimeSample) > 0:
			sources = []flameSource{{types: []string{cpuTimeSample}}, {types: []string{cpuTimeSamplesLost}, weight: lostSamples}}
			if n := r.count(executionSample); n > 0 {
				st.Unused[executionSample] = n
			}
		}
		st.SampleType, st.Unit = "samples", "count"
	case FlameAlloc:
		sources = []flameSource{{types: []string{"jdk.ObjectAllocationSample"}, weight: fieldWeight("weight"), leaf: classLeaf("objectClass")}}
		if r.count("jdk.ObjectAllocationSample") == 0 {
			sources = []flameSource{
				{types: []string{"jdk.ObjectAllocationInNewTLAB"}, weight: fieldWeight("tlabSize"), leaf: classLeaf("objectClass")},
				{types: []string{"jdk.ObjectAllocationOutsideTLAB"}, weight: fieldWeight("allocationSize"), leaf: classLeaf("objectClass")},
			}
		}
		st.SampleType, st.Unit = "alloc_space", "bytes"
		f.Event, f.Period = "bytes", true
	case FlameLock:
		sources = []flameSource{{types: []string{"jdk.JavaMonitorEnter"}, weight: durationWeight, leaf: classLeaf("monitorClass")}}
		st.SampleType, st.Unit = "delay", "nanoseconds"
	case FlamePark:
		sources = []flameSource{{types: []string{"jdk.ThreadPark"}, weight: durationWeight, leaf: classLeaf("parkedClass")}}
		st.SampleType, st.Unit = "delay", "nanoseconds"
	case FlameIO:
		leaf := func(e *Event) string { return strings.TrimPrefix(e.Type.Name, "jdk.") }
		sources = []flameSource{{types: []string{"jdk.FileRead", "jdk.FileWrite", "jdk.SocketRead", "jdk.SocketWrite"}, weight: durationWeight, leaf: leaf}}
		st.SampleType, st.Unit = "io", "nanoseconds"
	default:
		return nil, st, fmt.Errorf("flame graph kind %q: want one of %v", opts.Kind, FlameKinds)
	}
	if st.Unit == "nanoseconds" {
		f.Event, f.Period = "nanoseconds", true
	}
	bySource := map[string]*flameSource{}
	for i := range sources {
		for _, t := range sources[i].types {
			bySource[t] = &sources[i]
		}
	}
	sums := map[string]int64{}
	var frames []string
	var readErr error
	for e, err := range r.Events(EventOptions{Types: func(t *Type) bool { return bySource[t.Name] != nil }}) {
		if err != nil {
			readErr = err // draw what precedes the damage
			break
		}
		src := bySource[e.Type.Name]
		w := int64(1)
		if src.weight != nil {
			w = src.weight(r, e)
		}
		if e.Type.Name == cpuTimeSamplesLost {
			st.LostSamples += max(w, 0) // a count of samples, not one to draw
			continue
		}
		if w <= 0 {
			continue
		}
		st.Events[e.Type.Name]++
		if e.Lost > 0 {
			st.Lost++
		}
		if e.Type.Name == cpuTimeSample && e.Bool("biased") {
			st.Biased++
		}
		frames = frames[:0]
		if !opts.NoThreads {
			field := "eventThread"
			if e.Type.Name == executionSample || e.Type.Name == "jdk.NativeMethodSample" {
				field = "sampledThread"
			}
			name := ThreadName(e.Child(field))
			if l, ok := e.Get(field).(*LostConstant); ok {
				name = lostFrame("thread", l)
			} else if name == "" {
				name = "[unknown thread]"
			}
			frames = append(frames, strings.ReplaceAll(name, ";", ":"))
		}
		stack := Stack(e.Child("stackTrace"))
		lost, _ := e.Get("stackTrace").(*LostConstant)
		switch {
		case lost != nil:
			frames = append(frames, lostFrame("stack", lost))
		case stack == nil && e.Type.Name == cpuTimeSample && e.Bool("failed"):
			st.Failed++
			frames = append(frames, FrameStackFailed)
		case stack == nil:
			st.NoStack++
			frames = append(frames, FrameNoStack)
		default:
			if stack.Truncated {
				st.Truncated++
				frames = append(frames, FrameTruncated)
			}
			for i := len(stack.Frames) - 1; i >= 0; i-- {
				frames = append(frames, stack.Frames[i].Label())
			}
		}
		if src.leaf != nil {
			if l := src.leaf(e); l != "" {
				frames = append(frames, strings.ReplaceAll(l, ";", ":"))
			}
		}
		sums[strings.Join(frames, ";")] += w
	}
	keys := make([]string, 0, len(sums))
	for k := range sums {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		f.Stacks = append(f.Stacks, flame.Stack{Frames: strings.Split(k, ";"), Count: sums[k]})
	}
	return f, st, readErr
}

// count returns the number of events of the named type in the recording.
func (r *Recording) count(name string) int64 {
	var n int64
	for _, c := range r.Chunks {
		if c.Metadata == nil {
			continue
		}
		if t := c.Metadata.TypeByName(name); t != nil {
			if tc := c.counts[t.ID]; tc != nil {
				n += tc.Count
			}
		}
	}
	return n
}
