package jvmti

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/attach"
	"github.com/jvmkit/jvmkit/internal/rootfs"
)

// heapDirPrefix names the private directories HeapSample makes in the JVM's /tmp, followed by the JVM's
// pid in its own namespace (JVMs may share a /tmp; every observer of a JVM sees that pid alike).
const heapDirPrefix = ".jvmkit-heapsample-"

func (s *Session) heapDirs() string { return heapDirPrefix + strconv.Itoa(s.t.NSPID) + "-" }

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
//
// HotSpot's sampler is one per JVM, shared by every JVMTI agent: turning it off at the end also ends the
// heap sampling of another agent that used it meanwhile (async-profiler's alloc mode), and the interval
// set is not the one before (JVMTI cannot read it back).
func HeapSample(ctx context.Context, pid int, opts HeapSampleOptions) (*HeapProfile, error) {
	opts.defaults()
	if opts.Interval > math.MaxInt32 {
		return nil, fmt.Errorf("jvmti: heap-sampling interval %d bytes: at most %d", opts.Interval, math.MaxInt32)
	}
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
	dir, dfd, err := s.PrivateDir(s.heapDirs())
	if err != nil {
		return nil, err
	}
	defer s.RemovePrivateDir(dir, dfd)
	file := "/tmp/" + dir + "/samples"
	deadline := time.Now().Add(opts.Duration + time.Minute)
	start := "start,interval=" + strconv.Itoa(opts.Interval) + ",deadline=" + strconv.FormatInt(deadline.Unix()+1, 10) +
		",max=" + strconv.FormatInt(opts.MaxBytes, 10) + ",file=" + file
	stop := "stop,file=" + file
	// Stops go out even when ctx is done: the JVM must not keep sampling.
	stopCtx := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	}
	p := &HeapProfile{Interval: opts.Interval, Start: time.Now()}
	err = s.Load(ctx, libPath, start)
	if hasCode(err, rcState) && !s.othersLive(dir) {
		// A session runs that no live jvmkit holds (its directory's lock was free, and PrivateDir removed
		// it): its jvmkit was killed. It would end at its deadline; it ends now. Whatever that stop says
		// (a write error of the orphan's file) is the orphan's, not ours.
		s.debug("stopping an orphaned heap-sampling session")
		if err := s.Load(ctx, libPath, "stop"); err != nil {
			s.debug("orphan's stop", "err", err)
		}
		p.Start = time.Now()
		err = s.Load(ctx, libPath, start)
	}
	var ae *attach.AgentError
	if err != nil && !errors.As(err, &ae) {
		// The start may have reached the JVM before the connection failed or ctx was cancelled: stop it.
		sctx, cancel := stopCtx()
		_ = s.Load(sctx, libPath, stop)
		cancel()
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
	sctx, cancel := stopCtx()
	defer cancel()
	err = s.Load(sctx, libPath, stop)
	if err != nil && !errors.As(err, &ae) {
		err = s.Load(sctx, libPath, stop) // once more after a failed connection
	}
	if hasCode(err, rcEnded) || hasCode(err, rcState) {
		// Ended by itself (deadline, size), or by the next session as an orphan: its file is complete.
		p.EndedEarly, err = true, nil
	}
	if err := heapFailure(pid, err, file); err != nil {
		return nil, err
	}
	f, err := s.openSamples(dfd, dir, opts.MaxBytes)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := rootfs.ReadRegular(f, f.Name(), opts.MaxBytes)
	if err == nil {
		err = p.parse(data)
	}
	if err != nil {
		return nil, fmt.Errorf("jvmti: heap samples of process %d (%s): %w", pid, f.Name(), err)
	}
	return p, nil
}

// openSamples opens the agent's file in the private directory: the directory is the JVM user's, so that
// user could have put anything at the name. Only a regular file of the JVM's user with one link and no
// more than limit bytes is read; a FIFO does not block the open.
func (s *Session) openSamples(dfd int, dir string, limit int64) (*os.File, error) {
	name := s.HostPath(dir + "/samples")
	fd, err := unix.Openat(dfd, "samples", unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("jvmti: heap samples of process %d (%s): %w", s.t.PID, name, err)
	}
	f := os.NewFile(uintptr(fd), name)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		f.Close()
		return nil, fmt.Errorf("jvmti: heap samples of process %d (%s): %w", s.t.PID, name, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || int(st.Uid) != s.t.UID || st.Nlink != 1 || st.Size > limit {
		f.Close()
		return nil, fmt.Errorf("jvmti: heap samples of process %d (%s): %w: not the agent's file (a regular file of uid %d with one link, at most %d bytes)",
			s.t.PID, name, rootfs.ErrUnsafe, s.t.UID, limit)
	}
	return f, nil
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

// othersLive reports whether the JVM's /tmp holds heap-sampling directories of this JVM besides ours:
// those of sessions whose jvmkit runs (PrivateDir removed the others).
func (s *Session) othersLive(ours string) bool {
	names, err := rootfs.ReadDirNames(s.tmp)
	if err != nil {
		return true // cannot tell: leave it
	}
	prefix := s.heapDirs()
	for _, n := range names {
		if n == ours || !strings.HasPrefix(n, prefix) {
			continue
		}
		dfd, err := unix.Openat(s.tmp, n, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		var st unix.Stat_t
		// A session's directory belongs to the JVM's user and is locked while the session runs: anyone
		// else's directory of the name, or one whose lock is free, holds no session.
		live := unix.Fstat(dfd, &st) == nil && int(st.Uid) == s.t.UID && unix.Flock(dfd, unix.LOCK_SH|unix.LOCK_NB) != nil
		unix.Close(dfd)
		if live {
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
