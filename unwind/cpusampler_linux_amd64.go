package unwind

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/internal/procfs"
)

// CPUSampler samples the threads of chosen processes with one cpu-clock event per CPU, each with a
// BPF program that keeps only the samples of those processes (by the sampled task's process id, in
// the initial pid namespace). Unlike a Sampler, it has no event or ring per thread and never reads a
// process's thread list: threads started later are sampled from their first tick, and its cost and
// memory do not grow with the threads or processes sampled. Each CPU's event samples whatever runs
// on that CPU at the given rate, so a thread that runs all the time gets that rate, as with a
// Sampler. It needs root (CAP_PERFMON and CAP_BPF).
//
// It needs Linux 4.9+ (BPF programs on perf events) and, for its pids to be the kernel's, to run in the
// initial pid namespace. CPUs that come online later are sampled from the next Drain that looks (every
// few seconds).
type CPUSampler struct {
	opts   SamplerOptions
	prog   *ebpf.Program
	pids   *ebpf.Map     // process id (u32) -> 1
	rings  map[int]*ring // by CPU
	looked time.Time     // when the online CPUs were last read
	lost   uint64
	buf    []byte
}

// cpuLook is how often Drain reads the online CPUs again.
const cpuLook = 5 * time.Second

// cpuRingPages is the data pages of each CPU's ring: 1 MiB, about 30 samples of 32 KiB stacks, 300
// ms of one CPU at 99 Hz.
const cpuRingPages = 256

// MaxCPUSampled bounds the processes a CPUSampler samples at once.
const MaxCPUSampled = 4096

// NewCPUSampler opens the events of every online CPU; they sample nothing until Add.
func NewCPUSampler(opts SamplerOptions) (*CPUSampler, error) {
	opts = opts.withDefaults()
	s := &CPUSampler{opts: opts, rings: map[int]*ring{}}
	// Kernels before 5.11 charge BPF maps and programs to RLIMIT_MEMLOCK (64 KiB by default); later ones
	// to the memory cgroup, where this does nothing.
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, fmt.Errorf("unwind: cpu sampler: %w", err)
	}
	var err error
	s.pids, err = ebpf.NewMap(&ebpf.MapSpec{Name: "jvmkit_pids", Type: ebpf.Hash, KeySize: 4, ValueSize: 1, MaxEntries: MaxCPUSampled})
	if err != nil {
		return nil, fmt.Errorf("unwind: cpu sampler: BPF map: %w", err)
	}
	s.prog, err = ebpf.NewProgram(&ebpf.ProgramSpec{
		Name:         "jvmkit_pidfilt",
		Type:         ebpf.PerfEvent,
		License:      "GPL",
		Instructions: pidFilter(s.pids.FD()),
	})
	if err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("unwind: cpu sampler: BPF program: %w", err)
	}
	if err := s.openCPUs(); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("unwind: cpu sampler: %w", err)
	}
	return s, nil
}

// openCPUs opens the events of online CPUs that have none, and enables those that have one (a CPU
// taken offline and back leaves its event off). A CPU that goes offline meanwhile is skipped.
func (s *CPUSampler) openCPUs() error {
	s.looked = time.Now()
	cpus, err := procfs.OnlineCPUs()
	if err != nil {
		return err
	}
	for _, cpu := range cpus {
		if r, ok := s.rings[cpu]; ok {
			_ = unix.IoctlSetInt(r.fd, unix.PERF_EVENT_IOC_ENABLE, 0)
			continue
		}
		r, err := s.open(cpu)
		switch {
		case errors.Is(err, unix.ENODEV):
			continue // offline since the list was read
		case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
			return fmt.Errorf("CPU %d: %w (%s)", cpu, err, perfRemedy())
		case err != nil:
			return fmt.Errorf("CPU %d: %w", cpu, err)
		}
		s.rings[cpu] = r
	}
	if len(s.rings) == 0 {
		return errors.New("no CPU could be sampled")
	}
	return nil
}

// pidFilter is the BPF program run at each sample: it returns 1 (keep) when the current task's
// process id is in the map, else 0 (the kernel then writes no sample, and copies no stack).
func pidFilter(mapFD int) asm.Instructions {
	return asm.Instructions{
		asm.FnGetCurrentPidTgid.Call(),
		asm.RSh.Imm(asm.R0, 32),
		asm.StoreMem(asm.RFP, -4, asm.R0, asm.Word),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -4),
		asm.LoadMapPtr(asm.R1, mapFD),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "drop"),
		asm.Mov.Imm(asm.R0, 1),
		asm.Return(),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("drop"),
		asm.Return(),
	}
}

func (s *CPUSampler) open(cpu int) (*ring, error) {
	attr := sampleAttr(s.opts)
	// The filter is in place before the event is enabled: no sample of another process is written.
	r, err := openRing(&attr, -1, cpu, cpuRingPages, func(fd int) error {
		if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_BPF, s.prog.FD()); err != nil {
			return fmt.Errorf("attach the BPF filter: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("perf_event_open: %w", err)
	}
	return r, nil
}

// Add starts sampling the threads of process pid (in the initial pid namespace).
func (s *CPUSampler) Add(pid int) error {
	if err := s.pids.Update(uint32(pid), uint8(1), ebpf.UpdateAny); err != nil {
		return fmt.Errorf("unwind: cpu sampler: add process %d: %w", pid, err)
	}
	return nil
}

// Remove stops sampling process pid; samples already in the rings still come.
func (s *CPUSampler) Remove(pid int) {
	_ = s.pids.Delete(uint32(pid))
}

// DrainEvery is how often Drain should be called so that no ring overflows.
func (s *CPUSampler) DrainEvery() time.Duration {
	records := cpuRingPages * os.Getpagesize() / (s.opts.StackBytes + 1024)
	d := time.Duration(float64(time.Second) * float64(max(records/2, 1)) / float64(s.opts.Frequency))
	return min(max(d, time.Millisecond), s.opts.DrainEvery)
}

// Drain hands every sample in the rings to fn. The Sample and its slices are reused after fn
// returns. Its PID says which process it is of.
func (s *CPUSampler) Drain(fn func(*Sample)) {
	if time.Since(s.looked) >= cpuLook {
		_ = s.openCPUs() // on failure the CPUs sampled so far stay
	}
	var sample Sample
	for _, r := range s.rings {
		drainRing(r, &s.buf, &s.lost, &sample, fn)
	}
}

// Lost is the number of samples the kernel dropped because a ring was full.
func (s *CPUSampler) Lost() uint64 { return s.lost }

// Close stops sampling and releases the events, the program and the map.
func (s *CPUSampler) Close() error {
	for _, r := range s.rings {
		r.close()
	}
	clear(s.rings)
	if s.prog != nil {
		_ = s.prog.Close()
	}
	if s.pids != nil {
		_ = s.pids.Close()
	}
	return nil
}
