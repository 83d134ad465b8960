package hotspot

import (
	"errors"
	"fmt"
	"sync"

	"github.com/jvmkit/jvmkit/internal/procfs"
	"github.com/jvmkit/jvmkit/vmstructs"
)

// FlagState is one DTrace flag of a JVM.
type FlagState struct {
	Name    string `json:"name"`
	Present bool   `json:"present"` // false: the JDK has no such flag (ExtendedDTraceProbes on 20+)
	Value   bool   `json:"value"`
	Origin  string `json:"origin,omitempty"` // as VM.flags prints it: "default", "command line", ...
	Addr    uint64 `json:"addr,omitempty"`
}

// DTraceFlags are the flags that gate probes, in the order ReadFlags returns them.
var DTraceFlags = []string{AllocProbes, MethodProbes, MonitorProbes, ExtendedProbes}

// ReadFlags reads the DTrace flags from the JVM's flag table (vmstructs: JVMFlag::flags, so stripped
// builds work as long as they export gHotSpotVMStructs).
func ReadFlags(j *vmstructs.JVM) ([]FlagState, error) {
	out := make([]FlagState, 0, len(DTraceFlags))
	for _, name := range DTraceFlags {
		f, err := j.Flag(name)
		switch {
		case errors.Is(err, vmstructs.ErrNoSuchFlag):
			out = append(out, FlagState{Name: name})
			continue
		case err != nil:
			return nil, fmt.Errorf("hotspot: read flag %s: %w", name, err)
		case f.Bool == nil:
			return nil, fmt.Errorf("hotspot: flag %s is %s, not bool", name, f.Type)
		}
		out = append(out, FlagState{Name: name, Present: true, Value: *f.Bool, Origin: f.Origin, Addr: f.Addr})
	}
	return out, nil
}

// FlagOn tells whether the named flag is present and true in states.
func FlagOn(states []FlagState, name string) bool {
	for _, s := range states {
		if s.Name == name {
			return s.Present && s.Value
		}
	}
	return false
}

// Keeper is told of each flag change before it is made and asked before it is undone, so that something
// that outlives the caller can undo it if the caller is killed (jvmkit's guardian, cmd/internal/guard), and
// so that concurrent callers share one change.
type Keeper interface {
	// KeepFlag is called before bool flag name, now cur, is set to want. It returns whether the caller
	// must release it: false when the flag is want already and nobody recorded changing it.
	KeepFlag(name string, cur, want bool) (bool, error)
	// ReleaseFlag is called to undo a kept change: it calls restore with the value to write back if no
	// other caller still needs the flag.
	ReleaseFlag(name string, restore func(old bool) error) error
}

// Switch is a set of DTrace flags turned on at run time, to be restored. Restore must run on every exit
// path of the caller: a deferred call, and on SIGINT and SIGTERM (let them cancel a context, then return
// through the deferred call). Without a Keeper nothing restores the flags if the caller is killed with
// SIGKILL.
type Switch struct {
	j       *vmstructs.JVM
	w       vmstructs.Writer
	k       Keeper
	mu      sync.Mutex
	changed []string
	off     []string // set back to false by Restore
	kept    []string // left as another change holds them
}

// SwitchOn sets each named bool flag to true in the live JVM j through w, and remembers those it changed
// (a flag already true is left alone, and not restored). If a flag cannot be set, the ones set before it
// are restored and the error is returned.
//
// The semantics differ by JDK and by how the code was compiled: see the package documentation. In short,
// interpreted code and the runtime's slow paths see the change at once, compiled code only once it is
// compiled again, and code compiled while the flag was on may keep calling the probe after it is
// restored.
func SwitchOn(j *vmstructs.JVM, w vmstructs.Writer, names ...string) (*Switch, error) {
	return SwitchOnKept(j, w, nil, names...)
}

// SwitchOnKept is SwitchOn with a Keeper (nil: none) told of each change before it is made. A flag that
// is already true is restored too when the Keeper says a live caller switched it on (the flag is then
// restored when the last of them ends).
func SwitchOnKept(j *vmstructs.JVM, w vmstructs.Writer, k Keeper, names ...string) (*Switch, error) {
	s := &Switch{j: j, w: w, k: k}
	for _, name := range names {
		if err := s.on(name); err != nil {
			return nil, errors.Join(fmt.Errorf("hotspot: switch on %s: %w", name, err), s.Restore())
		}
	}
	return s, nil
}

func (s *Switch) on(name string) error {
	f, err := s.j.Flag(name)
	if err != nil {
		return err
	}
	if f.Bool == nil {
		return fmt.Errorf("%w: it is %s, not bool", vmstructs.ErrFlagNotWritable, f.Type)
	}
	cur := *f.Bool
	mine := !cur
	if s.k != nil {
		if mine, err = s.k.KeepFlag(name, cur, true); err != nil {
			return err
		}
		if mine {
			// Kept before written: from here on the Keeper restores it if we die.
			s.changed = append(s.changed, name)
		}
	}
	if !cur {
		if _, err := s.j.SetBoolFlag(name, true, s.w); err != nil {
			return err
		}
	}
	if s.k == nil && mine {
		s.changed = append(s.changed, name)
	}
	return nil
}

// Changed returns the flags SwitchOn turned on and Restore has not restored yet.
func (s *Switch) Changed() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.changed...)
}

// Restore sets the flags SwitchOn changed back to false (with a Keeper: releases them, and restores
// those no other caller needs to the value the Keeper recorded). It may be called more than once and
// from more than one goroutine; the first call does the work. A JVM that is gone needs nothing restored.
func (s *Switch) Restore() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	var left []string
	for _, name := range s.changed {
		var err error
		wrote, to := s.k == nil, false
		if s.k != nil {
			err = s.k.ReleaseFlag(name, func(old bool) error { wrote, to = true, old; return s.set(name, old) })
		} else {
			err = s.set(name, false)
		}
		switch {
		case err != nil:
			errs = append(errs, err)
			left = append(left, name)
		case wrote && !to:
			s.off = append(s.off, name)
		default:
			s.kept = append(s.kept, name)
		}
	}
	s.changed = left
	return errors.Join(errs...)
}

// Restored returns what Restore did: the flags it set back to false, and those it left on because
// another change holds them (another jvmkit command, or 'jvmkit flags --set' since the switch).
func (s *Switch) Restored() (off, kept []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.off...), append([]string(nil), s.kept...)
}

// set writes flag name back to v; a JVM that is gone is not an error.
func (s *Switch) set(name string, v bool) error {
	if _, err := s.j.SetBoolFlag(name, v, s.w); err != nil {
		if errors.Is(err, vmstructs.ErrProcessGone) || errors.Is(err, vmstructs.ErrFault) && !procfs.Default.Alive(s.j.PID) {
			return nil
		}
		return fmt.Errorf("hotspot: restore %s to %t: %w", name, v, err)
	}
	return nil
}
