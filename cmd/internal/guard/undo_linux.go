package guard

import (
	"context"
	"errors"
	"fmt"

	"github.com/jvmkit/jvmkit/internal/procerr"
	"github.com/jvmkit/jvmkit/vmstructs"
)

// undoer undoes changes in one JVM. It opens what undoing needs once, so that a guardian that opened it
// in advance undoes a change within milliseconds of its command's death.
type undoer struct {
	jvm Process
	j   *vmstructs.JVM
	w   *vmstructs.ProcessMemoryWriter
}

// open reads the JVM's VMStructs and opens its memory for writing, then checks that the pid still
// names the JVM: the memory file stays bound to the process it was opened for, so a later pid reuse
// cannot redirect a write.
func (u *undoer) open(ctx context.Context) error {
	if u.j != nil {
		return nil
	}
	j, err := vmstructs.Open(ctx, u.jvm.PID)
	if err != nil {
		return err
	}
	w, err := vmstructs.OpenProcessMemoryWriter(u.jvm.PID)
	if err != nil {
		_ = j.Close()
		return err
	}
	if !Alive(u.jvm) {
		_ = j.Close()
		_ = w.Close()
		return fmt.Errorf("%w: %d", procerr.ErrProcessGone, u.jvm.PID)
	}
	u.j, u.w = j, w
	return nil
}

func (u *undoer) close() {
	if u.j != nil {
		_ = u.j.Close()
		_ = u.w.Close()
		u.j, u.w = nil, nil
	}
}

// undo puts c back. A JVM that is gone needs nothing undone (errors.Is(err, procerr.ErrProcessGone) is
// reported as done, with a note).
func (u *undoer) undo(ctx context.Context, c *Change) (note string, err error) {
	if err := u.open(ctx); err != nil {
		if errors.Is(err, procerr.ErrProcessGone) || !Alive(u.jvm) {
			return "the JVM is gone", nil
		}
		return "", err
	}
	switch c.Kind {
	case KindBoolFlag:
		old, _ := parseBool(c.Old) // checked by Parse and by whoever made c
		was, err := u.j.SetBoolFlag(c.Name, old, u.w)
		if err != nil {
			if !Alive(u.jvm) {
				return "the JVM is gone", nil
			}
			return "", err
		}
		if was == old {
			return fmt.Sprintf("it was %s already", c.Old), nil
		}
		return "", nil
	}
	return "", fmt.Errorf("guard: cannot undo a change of kind %q", c.Kind)
}
