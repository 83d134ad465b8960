package jvmti

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jvmkit/jvmkit/attach"
	"github.com/jvmkit/jvmkit/internal/javaname"
)

// HeapSampleOptions tune HeapSample.
type HeapSampleOptions struct {
	Duration time.Duration // how long to sample; default 10 s
	Interval int           // mean bytes between samples per thread; default 512 KiB
	MaxBytes int64         // the most bytes of records the agent writes; default 256 MiB
	Logger   attach.Logger // debug records (files created and removed, loads); nil: none
}

func (o *HeapSampleOptions) defaults() {
	if o.Duration <= 0 {
		o.Duration = 10 * time.Second
	}
	if o.Interval <= 0 {
		o.Interval = 512 << 10
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = 256 << 20
	}
}

// HeapProfile is what HeapSample found.
type HeapProfile struct {
	Interval    int
	Start, End  time.Time
	Samples     int
	Classes     map[string]*HeapClass // by Java name ("java.lang.String", "byte[]")
	Interrupted bool                  // ctx was cancelled before the duration ended
	EndedEarly  bool                  // the agent ended the session itself (deadline, or MaxBytes reached)
}

// HeapClass is one class's samples. An object of s bytes is sampled with probability 1-exp(-s/Interval)
// (the sampler's distance to the next sample is exponential), so each sample weighs 1/p objects and s/p
// bytes: Bytes and Objects estimate what the class allocated, without bias, however its allocations fall
// into TLABs.
type HeapClass struct {
	Samples      int
	SampledBytes int64   // the sampled objects' own sizes
	Bytes        float64 // estimated bytes allocated
	Objects      float64 // estimated objects allocated
}

// Bytes is the estimated total.
func (p *HeapProfile) Bytes() float64 {
	var b float64
	for _, c := range p.Classes {
		b += c.Bytes
	}
	return b
}

// parse reads the agent's records: u64 size, u32 n, n bytes of class signature, in this machine's byte
// order.
func (p *HeapProfile) parse(data []byte) error {
	if p.Classes == nil {
		p.Classes = map[string]*HeapClass{}
	}
	names := map[string]string{}
	for off := 0; off < len(data); {
		if len(data)-off < 12 {
			return fmt.Errorf("record at %d cut short (%d bytes)", off, len(data)-off)
		}
		size := binary.NativeEndian.Uint64(data[off:])
		n := int(binary.NativeEndian.Uint32(data[off+8:]))
		if n == 0 || n > len(data)-off-12 {
			return fmt.Errorf("record at %d: class name of %d bytes", off, n)
		}
		if size == 0 || size > 1<<40 {
			return fmt.Errorf("record at %d: object of %d bytes", off, size)
		}
		sig := string(data[off+12 : off+12+n])
		name, ok := names[sig]
		if !ok {
			name = javaname.TypeName(sig)
			names[sig] = name
		}
		c := p.Classes[name]
		if c == nil {
			c = &HeapClass{}
			p.Classes[name] = c
		}
		prob := -math.Expm1(-float64(size) / float64(p.Interval))
		c.Samples++
		c.SampledBytes += int64(size)
		c.Bytes += float64(size) / prob
		c.Objects += 1 / prob
		p.Samples++
		off += 12 + n
	}
	return nil
}

// ErrBusy: a heap-sampling session of another jvmkit runs in the JVM.
var ErrBusy = errors.New("jvmti: another heap-sampling session runs in this JVM")
