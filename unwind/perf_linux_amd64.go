package unwind

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"os"
	"strconv"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/internal/procfs"
)

// SamplerOptions tune a Sampler.
type SamplerOptions struct {
	// Frequency is the sampling rate per thread in Hz (cpu-clock, on CPU time only); default 99.
	Frequency int
	// StackBytes is how much of the user stack each sample copies (PERF_SAMPLE_STACK_USER, at most
	// 65528 bytes); default 32 KiB. Frames above it are read from the live process while the copy's
	// last bytes are still there (else the stack ends in ReasonTruncated).
	StackBytes int
	// NoKernel leaves out the kernel callchain.
	NoKernel bool
	// ThreadPoll is how often /proc/<pid>/task is read for new threads; default 100 ms.
	ThreadPoll time.Duration
	// DrainEvery is the longest wait between reads of the rings; default 10 ms. The rings are read
	// sooner when a thread running all the time would fill half of its ring first. A longer wait costs
	// fewer wake-ups (the fleet agent's fixed cost per JVM); the samples are walked that much later.
	DrainEvery time.Duration
}

// Sampler samples the threads of one process with perf_event_open: a software cpu-clock event per
// thread, with the user registers, a copy of the user stack and the kernel callchain in each sample.
// Threads started while it runs are picked up by polling /proc/<pid>/task.
type Sampler struct {
	pid   int
	opts  SamplerOptions
	rings map[int]*ring // by tid
	lost  uint64
	buf   []byte
	// pollfds is threadsChanged's scratch.
	pollfds []unix.PollFd
}

// ring is one thread's event and its mmap'ed ring buffer.
type ring struct {
	fd   int
	mem  []byte
	page *unix.PerfEventMmapPage
	data []byte
}

const (
	ringPages = 64 // data pages per thread
	// defaultStackBytes covers Java stacks whole (Jetty's request threads under load: 99.9% within
	// 16 KiB, all within 32 KiB): frames beyond the copy are read live, and are the sample's only
	// while the thread has not returned from them. Deep native stacks (C2 compiling) can need more.
	defaultStackBytes = 32 << 10
	maxStack          = 65528
	regsMask          = 1<<0 | 1<<1 | 1<<6 | 1<<7 | 1<<8 | 1<<21 // AX, BX, BP, SP, IP, R13 (asm/perf_regs.h)
	sampleTypes       = unix.PERF_SAMPLE_IP | unix.PERF_SAMPLE_TID | unix.PERF_SAMPLE_TIME | unix.PERF_SAMPLE_CALLCHAIN |
		unix.PERF_SAMPLE_REGS_USER | unix.PERF_SAMPLE_STACK_USER
	contextMax = ^uint64(4095) // PERF_CONTEXT_MAX: callchain entries at or above it are context markers
)

