package jvmti

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/attach"
	"github.com/jvmkit/jvmkit/internal/rootfs"
)

// heapDirPrefix names the private directories HeapSample makes in the JVM's /tmp.
const heapDirPrefix = ".jvmkit-heapsample-"

// HeapSample samples JVM pid's allocations for opts.Duration with HotSpot's heap sampler (JVMTI
// SampledObjectAlloc, JEP 331; JDK 11 and later): each thread's next sample is a random, geometrically
// distributed number of bytes away, the mean being opts.Interval, so compiled code's fast path stops at
// random bytes, not where TLABs end (where alloc --switch-flags and JFR's ObjectAllocationSample sample,
// and which a loop can lock onto a few classes).
//
// jvmkit's heap-sampling agent is loaded (staged as Session.Stage says) to start the sampler and again to
// stop it: when the duration ends, when ctx is cancelled, or on an error after the start. The agent ends
// the session by itself at a deadline (the duration and a minute) or when its record file reaches
// opts.MaxBytes, so that a jvmkit killed meanwhile leaves no sampling behind. One session at a time runs
// in a JVM (HotSpot's interval is global): a second fails with an error wrapping ErrBusy, unless the
// running one's jvmkit was killed (no live session holds a directory in the JVM's /tmp), which is then
// stopped first. The agent's library stays loaded in the JVM, idle.
func HeapSample(ctx context.Context, pid int, opts HeapSampleOptions) (*HeapProfile, error) {
	opts.defaults()
	lib, name, err := Library("heapsample")
	if err != nil {
		return nil, err
	}
	s, err := Open(ctx, pid, opts.Logger)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	libPath, release, err := s.Stage(name, lib)
	if err != nil {
		return nil, err
	}
	defer release()
	dir, dfd, err := s.PrivateDir(heapDirPrefix)
	if err != nil {
		return nil, err
	}
	defer s.RemovePrivateDir(dir, dfd)
	file := "/tmp/" + dir + "/samples"
	deadline := time.Now().Add(opts.Duration + time.Minute)
	start := "start,interval=" + strconv.Itoa(opts.Interval) + ",deadline=" + strconv.FormatInt(deadline.Unix()+1, 10) +
		",max=" + strconv.FormatInt(opts.MaxBytes, 10) + ",file=" + file
	p := &HeapProfile{Interval: opts.Interval, Start: time.Now()}
	err = s.Load(ctx, libPath, start)
	if hasCode(err, rcState) && !s.othersLive(dir) {
		// A session runs that no live jvmkit holds (its directory's lock was free, and PrivateDir removed
		// it): its jvmkit was killed. It would end at its deadline; it ends now.
		s.debug("stopping an orphaned heap-sampling session")
		if err := s.Load(ctx, libPath, "stop"); err != nil && !hasCode(err, rcEnded) && !hasCode(err, rcState) {
			return nil, heapFailure(pid, err, file)
		}
		p.Start = time.Now()
		err = s.Load(ctx, libPath, start)
	}
	if err := heapFailure(pid, err, file); err != nil {
		return nil, err
	}
	t := time.NewTimer(opts.Duration)
	select {
	case <-t.C:
	case <-ctx.Done():
		t.Stop()
		p.Interrupted = true
	}
	p.End = time.Now()
	// Stopped even when ctx is done: the JVM must not keep sampling.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	err = s.Load(sctx, libPath, "stop")
	if hasCode(err, rcEnded) {
		p.EndedEarly, err = true, nil
	}
	if err := heapFailure(pid, err, file); err != nil {
		return nil, err
	}
	fd, err := unix.Openat(dfd, "samples", unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("jvmti: heap samples of process %d (%s): %w", pid, s.HostPath(dir+"/samples"), err)
	}
	f := os.NewFile(uintptr(fd), s.HostPath(dir+"/samples"))
	defer f.Close()
	if err := p.read(f); err != nil {
		return nil, fmt.Errorf("jvmti: heap samples of process %d (%s): %w", pid, f.Name(), err)
	}
	return p, nil
}

// Return codes of the heap-sampling agent (jvmti/agent/jvmkit_heapsample.c).
const (
	rcOptions = 1
	rcNoJVMTI = 2
	rcNoMem   = 3
	rcState   = 7
	rcEnded   = 8
)

func hasCode(err error, code int) bool {
	var ae *attach.AgentError
	return errors.As(err, &ae) && ae.ReturnCode == code
}

// othersLive reports whether the JVM's /tmp holds heap-sampling directories besides ours: those of
// sessions whose jvmkit runs (PrivateDir removed the others).
func (s *Session) othersLive(ours string) bool {
	names, err := rootfs.ReadDirNames(s.tmp)
	if err != nil {
		return true // cannot tell: leave it
	}
	for _, n := range names {
		if n != ours && strings.HasPrefix(n, heapDirPrefix) {
			return true
		}
	}
	return false
}

// heapFailure explains an error of a load of the heap-sampling agent; nil stays nil.
func heapFailure(pid int, err error, file string) error {
	var ae *attach.AgentError
	if err == nil || !errors.As(err, &ae) {
		return err
	}
	prefix := fmt.Sprintf("jvmti: heap-sampling agent in process %d", pid)
	switch code := ae.ReturnCode; {
	case code == rcOptions:
		return fmt.Errorf("%s: invalid options: %w", prefix, ae)
	case code == rcNoJVMTI:
		return fmt.Errorf("%s: the JVM offers no JVMTI 11 environment (heap sampling needs JDK 11 or later): %w", prefix, ae)
	case code == rcNoMem:
		return fmt.Errorf("%s: out of memory in the JVM: %w", prefix, ae)
	case code == rcState:
		return fmt.Errorf("%s: %w (or none to stop): %w", prefix, ErrBusy, ae)
	case code >= 1000 && code < 3000:
		op := [...]string{"JVMTI AddCapabilities (can_generate_sampled_object_alloc_events)", "JVMTI event set-up"}[code/1000-1]
		return fmt.Errorf("%s: %s: %s: %w", prefix, op, ErrorName(code%1000), ae)
	case code >= 4000 && code < 6000:
		op := [...]string{"create", "write"}[code/1000-4]
		return fmt.Errorf("%s: %s %s: %w: %w", prefix, op, file, unix.Errno(code%1000), ae)
	}
	return fmt.Errorf("%s: %w", prefix, ae)
}
