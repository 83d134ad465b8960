package hotspot

import (
	"errors"
	"fmt"
	"sync"

	"github.com/jvmkit/jvmkit/attach"
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

// Switch is a set of DTrace flags turned on at run time, to be restored. Restore must run on every exit
// path of the caller: a deferred call, and on SIGINT and SIGTERM (let them cancel a context, then return
// through the deferred call). Nothing restores the flags if the caller is killed with SIGKILL.
type Switch struct {
	j       *vmstructs.JVM
	w       vmstructs.Writer
	mu      sync.Mutex
	changed []string
}

// SwitchOn sets each named bool flag to true in the live JVM j through w, and remembers those it changed
// (a flag already true is left alone, and not restored). If a flag cannot be set, the ones set before it
// are restored and the error is returned.
//
// The semantics differ by JDK and by how the code was compiled: see the package documentation. In short,
// interpreted code and the runtime's slow paths see the change at once, compiled code only once it is
// compiled again, and on JDK 21+ code compiled while the flag was on keeps calling the probe after it is
// restored.
func SwitchOn(j *vmstructs.JVM, w vmstructs.Writer, names ...string) (*Switch, error) {
	s := &Switch{j: j, w: w}
	for _, name := range names {
		old, err := j.SetBoolFlag(name, true, w)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("hotspot: switch on %s: %w", name, err), s.Restore())
		}
		if !old {
			s.changed = append(s.changed, name)
		}
	}
	return s, nil
}

// Changed returns the flags SwitchOn turned on and Restore has not restored yet.
func (s *Switch) Changed() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.changed...)
}

// Restore sets the flags SwitchOn changed back to false. It may be called more than once and from more
// than one goroutine; the first call does the work. A JVM that is gone needs nothing restored.
func (s *Switch) Restore() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	var left []string
	for _, name := range s.changed {
		if _, err := s.j.SetBoolFlag(name, false, s.w); err != nil {
			if errors.Is(err, attach.ErrProcessGone) || errors.Is(err, vmstructs.ErrFault) && !processAlive(s.j.PID) {
				continue
			}
			errs = append(errs, fmt.Errorf("hotspot: restore %s to false: %w", name, err))
			left = append(left, name)
		}
	}
	s.changed = left
	return errors.Join(errs...)
}