// NewSampler prepares sampling of process pid; Run starts it.
func NewSampler(pid int, opts SamplerOptions) (*Sampler, error) {
	opts = opts.withDefaults()
	s := &Sampler{pid: pid, opts: opts, rings: map[int]*ring{}}
	if _, err := s.sync(); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// Lost is the number of samples the kernel dropped because a ring buffer was full.
func (s *Sampler) Lost() uint64 { return s.lost }

// Close stops sampling and releases the events.
func (s *Sampler) Close() error {
	for tid, r := range s.rings {
		r.close()
		delete(s.rings, tid)
	}
	return nil
}

func (r *ring) close() {
	_ = unix.Munmap(r.mem)
	unix.Close(r.fd)
}

// Run samples until ctx ends or the process exits (then ErrProcessExited), calling fn for each
// sample. The Sample and its slices are reused after fn returns.
func (s *Sampler) Run(ctx context.Context, fn func(*Sample)) error {
	tick := time.NewTicker(s.drainEvery())
	defer tick.Stop()
	lastSync, lastPoll := time.Now(), time.Now()
	var sample Sample
	for {
		for _, r := range s.rings {
			s.drain(r, &sample, fn)
		}
		if time.Since(lastPoll) >= s.opts.ThreadPoll {
			lastPoll = time.Now()
			if s.threadsChanged() || time.Since(lastSync) >= fullSync {
				lastSync = lastPoll
				alive, err := s.sync()
				if err != nil {
					return err
				}
				if !alive {
					for _, r := range s.rings {
						s.drain(r, &sample, fn)
					}
					return fmt.Errorf("sample %d: the process exited: %w", s.pid, ErrProcessExited)
				}
			}
		}
		select {
		case <-ctx.Done():
			for _, r := range s.rings {
				s.drain(r, &sample, fn)
			}
			return nil
		case <-tick.C:
		}
	}
}

// fullSync is how often the thread list is read even when threadsChanged says nothing changed.
const fullSync = time.Second

// threadsChanged reports, cheaply, whether threads may have started or exited since the last sync:
// the thread count in the nlink of /proc/<pid>/task differs from the events open, or an event's
// thread exited (poll says POLLHUP). Reading the directory every ThreadPoll was a tenth of the fleet
// agent's CPU on one JVM.
func (s *Sampler) threadsChanged() bool {
	var st unix.Stat_t
	if err := unix.Stat("/proc/"+strconv.Itoa(s.pid)+"/task", &st); err != nil || int(st.Nlink)-2 != len(s.rings) {
		return true
	}
	s.pollfds = s.pollfds[:0]
	for _, r := range s.rings {
		s.pollfds = append(s.pollfds, unix.PollFd{Fd: int32(r.fd)})
	}
	n, err := unix.Poll(s.pollfds, 0)
	if err != nil {
		return true
	}
	if n > 0 {
		for _, p := range s.pollfds {
			if p.Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0 {
				return true
			}
		}
	}
	return false
}

// drainEvery is how often the rings are read: every DrainEvery, or more often where a thread that
// runs all the time would fill half its ring sooner.
func (s *Sampler) drainEvery() time.Duration {
	records := ringPages * os.Getpagesize() / (s.opts.StackBytes + 1024)
	d := time.Duration(float64(time.Second) * float64(max(records/2, 1)) / float64(s.opts.Frequency))
	return min(max(d, time.Millisecond), s.opts.DrainEvery)
}

// sync opens events for new threads and closes those of threads that exited. alive is false once
// the process is gone.
func (s *Sampler) sync() (alive bool, err error) {
	dir := "/proc/" + strconv.Itoa(s.pid) + "/task"
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ESRCH) {
			return false, nil
		}
		return false, fmt.Errorf("sample %d: %w", s.pid, err)
	}
	if !procfs.Default.Alive(s.pid) {
		return false, nil
	}
	seen := map[int]bool{}
	var firstErr error
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		seen[tid] = true
		if _, ok := s.rings[tid]; ok {
			continue
		}
		r, err := s.open(tid)
		if err != nil {
			if errors.Is(err, unix.ESRCH) {
				continue // exited meanwhile
			}
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		s.rings[tid] = r
	}
	for tid, r := range s.rings {
		if !seen[tid] {
			var sample Sample
			s.drain(r, &sample, func(*Sample) {})
			r.close()
			delete(s.rings, tid)
		}
	}
	if len(s.rings) == 0 && firstErr != nil {
		if errors.Is(firstErr, unix.EACCES) || errors.Is(firstErr, unix.EPERM) {
			return false, fmt.Errorf("sample %d: perf_event_open: %w (%s)", s.pid, firstErr, perfRemedy())
		}
		return false, fmt.Errorf("sample %d: perf_event_open: %w", s.pid, firstErr)
	}
	return true, nil
}

func (s *Sampler) open(tid int) (*ring, error) {
	attr := sampleAttr(s.opts)
	return openRing(&attr, tid, -1, ringPages, nil)
}

