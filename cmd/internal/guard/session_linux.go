package guard

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"
)

// Session is one command's guarded changes to one JVM. Begin starts its guardian; KeepFlag records a
// change before the command makes it; ReleaseFlag undoes it when the command is the last to need it;
// Close lets the guardian go.
type Session struct {
	store *Store
	jvm   Process
	self  Holder
	g     *guardian

	mu   sync.Mutex
	held map[string]bool // kind + "\x00" + name
}

// Begin prepares command by (its name for the record, "jvmkit alloc --switch-flags") to change JVM pid:
// it identifies both processes and starts the guardian, which is watching both and ready to undo when
// Begin returns. Nothing is recorded yet.
func Begin(ctx context.Context, store *Store, pid int, by string) (*Session, error) {
	jvm, err := Identify(pid)
	if err != nil {
		return nil, err
	}
	self, err := Self()
	if err != nil {
		return nil, err
	}
	s := &Session{store: store, jvm: jvm, self: Holder{Process: self, By: by}, held: make(map[string]bool)}
	// Left-behind changes are undone first (the record may be older than any of our own changes).
	if _, _, err := s.restoreLeft(ctx, "next run ("+by+")"); err != nil {
		return nil, err
	}
	if s.g, err = startGuardian(store.dir, jvm, self); err != nil {
		return nil, err
	}
	s.self.Guardian = s.g.pid()
	return s, nil
}

// JVM returns the JVM's identity.
func (s *Session) JVM() Process { return s.jvm }

// Guardian returns the guardian's pid.
func (s *Session) Guardian() int { return s.g.pid() }

// KeepFlag records, before the caller writes it, that bool flag name (now cur) is to be want while the
// caller runs. It returns whether the caller must release it: true when it records a change, or joins
// one another live jvmkit holds (the flag is then want already, and is undone when the last holder
// releases it); false when the flag is want and jvmkit did not change it (nothing to undo).
func (s *Session) KeepFlag(name string, cur, want bool) (bool, error) {
	var mine bool
	err := s.store.Update(context.Background(), s.jvm, func(r *Record) error {
		if c := r.Find(KindBoolFlag, name); c != nil {
			if c.New != strconv.FormatBool(want) {
				return fmt.Errorf("guard: %s is held at %s by %s: not switching it to %t", name, c.New, Holders(c), want)
			}
			c.Holders = append(c.Holders, s.self)
			mine = true
			return nil
		}
		if cur == want {
			return nil
		}
		now := time.Now().UTC()
		r.Changes = append(r.Changes, Change{Kind: KindBoolFlag, Name: name, Old: strconv.FormatBool(cur),
			New: strconv.FormatBool(want), By: s.self.By, At: now, Holders: []Holder{s.self}})
		r.log(Entry{At: now, What: "set", Kind: KindBoolFlag, Name: name, Old: strconv.FormatBool(cur),
			New: strconv.FormatBool(want), By: s.self.By, PID: s.self.PID})
		mine = true
		return nil
	})
	if err != nil || !mine {
		return false, err
	}
	s.mu.Lock()
	s.held[KindBoolFlag+"\x00"+name] = true
	s.mu.Unlock()
	return true, nil
}

// ReleaseFlag gives up the caller's hold on flag name. If no other live command holds it, restore is
// called, under the store's lock, with the value to write back (the value before the first holder
// changed it); the change is forgotten only once restore succeeded. A failed restore stays recorded with
// the caller as holder: the guardian tries again when the caller is gone.
func (s *Session) ReleaseFlag(name string, restore func(old bool) error) error {
	err := s.store.Update(context.Background(), s.jvm, func(r *Record) error {
		c := r.Find(KindBoolFlag, name)
		if c == nil {
			return nil // undone already (jvmkit alloc --restore by hand)
		}
		c.dropHolder(s.self.Process)
		c.dropDead()
		if len(c.Holders) > 0 {
			return nil
		}
		old, _ := parseBool(c.Old)
		if err := restore(old); err != nil {
			return err
		}
		r.log(Entry{At: time.Now().UTC(), What: "restored", Kind: c.Kind, Name: c.Name, Old: c.New, New: c.Old,
			By: s.self.By, PID: s.self.PID})
		r.remove(c)
		return nil
	})
	if err != nil {
		return err
	}
	s.mu.Lock()
	delete(s.held, KindBoolFlag+"\x00"+name)
	s.mu.Unlock()
	return nil
}

// Close ends the session. If everything kept was released, the guardian is told so and exits; otherwise
// it stays until this process is gone and then undoes what it still holds.
func (s *Session) Close() error {
	if s == nil || s.g == nil {
		return nil
	}
	s.mu.Lock()
	n := len(s.held)
	s.mu.Unlock()
	if n == 0 {
		s.g.done()
	} else {
		s.g.release()
	}
	s.g = nil
	return nil
}

// restoreLeft undoes the changes no live command holds.
func (s *Session) restoreLeft(ctx context.Context, by string) (restored, held []Change, err error) {
	return RestoreLeft(ctx, s.store, s.jvm.PID, by)
}

// RestoreLeft undoes the changes to JVM pid that no live jvmkit holds (left behind when a command and its
// guardian were both killed). It returns the changes it undid and those still held by a running command
// (undone when it ends).
func RestoreLeft(ctx context.Context, store *Store, pid int, by string) (restored, held []Change, err error) {
	jvm, err := Identify(pid)
	if err != nil {
		return nil, nil, err
	}
	r, err := store.Read(jvm)
	if err != nil {
		return nil, nil, err
	}
	if len(r.Changes) == 0 {
		return nil, nil, nil
	}
	u := &undoer{jvm: jvm}
	defer u.close()
	err = store.Update(ctx, jvm, func(r *Record) error {
		restored = undoUnheld(ctx, r, u, by, "")
		held = append([]Change(nil), r.Changes...)
		return nil
	})
	var left []error
	for _, c := range held {
		if len(c.Holders) == 0 {
			left = append(left, fmt.Errorf("guard: could not restore %s %s in process %d: see jvmkit flags %d", c.Name, c.Old, pid, pid))
		}
	}
	return restored, held, errors.Join(append([]error{err}, left...)...)
}

// Read returns the record of JVM pid (empty if jvmkit changed nothing in it).
func Read(store *Store, pid int) (*Record, error) {
	jvm, err := Identify(pid)
	if err != nil {
		return nil, err
	}
	return store.Read(jvm)
}

// NoteSet records that command by set bool flag name of JVM pid from old to new on purpose (jvmkit flags
// --set): the value is kept, so a change of that flag in force is forgotten (nobody restores it over the
// user's choice) and the history says who set it.
func NoteSet(ctx context.Context, store *Store, pid int, name string, old, new bool, by string) error {
	jvm, err := Identify(pid)
	if err != nil {
		return err
	}
	return store.Update(ctx, jvm, func(r *Record) error {
		e := Entry{At: time.Now().UTC(), What: "kept", Kind: KindBoolFlag, Name: name, Old: strconv.FormatBool(old),
			New: strconv.FormatBool(new), By: by, PID: os.Getpid()}
		if c := r.Find(KindBoolFlag, name); c != nil {
			e.Note = fmt.Sprintf("replaces the change of %s, which is no longer restored", Holders(c))
			r.remove(c)
		}
		r.log(e)
		return nil
	})
}
