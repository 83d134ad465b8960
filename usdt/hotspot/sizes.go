package hotspot

import (
	"fmt"

	"github.com/jvmkit/jvmkit/internal/javaname"
	"github.com/jvmkit/jvmkit/usdt"
	"github.com/jvmkit/jvmkit/vmstructs"
)

// classSize is what a trace knows of a class from the JVM: its instance size (0: an array class, or
// unknown), and whether two loaded classes of that name disagree.
type classSize struct {
	size      uint64
	array     bool
	ambiguous bool
}

// classSizes indexes loaded classes by the address of their name's bytes, which object__alloc passes.
func classSizes(classes []vmstructs.LoadedClass) map[uint64]classSize {
	out := make(map[uint64]classSize, len(classes))
	for _, c := range classes {
		if c.NameBytes == 0 {
			continue
		}
		size, _ := c.InstanceSize()
		cs := classSize{size: size, array: c.IsArray()}
		if old, ok := out[c.NameBytes]; ok && old != cs {
			cs = classSize{ambiguous: true} // two loaders, two layouts: size each firing otherwise
		}
		out[c.NameBytes] = cs
	}
	return out
}

// variableSize are the instance classes whose instances are not all the layout helper's size:
// java.lang.Class mirrors carry their class's static fields (InstanceMirrorKlass), and virtual threads'
// stack chunks their frames (InstanceStackChunkKlass, JDK 19+).
var variableSize = map[string]bool{"java/lang/Class": true, "jdk/internal/vm/StackChunk": true}

// fixedSize returns the size of every instance of the class whose name (internal form) is at nameAddr,
// if the class says it.
func fixedSize(sizes map[uint64]classSize, nameAddr uint64, name string) uint64 {
	cs := sizes[nameAddr]
	if cs.ambiguous || variableSize[name] {
		return 0
	}
	return cs.size
}

// bucketSize is fixedSize for a bucket of the kernel's counts.
func bucketSize(b *usdt.Bucket, sizes map[uint64]classSize) uint64 {
	if b.String.Fault {
		return 0
	}
	return fixedSize(sizes, b.Key[0], string(b.String.Data))
}

// sizeBuckets turns the kernel's counts into classes: it names them and sizes them (see
// AllocProfile.Sizes) from what the trace knows: classes' layout helpers (sizes, when the JVM's VMStructs
// were read), the firings' weights, and the probe's own sizes where this JVM passes right ones.
func sizeBuckets(p *AllocProfile, buckets []usdt.Bucket, sizes map[uint64]classSize, weighted, sampled bool, byName map[string]*ClassAlloc) {
	// Which sizes are right on this JVM is checked on the instance classes, whose size is known: the
	// probe's (JDK 17's interpreter, C1 and C2 pass garbage), and, when every allocation fires, the
	// weights (right on JDK 17; on JDK 25 C2's leaf call does not see its own allocation in the
	// counter: measured, a byte[40] weighed 97 bytes on average). The weights may be off by a firing
	// or two (a thread's first one is not weighed): 0.5% is allowed.
	checked, weightChecked := 0, 0
	var weightOff, weightWant uint64
	p.ProbeSizes, p.WeightSizes = true, weighted && !sampled
	for i := range buckets {
		b := &buckets[i]
		size := bucketSize(b, sizes)
		if size == 0 {
			continue
		}
		if b.Count > b.OutOfRange {
			checked++
			if b.OutOfRange > 0 || b.Sums[0] != (b.Count-b.OutOfRange)*size {
				p.ProbeSizes = false
			}
		}
		if n := b.Count - b.Unweighted; weighted && n > 0 {
			weightChecked++
			weightWant += n * size
			weightOff += max(b.Weight, n*size) - min(b.Weight, n*size)
		}
	}
	if weightOff*200 > weightWant {
		p.WeightSizes = false
	}
	if sizes == nil || checked == 0 {
		p.ProbeSizes = sizes == nil // nothing to check against: trust them as before
	}
	if weightChecked == 0 {
		p.WeightSizes = false
	}
	switch {
	case sampled && weighted:
		p.Sizes = SizesWeights
	case sizes != nil:
		p.Sizes = SizesClass
	default:
		p.Sizes = SizesProbe
	}
	for i := range buckets {
		b := &buckets[i]
		name := string(b.String.Data)
		if b.String.Fault {
			name = fmt.Sprintf("<unreadable name at %#x>", b.Key[0])
		}
		c := byName[name]
		size := bucketSize(b, sizes)
		if c == nil {
			c = &ClassAlloc{Class: javaname.TypeName(name), InstanceSize: size}
			byName[name] = c
		}
		c.Count += b.Count
		p.PerSite[b.Site] += b.Count
		switch {
		case sampled && weighted:
			c.Bytes += b.Weight
			c.Samples += b.Count - b.Unweighted
		case size > 0:
			c.Bytes += b.Count * size
		case p.ProbeSizes:
			// The probe's own sizes, right on this JVM (checked on the instance classes): exact for every
			// firing, where a weight misses a thread's first.
			c.Bytes += b.Sums[0]
			c.Unsized += b.OutOfRange
		case p.WeightSizes:
			// Every allocation fires, and this JVM counts an object before it fires for it (checked on
			// the instance classes): a firing's weight is its size.
			c.Bytes += b.Weight
			c.Unsized += b.Unweighted
		default:
			c.Unsized += b.Count
		}
	}
}
