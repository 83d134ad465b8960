package attach

import (
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/internal/procfs"
)

// Resolve inspects a live process. It fails with ErrProcessGone for a pid that does not exist and
// ErrPermission when the caller may not inspect it.
func Resolve(pid int) (*Target, error) {
	return resolve(procfs.Default, pid)
}

func resolve(pfs procfs.FS, pid int) (*Target, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("%w: invalid pid %d", ErrProcessGone, pid)
	}
	st, err := pfs.Status(pid)
	if err != nil {
		return nil, procErr(pid, err)
	}
	if st.Dead() {
		if err := pfs.GoneErr(pid); err != nil { // how it ended, while it is a zombie
			return nil, err
		}
		return nil, fmt.Errorf("%w: process %d has exited (%s)", ErrProcessGone, pid, st.StateName())
	}
	if st.TGID != pid {
		// /proc/<tid> of a thread also resolves; attach needs the process.
		return nil, fmt.Errorf("%w: %d is a thread of process %d", ErrProcessGone, pid, st.TGID)
	}
	return &Target{
		PID:    pid,
		NSPID:  st.NSPID(),
		UID:    st.EUID(),
		GID:    st.EGID(),
		Root:   pfs.Path(pid, "root"),
		Cwd:    pfs.Path(pid, "cwd"),
		Status: st,
	}, nil
}

func (t *Target) triggerName() string { return ".attach_pid" + strconv.Itoa(t.NSPID) }

// current reads the process's status now, leaving the Target as it is (it may be shared); an exited
// process is ErrProcessGone.
func (t *Target) current() (procfs.Status, error) {
	st, err := procfs.Default.Status(t.PID)
	if err != nil {
		return st, procErr(t.PID, err)
	}
	if st.Dead() {
		return st, fmt.Errorf("%w: process %d exited while attaching", ErrProcessGone, t.PID)
	}
	return st, nil
}

// checkJVM tells HotSpot JVMs from everything else by the libraries mapped into the process.
func (t *Target) checkJVM() error {
	found, err := procfs.Default.MapsContain(t.PID, "/libjvm.so", "/libj9vm29.so", "/libopenj9.so")
	if err != nil {
		return procErr(t.PID, err)
	}
	switch {
	case found[0]:
		return nil
	case found[1], found[2]:
		return fmt.Errorf("%w: process %d is an OpenJ9 JVM; it uses a different attach mechanism (use OpenJ9's own jcmd)", ErrNotHotSpot, t.PID)
	}
	if err := procfs.Default.GoneErr(t.PID); err != nil { // a zombie's maps read empty
		return err
	}
	return fmt.Errorf("%w: process %d (%s) has no libjvm.so mapped", ErrNotJVM, t.PID, t.Status.Name)
}

func procErr(pid int, err error) error { return procfs.Wrap(pid, "status", err) }

// Container reports whether the target lives in another pid or mount namespace than the caller, so
// that paths it uses mean something else from here.
func (t *Target) Container() bool {
	if t.NSPID != t.PID {
		return true
	}
	var self, other unix.Stat_t
	if unix.Stat("/proc/self/ns/mnt", &self) != nil || unix.Stat(procfs.Default.Path(t.PID, "ns", "mnt"), &other) != nil {
		return false
	}
	return self.Ino != other.Ino || self.Dev != other.Dev
}
