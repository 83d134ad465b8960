package jvmkit

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/jvmkit/jvmkit/jvmti"
	"github.com/jvmkit/jvmkit/usdt/hotspot"
)

// heapSamplingNote says what alloc --heap-sampling measures.
const heapSamplingNote = "sample: HotSpot's heap sampler (JVMTI SampledObjectAlloc, JEP 331), started by jvmkit's agent: " +
	"each thread's next sample is a random distance away, so samples fall on random bytes, not where TLABs start; an " +
	"object of s bytes is sampled with probability 1-exp(-s/interval) and weighs s over that, so bytes and counts " +
	"estimate what each class allocated"

// heapSamplingDefault is --duration's value with --heap-sampling when none is given: the agent needs a
// deadline of its own, so that a killed jvmkit leaves no sampling behind.
const heapSamplingDefault = 10 * time.Second

// runAllocHeap is alloc --heap-sampling.
func (a *jvmkit) runAllocHeap(ctx context.Context, pid int, duration time.Duration, interval int, top int, folded bool) error {
	if duration == 0 {
		duration = heapSamplingDefault
	}
	fmt.Fprintf(a.stderr, "jvmkit: alloc: sampling allocations in process %d for %v, one sample per %s on average\n",
		pid, duration, formatBytes(uint64(interval)))
	a.noteHeld("alloc", pid)
	// A closed terminal stops the sampler now, not at the agent's deadline.
	ctx, endHup := cancelOnHup(ctx)
	defer endHup()
	p, err := jvmti.HeapSample(ctx, pid, jvmti.HeapSampleOptions{Duration: duration, Interval: interval})
	if err != nil {
		return fmt.Errorf("alloc: %w", err)
	}
	elapsed := p.End.Sub(p.Start)
	if p.EndedEarly {
		fmt.Fprintf(a.stderr, "jvmkit: alloc: the agent ended the session before jvmkit stopped it (its deadline, or its file reached its size limit): the profile covers less than %v\n", elapsed.Round(time.Millisecond))
	}
	prof := heapAllocProfile(p)
	shown := prof.Classes
	if top > 0 && len(shown) > top {
		shown = shown[:top]
	}
	note := fmt.Sprintf("%s; interval %d bytes", heapSamplingNote, interval)
	switch {
	case a.json:
		out := allocJSON{PID: pid, DurationNS: elapsed.Nanoseconds(), Mode: "heap-sampling", Note: note, Flags: []hotspot.FlagState{}}
		out.Profile = shownProfile(prof, shown)
		return a.printJSON("jvmkit.alloc/v1", out)
	case folded:
		w := bufio.NewWriter(a.stdout)
		for _, c := range shown {
			fmt.Fprintf(w, "%s %d\n", strings.ReplaceAll(c.Class, " ", "_"), c.Bytes)
		}
		return w.Flush()
	}
	return writeHeapTable(a.stdout, pid, elapsed, interval, prof, shown)
}

// heapAllocProfile is the heap sampler's profile in alloc's terms: per class, Samples the samples, Count
// and Bytes their estimates; most bytes first.
func heapAllocProfile(p *jvmti.HeapProfile) *hotspot.AllocProfile {
	prof := &hotspot.AllocProfile{Sizes: "heap-sampler", PerSite: []uint64{}}
	for name, c := range p.Classes {
		ca := hotspot.ClassAlloc{Class: name, Count: uint64(math.Round(c.Objects)), Bytes: uint64(math.Round(c.Bytes)),
			Samples: uint64(c.Samples)}
		prof.Classes = append(prof.Classes, ca)
		prof.Count += ca.Count
		prof.Bytes += ca.Bytes
		prof.Samples += ca.Samples
	}
	slices.SortFunc(prof.Classes, func(x, y hotspot.ClassAlloc) int {
		if x.Bytes != y.Bytes {
			if x.Bytes > y.Bytes {
				return -1
			}
			return 1
		}
		return strings.Compare(x.Class, y.Class)
	})
	return prof
}

func writeHeapTable(out io.Writer, pid int, elapsed time.Duration, interval int, prof *hotspot.AllocProfile, shown []hotspot.ClassAlloc) error {
	w := bufio.NewWriter(out)
	fmt.Fprintf(w, "# process %d, %.1fs: %d samples (one per %s on average), standing for %s in about %d allocations\n",
		pid, elapsed.Seconds(), prof.Samples, formatBytes(uint64(interval)), formatBytes(prof.Bytes), prof.Count)
	fmt.Fprintf(w, "# %s.\n", heapSamplingNote)
	fmt.Fprintf(w, "# a class with n samples is known to about 1/sqrt(n) of its bytes (10%% at 100 samples).\n")
	fmt.Fprintf(w, "%12s %7s %12s %7s  %s\n", "samples", "sampl%", "bytes", "bytes%", "class")
	pct := func(x, total uint64) float64 {
		if total == 0 {
			return 0
		}
		return 100 * float64(x) / float64(total)
	}
	for _, c := range shown {
		fmt.Fprintf(w, "%12d %6.2f%% %12d %6.2f%%  %s\n", c.Samples, pct(c.Samples, prof.Samples), c.Bytes, pct(c.Bytes, prof.Bytes), c.Class)
	}
	if len(shown) < len(prof.Classes) {
		fmt.Fprintf(w, "# %d more classes\n", len(prof.Classes)-len(shown))
	}
	return w.Flush()
}
