package hotspot

import (
	"errors"
	"math"
	"sync"

	"github.com/jvmkit/jvmkit/internal/javaname"
	"github.com/jvmkit/jvmkit/usdt"
	"github.com/jvmkit/jvmkit/vmstructs"
)

// TLAB windows (AllocOptions.Sampled): a new TLAB's sample stands for the bytes its thread allocated since
// its previous sample, most of them in its previous TLAB. Given to the class of the object that opened
// the new TLAB (JFR's ObjectAllocationSample does so), the samples are biased where a loop allocates the
// same objects in the same order: TLABs of one size end at the same points of the loop, and the objects
// there take the bytes of the others (measured: a class of 4.2% of the bytes got none of a million
// samples). With windows, the probe also copies the start of the previous TLAB (windowBytes), a
// stretch of the very allocations the sample stands for, and the sample's weight is spread over the
// classes of the objects in it, by their bytes.

// windowBytes is the most bytes of a previous TLAB copied per sample (a longer TLAB gives its first
// windowBytes/2 to windowBytes, see usdt.BufferWindow): more than a loop's allocations in all but odd
// cases, and little to copy (about a microsecond).
const windowBytes = 4096

// windows spreads the samples' weights over the classes of their windows.
type windows struct {
	jvm    *vmstructs.JVM // the windows' own view (the trace's is used by its thread watcher)
	layout vmstructs.ObjectLayout

	mu      sync.Mutex
	klasses map[uint64]klassEntry
	lh      map[string]int32   // class name → its layout helper, of every class klass read
	bytes   map[string]float64 // class name (internal form) → bytes the windows gave it
	samples map[string]uint64  // class name → windows that held it
	n       uint64             // windows spread
	failed  uint64             // windows that could not be walked
	failedW uint64             // their weight
	failErr error              // the first reason a window could not be walked
}

type klassEntry struct {
	name string
	lh   int32
	ok   bool
}

// openWindows readies the windows of a sampled trace of the JVM of pid, or says why it cannot.
func openWindows(jvm *vmstructs.JVM) (*windows, *usdt.BufferWindow, error) {
	layout, err := jvm.ObjectLayout()
	if err != nil {
		return nil, nil, err
	}
	stable, err := jvm.CollectionCounter()
	if err != nil {
		return nil, nil, err
	}
	w := &windows{jvm: jvm, layout: layout, klasses: make(map[uint64]klassEntry), lh: make(map[string]int32),
		bytes: make(map[string]float64), samples: make(map[string]uint64)}
	return w, &usdt.BufferWindow{Bytes: windowBytes, Stable: stable, Handle: w.handle}, nil
}

// klass is the class at k, read once.
func (w *windows) klass(k uint64) klassEntry {
	if e, ok := w.klasses[k]; ok {
		return e
	}
	var e klassEntry
	if info, err := w.jvm.Klass(k); err == nil && info.LayoutHelper != 0 && !variableSize[info.Name] {
		e = klassEntry{name: info.Name, lh: info.LayoutHelper, ok: true}
		w.lh[info.Name] = info.LayoutHelper
	}
	if len(w.klasses) < 1<<20 {
		w.klasses[k] = e
	}
	return e
}

// handle spreads one window's weight (see windows).
func (w *windows) handle(win usdt.Window) {
	w.mu.Lock()
	defer w.mu.Unlock()
	type part struct {
		name  string
		bytes float64
	}
	var parts []part
	var off uint64 // where the next object starts
	var total float64
	partial := win.Used > uint64(len(win.Data))
	end, err := w.layout.WalkObjects(win.Data, func(k uint64) (int32, bool) {
		e := w.klass(k)
		return e.lh, e.ok
	}, func(k, bytes uint64) {
		name := w.klasses[k].name
		b := float64(bytes)
		if partial {
			b = rampUp(off+bytes) - rampUp(off)
		}
		off += bytes
		total += b
		for i := range parts {
			if parts[i].name == name {
				parts[i].bytes += b
				return
			}
		}
		parts = append(parts, part{name, b})
	})
	switch {
	case err == nil && total > 0 && len(win.Key) > 0 && (partial || end == uint64(len(win.Data))):
	default:
		if err == nil {
			err = errWindowEnd
		}
		w.failed++
		w.failedW += win.Weight
		if w.failErr == nil {
			w.failErr = err
		}
		return
	}
	w.n++
	for _, p := range parts {
		w.bytes[p.name] += float64(win.Weight) * p.bytes / total
		w.samples[p.name]++
	}
}

var errWindowEnd = errors.New("the objects do not end where the TLAB's used part does")

// A window of part of a TLAB (one longer than windowBytes) always starts at the TLAB's start, and TLABs
// start at the same point of a loop where one allocates the same objects over and over (the case windows
// are for). Counted alike, the bytes of a window [0, n) would favour the objects at the start of the
// loop's round: position x of a round of period P is in the window about (n-x)/P + 1/2 times. So a
// partial window weighs its byte at offset y by min(1, y/rampBytes), rising from 0, and its end is
// random (BufferWindow): the weights then fall off smoothly at both ends, and the sum of the weights of
// a round's positions is the same for each to within (P/rampBytes)^2 or so. A whole TLAB is counted
// alike: its rounds are whole.
const rampBytes = windowBytes / 2

// rampUp is the integral of min(1, y/rampBytes) from 0 to y.
func rampUp(y uint64) float64 {
	f := float64(y)
	if y <= rampBytes {
		return f * f / (2 * rampBytes)
	}
	return rampBytes/2 + f - rampBytes
}

// spread adds the windows' weights to the classes of p (sized with SizesWeights; the kernel's buckets
// counted the windowed samples without their weight). The weight of the windows that were missed (a full
// ring buffer: c.Lost, from the kernel), could not be walked, or could not be had (c.None: a thread's
// first sample, the first after a collection) is spread as the walked windows' bytes are: why a sample
// has no window has nothing to do with the classes in it, where giving it to the class of the sampled
// allocation would bring back the bias the windows remove.
func (w *windows) spread(p *AllocProfile, c usdt.WindowCounts, byName map[string]*ClassAlloc) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var total float64
	for _, b := range w.bytes {
		total += b
	}
	rest := float64(c.LostWeight + c.NoneWeight + w.failedW)
	for name, bytes := range w.bytes {
		ca := byName[name]
		if ca == nil {
			ca = &ClassAlloc{Class: javaname.TypeName(name)}
			ca.InstanceSize, _ = vmstructs.LoadedClass{LayoutHelper: w.lh[name]}.InstanceSize()
			byName[name] = ca
		}
		ca.Bytes += uint64(math.Round(bytes + rest*bytes/total))
		ca.Windows += w.samples[name]
	}
	if total == 0 {
		// Nothing walked to spread the rest over: it is counted, in no class.
		p.Unattributed = uint64(rest)
	}
	p.Windows, p.WindowsFailed, p.WindowsLost = w.n, w.failed, c.Lost
	p.WindowsNone, p.WindowsNoneBytes = c.None, c.NoneWeight
	if w.failErr != nil {
		p.WindowError = w.failErr.Error()
	}
}
