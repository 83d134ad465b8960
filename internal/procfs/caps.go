package procfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"
)

// Capability is a Linux capability by its number (capabilities(7)).
type Capability uint

// The capabilities jvmkit's tools need (docs/deploy.md's table), and their alternatives.
const (
	CapChown             Capability = 0
	CapDacOverride       Capability = 1
	CapDacReadSearch     Capability = 2
	CapFowner            Capability = 3
	CapKill              Capability = 5
	CapSysPtrace         Capability = 19
	CapSysAdmin          Capability = 21
	CapPerfmon           Capability = 38
	CapBPF               Capability = 39
	CapCheckpointRestore Capability = 40
)

// capName is a capability's name without CAP_ (a switch, not a map: gjcmd links this package and
// should not build a map at every start).
func capName(c Capability) (string, bool) {
	switch c {
	case CapChown:
		return "CHOWN", true
	case CapDacOverride:
		return "DAC_OVERRIDE", true
	case CapDacReadSearch:
		return "DAC_READ_SEARCH", true
	case CapFowner:
		return "FOWNER", true
	case CapKill:
		return "KILL", true
	case CapSysPtrace:
		return "SYS_PTRACE", true
	case CapSysAdmin:
		return "SYS_ADMIN", true
	case CapPerfmon:
		return "PERFMON", true
	case CapBPF:
		return "BPF", true
	case CapCheckpointRestore:
		return "CHECKPOINT_RESTORE", true
	}
	return "", false
}

// Name is the capability's name without its CAP_ prefix, as --cap-add takes it ("SYS_PTRACE").
func (c Capability) Name() string {
	if n, ok := capName(c); ok {
		return n
	}
	return fmt.Sprintf("%d", uint(c))
}

func (c Capability) String() string { return "CAP_" + c.Name() }

// RootWithout says what keeps this process from an operation that needs all of caps, when it runs as
// root without some of them in its effective set: "this process runs as root without CAP_SYS_PTRACE (a
// container's root lacks it unless added: --cap-add SYS_PTRACE, or a pod's
// securityContext.capabilities.add)". It is "" when this process is not root, has them all, or its
// capabilities cannot be read (another OS): the caller's own explanation then stands.
func RootWithout(caps ...Capability) string {
	eff, ok := rootCaps()
	if !ok {
		return ""
	}
	var missing []Capability
	for _, c := range caps {
		if eff&(1<<c) == 0 {
			missing = append(missing, c)
		}
	}
	return describeMissing(missing, " and ")
}

// RootWithoutAny is RootWithout for an operation that any one of caps allows (CAP_PERFMON or
// CAP_SYS_ADMIN): "" when this process holds one of them.
func RootWithoutAny(caps ...Capability) string {
	eff, ok := rootCaps()
	if !ok || slices.ContainsFunc(caps, func(c Capability) bool { return eff&(1<<c) != 0 }) {
		return ""
	}
	return describeMissing(caps, " or ")
}

// Remedy ends the message of an operation on a process that was refused and needs all of caps as
// root: what this process lacks as root (RootWithout); or, as root with them all, that something
// beyond permissions refused it; or, not as root, to run as root or as owner ("the JVM's user (uid
// 1000)").
func Remedy(owner string, caps ...Capability) string {
	switch {
	case os.Geteuid() != 0:
		return "run as root or as " + owner
	case RootWithout(caps...) != "":
		return RootWithout(caps...)
	case slices.Contains(caps, CapSysPtrace):
		return "refused even to root (a user namespace of its own, a security module or kernel.yama.ptrace_scope keeps it from this process)"
	}
	return "refused even to root (a user namespace of its own or a security module keeps it from this process)"
}

// describeMissing is RootWithout's sentence for the capabilities missing, joined by conj (" and ",
// " or ").
func describeMissing(missing []Capability, conj string) string {
	if len(missing) == 0 {
		return ""
	}
	full := make([]string, len(missing))
	short := make([]string, len(missing))
	for i, c := range missing {
		full[i], short[i] = c.String(), c.Name()
	}
	it := "it"
	if len(missing) > 1 && conj == " and " {
		it = "them"
	}
	return fmt.Sprintf("this process runs as root without %s (a container's root lacks %s unless added: --cap-add %s, or a pod's securityContext.capabilities.add)",
		strings.Join(full, conj), it, strings.Join(short, conj+"--cap-add "))
}

// rootCaps is this process's effective capability set when it runs as root and the set can be read.
func rootCaps() (uint64, bool) {
	if os.Geteuid() != 0 {
		return 0, false
	}
	return selfCaps()
}

// selfCaps reads this process's effective capability set, once: jvmkit's tools do not change theirs.
func selfCaps() (uint64, bool) {
	self.once.Do(func() {
		s, err := Default.Status(os.Getpid())
		if err == nil && s.HasCapEff {
			self.caps, self.ok = s.CapEff, true
		}
	})
	return self.caps, self.ok
}

// self is selfCaps' answer (a zero value: nothing to run at start-up, where sync.OnceValues would be).
var self struct {
	once sync.Once
	caps uint64
	ok   bool
}

// Explain adds to a refusal (EPERM, EACCES) what this process lacks as root of caps, the capabilities
// the operation needs (RootWithout); other errors, and refusals it cannot explain so, are returned as
// they are.
func Explain(err error, caps ...Capability) error {
	if err == nil || !errors.Is(err, fs.ErrPermission) {
		return err
	}
	if h := RootWithout(caps...); h != "" {
		return fmt.Errorf("%w (%s)", err, h)
	}
	return err
}