// withDefaults fills in the zero options.
func (o SamplerOptions) withDefaults() SamplerOptions {
	if o.Frequency <= 0 {
		o.Frequency = 99
	}
	if o.StackBytes <= 0 {
		o.StackBytes = defaultStackBytes
	}
	o.StackBytes = min(o.StackBytes, maxStack) &^ 7
	if o.ThreadPoll <= 0 {
		o.ThreadPoll = 100 * time.Millisecond
	}
	if o.DrainEvery <= 0 {
		o.DrainEvery = 10 * time.Millisecond
	}
	return o
}

// sampleAttr is the perf_event_attr of a cpu-clock sampling event whose samples have what a walk
// needs: the pc, the thread, the time, the kernel callchain, the user registers and stack.
func sampleAttr(opts SamplerOptions) unix.PerfEventAttr {
	attr := unix.PerfEventAttr{
		Type:              unix.PERF_TYPE_SOFTWARE,
		Config:            unix.PERF_COUNT_SW_CPU_CLOCK,
		Sample:            uint64(opts.Frequency),
		Sample_type:       sampleTypes,
		Bits:              unix.PerfBitFreq | unix.PerfBitExcludeCallchainUser | unix.PerfBitExcludeHv,
		Sample_regs_user:  regsMask,
		Sample_stack_user: uint32(opts.StackBytes),
		Sample_max_stack:  127,
	}
	if opts.NoKernel {
		attr.Bits |= unix.PerfBitExcludeKernel | unix.PerfBitExcludeCallchainKernel
	}
	attr.Size = uint32(unsafe.Sizeof(attr))
	return attr
}

// openRing opens a perf event (pid, cpu as perf_event_open takes them) and maps its ring of pages
// data pages. With setup, the event is opened disabled, setup is given its fd, and it is enabled
// once mapped.
func openRing(attr *unix.PerfEventAttr, pid, cpu, pages int, setup func(fd int) error) (*ring, error) {
	if setup != nil {
		attr.Bits |= unix.PerfBitDisabled
	}
	fd, err := unix.PerfEventOpen(attr, pid, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	if setup != nil {
		if err := setup(fd); err != nil {
			unix.Close(fd)
			return nil, err
		}
	}
	size := (1 + pages) * os.Getpagesize()
	mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("mmap perf ring: %w", err)
	}
	r := &ring{fd: fd, mem: mem, page: (*unix.PerfEventMmapPage)(unsafe.Pointer(&mem[0]))}
	off, n := r.page.Data_offset, r.page.Data_size
	if off == 0 {
		off, n = uint64(os.Getpagesize()), uint64(pages*os.Getpagesize())
	}
	r.data = mem[off : off+n]
	if setup != nil {
		if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_ENABLE, 0); err != nil {
			r.close()
			return nil, fmt.Errorf("enable: %w", err)
		}
	}
	return r, nil
}

// drain reads every record in a ring.
func (s *Sampler) drain(r *ring, sample *Sample, fn func(*Sample)) {
	drainRing(r, &s.buf, &s.lost, sample, fn)
}

// drainRing reads every record in a ring, handing samples to fn and adding lost ones to *lost; *buf
// holds records that wrap around the ring's end.
func drainRing(r *ring, buf *[]byte, lost *uint64, sample *Sample, fn func(*Sample)) {
	head := atomic.LoadUint64(&r.page.Data_head)
	tail := r.page.Data_tail
	size := uint64(len(r.data))
	for tail+8 <= head {
		hdr := r.read(buf, tail, 8)
		typ := binary.LittleEndian.Uint32(hdr)
		n := uint64(binary.LittleEndian.Uint16(hdr[6:]))
		if n < 8 || tail+n > head || n > size {
			tail = head
			break
		}
		rec := r.read(buf, tail, n)
		switch typ {
		case unix.PERF_RECORD_SAMPLE:
			if parseSample(rec[8:], sample) {
				fn(sample)
			}
		case unix.PERF_RECORD_LOST:
			if len(rec) >= 24 {
				*lost += binary.LittleEndian.Uint64(rec[16:])
			}
		}
		tail += n
	}
	atomic.StoreUint64(&r.page.Data_tail, tail)
}

