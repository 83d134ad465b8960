package vmstructs

import (
	"fmt"
)

// AllocCounter says where a thread's allocated bytes are, as offsets from its JavaThread: the bytes of
// its retired TLABs and of its allocations outside a TLAB (Thread::_allocated_bytes) plus what it used of
// its current TLAB (ThreadLocalAllocBuffer::_top - _start). Their sum is Thread::cooked_allocated_bytes,
// the counter behind JFR's allocation-sample weights and ThreadMXBean.getThreadAllocatedBytes.
type AllocCounter struct {
	AllocatedBytes uint64 // Thread::_allocated_bytes (jlong)
	TLABTop        uint64 // Thread::_tlab + ThreadLocalAllocBuffer::_top (HeapWord*)
	TLABStart      uint64 // Thread::_tlab + ThreadLocalAllocBuffer::_start (HeapWord*)
}

// AllocCounter resolves the offsets of the allocated-bytes counter (JDK 17 and 25 export all three).
func (j *JVM) AllocCounter() (AllocCounter, error) {
	r := j.resolver()
	ab := r.field("Thread|JavaThread", "_allocated_bytes")
	tlab := r.field("Thread|JavaThread", "_tlab")
	top := r.field("ThreadLocalAllocBuffer", "_top")
	start := r.field("ThreadLocalAllocBuffer", "_start")
	if err := r.err("allocated bytes"); err != nil {
		return AllocCounter{}, err
	}
	if ab.readSize() != 8 || top.readSize() != 8 || start.readSize() != 8 {
		return AllocCounter{}, fmt.Errorf("vmstructs: allocated bytes: fields of %d, %d and %d bytes, want 8", ab.Size, top.Size, start.Size)
	}
	return AllocCounter{AllocatedBytes: ab.Offset, TLABTop: tlab.Offset + top.Offset, TLABStart: tlab.Offset + start.Offset}, nil
}

// maxTLAB bounds a plausible used TLAB (ThreadLocalAllocBuffer::max_size is at most a few GiB):
// a larger top - start is a TLAB read while it changed.
const maxTLAB = 1 << 34

// ThreadAllocation is a thread's allocation counters, read at one time.
type ThreadAllocation struct {
	AllocatedBytes, TLABTop, TLABStart uint64
}

// Cooked is Thread::cooked_allocated_bytes: the bytes the thread allocated so far.
func (a ThreadAllocation) Cooked() uint64 {
	if used := a.TLABTop - a.TLABStart; a.TLABTop >= a.TLABStart && used <= maxTLAB {
		return a.AllocatedBytes + used
	}
	return a.AllocatedBytes
}

// ThreadAllocation reads the allocation counters of the JavaThread at thread (see AllocCounter). The
// thread runs on while they are read, one after the other: they are read again until the allocated
// bytes and the TLAB's start have not changed around the read of its top (a few tries; the last read
// is returned when the thread allocates faster than that).
func (j *JVM) ThreadAllocation(c AllocCounter, thread uint64) (ThreadAllocation, error) {
	var a ThreadAllocation
	for range 4 {
		var err error
		for _, f := range []struct {
			dst *uint64
			off uint64
		}{{&a.AllocatedBytes, c.AllocatedBytes}, {&a.TLABStart, c.TLABStart}, {&a.TLABTop, c.TLABTop}} {
			if *f.dst, err = j.r.u64(thread + f.off); err != nil {
				return ThreadAllocation{}, err
			}
		}
		ab, err := j.r.u64(thread + c.AllocatedBytes)
		if err != nil {
			return ThreadAllocation{}, err
		}
		start, err := j.r.u64(thread + c.TLABStart)
		if err != nil {
			return ThreadAllocation{}, err
		}
		if ab == a.AllocatedBytes && start == a.TLABStart {
			break
		}
	}
	return a, nil
}

// LoadedClass is a class the JVM has loaded, as a Klass in its class loader's list.
type LoadedClass struct {
	Klass uint64 `json:"klass"`
	// NameBytes is the address of the class name's bytes (Symbol::_body), the pointer HotSpot's probes
	// pass for a class name (object__alloc, class__loaded).
	NameBytes uint64 `json:"name_bytes"`
	// LayoutHelper is Klass::_layout_helper: for an instance class the instance size in bytes (with
	// bit 0 set when allocation must take the slow path), for an array class a negative descriptor
	// (tag, header size, element size), 0 for others.
	LayoutHelper int32 `json:"layout_helper"`
}