// read returns n bytes of the ring at position pos, copied into *buf when they wrap around its end.
func (r *ring) read(buf *[]byte, pos, n uint64) []byte {
	size := uint64(len(r.data))
	start := pos % size
	if start+n <= size {
		return r.data[start : start+n]
	}
	if uint64(cap(*buf)) < n {
		*buf = make([]byte, n)
	}
	b := (*buf)[:n]
	k := copy(b, r.data[start:])
	copy(b[k:], r.data[:n-uint64(k)])
	return b
}

// parseSample decodes a PERF_RECORD_SAMPLE body in the order of include/uapi/linux/perf_event.h for
// sampleTypes: ip, pid/tid, time, callchain, regs_user, stack_user.
func parseSample(b []byte, s *Sample) bool {
	p := 0
	u64 := func() (uint64, bool) {
		if p+8 > len(b) {
			return 0, false
		}
		v := binary.LittleEndian.Uint64(b[p:])
		p += 8
		return v, true
	}
	if _, ok := u64(); !ok { // ip
		return false
	}
	pt, ok := u64()
	if !ok {
		return false
	}
	s.PID, s.TID = int(uint32(pt)), int(uint32(pt>>32))
	s.JavaThread = 0
	s.Time, _ = u64()
	nr, ok := u64()
	if !ok || nr > uint64(len(b)-p)/8 {
		return false
	}
	s.Kernel = s.Kernel[:0]
	inKernel := false
	for range nr {
		ip, _ := u64()
		if ip >= contextMax {
			inKernel = ip == ^uint64(127) // PERF_CONTEXT_KERNEL
			continue
		}
		if inKernel {
			s.Kernel = append(s.Kernel, ip)
		}
	}
	abi, ok := u64()
	if !ok {
		return false
	}
	s.Regs = Regs{}
	if abi != 0 {
		var regs [bits.UintSize]uint64
		n := bits.OnesCount64(regsMask)
		for i := range n {
			if regs[i], ok = u64(); !ok {
				return false
			}
		}
		// In the order of the mask's bits: AX, BX, BP, SP, IP, R13.
		s.Regs = Regs{AX: regs[0], BX: regs[1], FP: regs[2], SP: regs[3], PC: regs[4], R13: regs[5]}
	}
	size, ok := u64()
	if !ok {
		return false
	}
	s.Stack = nil
	if size > 0 {
		if size > uint64(len(b)-p) {
			return false
		}
		data := b[p : p+int(size)]
		p += int(size)
		dyn, ok := u64()
		if ok && dyn < size {
			data = data[:dyn]
		}
		s.Stack = data
	}
	return abi != 0
}

// Profile samples the walker's (live) JVM until ctx ends or the JVM exits, walks each sample at once
// (before the code it ran can be unloaded) and hands it to fn. The walker's caches are refreshed
// every second. It returns ErrProcessExited, wrapped, when the JVM exits.
func (w *Walker) Profile(ctx context.Context, opts SamplerOptions, fn func(*Sample, *Stack)) error {
	pid := w.j.PID
	if pid == 0 {
		return errors.New("unwind: profile: not a live JVM")
	}
	s, err := NewSampler(pid, opts)
	if err != nil {
		return fmt.Errorf("unwind: %w", err)
	}
	defer func() { _ = s.Close() }()
	return s.Run(ctx, func(smp *Sample) {
		st := w.WalkLive(smp)
		fn(smp, &st)
	})
}

// perfRemedy ends a refused perf_event_open's error: what this process lacks as root, or what to do.
func perfRemedy() string {
	if h := procfs.RootWithoutAny(procfs.CapPerfmon, procfs.CapSysAdmin); h != "" {
		return h
	}
	if os.Geteuid() == 0 {
		// Sampling another process is also a ptrace check.
		return procfs.Remedy("", procfs.CapSysPtrace)
	}
	return "run as root, or lower kernel.perf_event_paranoid"
}