// InstanceSize returns the size of the class's instances in bytes, for an instance class.
func (c LoadedClass) InstanceSize() (uint64, bool) {
	if c.LayoutHelper <= 0 {
		return 0, false
	}
	return uint64(c.LayoutHelper) &^ 7, true // the size is in heap words; bit 0 is the slow-path bit
}

// IsArray tells an array class (its layout helper is negative).
func (c LoadedClass) IsArray() bool { return c.LayoutHelper < 0 }

// maxClasses bounds a walk of the class loader data graph (a torn read could make a loop).
const maxClasses = 1 << 22

// LoadedClasses walks the class loader data graph (ClassLoaderDataGraph::_head, each ClassLoaderData's
// _klasses through Klass::_next_link) and returns every class with its name's address and layout helper.
// The JVM keeps running, loading and unloading classes: a walk that meets memory freed meanwhile returns
// what it read with the error.
func (j *JVM) LoadedClasses() ([]LoadedClass, error) {
	r := j.resolver()
	head := r.field("ClassLoaderDataGraph", "_head")
	next := r.field("ClassLoaderData", "_next")
	klasses := r.field("ClassLoaderData", "_klasses")
	nextLink := r.field("Klass", "_next_link")
	name := r.field("Klass", "_name")
	lh := r.field("Klass", "_layout_helper")
	body := r.field("Symbol", "_body|_body[0]")
	if err := r.err("loaded classes"); err != nil {
		return nil, err
	}
	var out []LoadedClass
	cld, err := j.static(head)
	if err != nil {
		return nil, fmt.Errorf("vmstructs: loaded classes: %w", err)
	}
	for n := 0; cld != 0; n++ {
		k, err := j.get(cld, klasses)
		if err != nil {
			return out, fmt.Errorf("vmstructs: loaded classes: %w", err)
		}
		for ; k != 0 && len(out) < maxClasses; n++ {
			sym, err := j.get(k, name)
			if err != nil {
				return out, fmt.Errorf("vmstructs: loaded classes: %w", err)
			}
			h, err := j.getInt(k, lh)
			if err != nil {
				return out, fmt.Errorf("vmstructs: loaded classes: %w", err)
			}
			c := LoadedClass{Klass: k, LayoutHelper: int32(h)}
			if sym != 0 {
				c.NameBytes = sym + body.Offset
			}
			out = append(out, c)
			if k, err = j.get(k, nextLink); err != nil {
				return out, fmt.Errorf("vmstructs: loaded classes: %w", err)
			}
		}
		if len(out) >= maxClasses || n > maxClasses {
			return out, fmt.Errorf("vmstructs: loaded classes: more than %d (a loop?)", maxClasses)
		}
		if cld, err = j.get(cld, next); err != nil {
			return out, fmt.Errorf("vmstructs: loaded classes: %w", err)
		}
	}
	return out, nil
}

// HeapUsedCounter returns the address of a 64-bit count of the Java heap's used bytes that the heap keeps
// itself, for readers that must take it at a given moment (a probe at a collection's start and end): G1's
// G1CollectedHeap::_summary_bytes_used (the used bytes of every region but the current allocation regions,
// updated as regions are retired and freed). It is 0 for the other collectors, before the heap exists and
// where VMStructs does not export it.
func (j *JVM) HeapUsedCounter() (uint64, error) {
	flags, err := j.vmBoolFlags("UseG1GC")
	if err != nil || !flags["UseG1GC"] {
		return 0, err
	}
	r := j.resolver()
	heap := r.field("Universe", "_collectedHeap")
	used := r.field("G1CollectedHeap", "_summary_bytes_used")
	if r.err("G1 heap used") != nil || used.readSize() != 8 {
		return 0, nil
	}
	obj, err := j.static(heap)
	if err != nil {
		return 0, fmt.Errorf("vmstructs: Universe::_collectedHeap: %w", err)
	}
	if obj == 0 {
		return 0, nil // not initialized yet
	}
	return obj + used.Offset, nil
}
