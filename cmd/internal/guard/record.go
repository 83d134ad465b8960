package guard

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Schema names the record format.
const Schema = "jvmkit.changes/v1"

// Process identifies a process across pid reuse: its pid and its start time (/proc/<pid>/stat field 22,
// clock ticks since boot). Records live in /run, which a reboot empties, so the pair is unique.
type Process struct {
	PID   int    `json:"pid"`
	Start uint64 `json:"start"`
}

func (p Process) String() string { return strconv.Itoa(p.PID) }

// Holder is a command that relies on a change and restores it when it ends; its guardian restores it
// if the command dies first.
type Holder struct {
	Process
	By       string `json:"by"`                 // "jvmkit alloc --switch-flags"
	Guardian int    `json:"guardian,omitempty"` // the guardian's pid, once it runs
}

// Change is one thing changed in a JVM and not yet undone.
type Change struct {
	// Kind says what was changed and so how to undo it: KindBoolFlag.
	Kind string    `json:"kind"`
	Name string    `json:"name"`
	Old  string    `json:"old"` // the value before the first holder changed it: what undoing writes back
	New  string    `json:"new"`
	By   string    `json:"by"` // the first holder's command
	At   time.Time `json:"at"`
	// Holders are the commands that rely on the change now. The change is undone when the last one
	// releases it or dies; a change without holders was left behind (both a command and its guardian
	// were killed) and is undone by the next command that looks (jvmkit alloc --restore, alloc).
	Holders []Holder `json:"holders"`
}

// Entry is one event of a JVM's history of changes, for jvmkit flags to say what jvmkit did.
type Entry struct {
	At   time.Time `json:"at"`
	What string    `json:"what"` // "set", "restored", "left" (could not be undone), "kept" (flags --set)
	Kind string    `json:"kind"`
	Name string    `json:"name"`
	Old  string    `json:"old,omitempty"`
	New  string    `json:"new,omitempty"`
	By   string    `json:"by"`            // the command, or "guardian of pid N", "jvmkit alloc --restore"
	PID  int       `json:"pid,omitempty"` // the command's pid
	Note string    `json:"note,omitempty"`
}

// Record is everything jvmkit changed in one JVM: the changes in force and the history.
type Record struct {
	Schema  string   `json:"schema"`
	JVM     Process  `json:"jvm"`
	Changes []Change `json:"changes"`
	Log     []Entry  `json:"log,omitempty"`
}

// KindBoolFlag is a bool -XX flag written in the JVM's memory (vmstructs.SetBoolFlag); Old and New are
// "true" or "false".
const KindBoolFlag = "bool-flag"

// maxLog bounds a record's history: the newest entries are kept.
const maxLog = 64

// maxRecord bounds the bytes read from a record file.
const maxRecord = 1 << 20

// ErrCorrupt is wrapped by Parse's errors.
var ErrCorrupt = errors.New("guard: corrupt record")

// Parse decodes a record and checks it: the schema, the JVM's identity (want, unless zero), and every
// change's kind and values. It never panics.
func Parse(b []byte, want Process) (*Record, error) {
	if len(b) > maxRecord {
		return nil, fmt.Errorf("%w: %d bytes", ErrCorrupt, len(b))
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if r.Schema != Schema {
		return nil, fmt.Errorf("%w: schema %q, want %q", ErrCorrupt, r.Schema, Schema)
	}
	if r.JVM.PID <= 0 || want != (Process{}) && r.JVM != want {
		return nil, fmt.Errorf("%w: it is for process %d (start %d), not %d (start %d)", ErrCorrupt, r.JVM.PID, r.JVM.Start, want.PID, want.Start)
	}
	for _, c := range r.Changes {
		if err := c.check(); err != nil {
			return nil, err
		}
	}
	return &r, nil
}

func (c *Change) check() error {
	switch c.Kind {
	case KindBoolFlag:
		if _, err := parseBool(c.Old); err != nil {
			return fmt.Errorf("%w: %s %s: old %w", ErrCorrupt, c.Kind, c.Name, err)
		}
		if _, err := parseBool(c.New); err != nil {
			return fmt.Errorf("%w: %s %s: new %w", ErrCorrupt, c.Kind, c.Name, err)
		}
		if c.Name == "" || strings.ContainsAny(c.Name, " \t\n=") {
			return fmt.Errorf("%w: flag name %q", ErrCorrupt, c.Name)
		}
	default:
		return fmt.Errorf("%w: unknown kind %q (a newer jvmkit wrote it?)", ErrCorrupt, c.Kind)
	}
	for _, h := range c.Holders {
		if h.PID <= 0 {
			return fmt.Errorf("%w: %s %s: holder pid %d", ErrCorrupt, c.Kind, c.Name, h.PID)
		}
	}
	return nil
}

func parseBool(s string) (bool, error) {
	switch s {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("%q is not true or false", s)
}

// Marshal encodes a record.
func (r *Record) Marshal() ([]byte, error) {
	r.Schema = Schema
	if r.Changes == nil {
		r.Changes = []Change{}
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Find returns the change of kind and name, or nil.
func (r *Record) Find(kind, name string) *Change {
	for i := range r.Changes {
		if r.Changes[i].Kind == kind && r.Changes[i].Name == name {
			return &r.Changes[i]
		}
	}
	return nil
}

func (r *Record) remove(c *Change) {
	for i := range r.Changes {
		if &r.Changes[i] == c {
			r.Changes = append(r.Changes[:i], r.Changes[i+1:]...)
			return
		}
	}
}

func (r *Record) log(e Entry) {
	r.Log = append(r.Log, e)
	if len(r.Log) > maxLog {
		r.Log = append(r.Log[:0], r.Log[len(r.Log)-maxLog:]...)
	}
}

// Last returns the newest entry of the history about kind and name, or nil.
func (r *Record) Last(kind, name string) *Entry {
	for i := len(r.Log) - 1; i >= 0; i-- {
		if r.Log[i].Kind == kind && r.Log[i].Name == name {
			return &r.Log[i]
		}
	}
	return nil
}

func (c *Change) dropHolder(p Process) bool {
	for i, h := range c.Holders {
		if h.Process == p {
			c.Holders = append(c.Holders[:i], c.Holders[i+1:]...)
			return true
		}
	}
	return false
}

// fileName is a record's file name in the store: <pid>-<start>.json.
func fileName(p Process) string { return fmt.Sprintf("%d-%d.json", p.PID, p.Start) }

// parseFileName is fileName's inverse; ok is false for any other name.
func parseFileName(name string) (p Process, ok bool) {
	base, found := strings.CutSuffix(name, ".json")
	if !found {
		return Process{}, false
	}
	a, b, found := strings.Cut(base, "-")
	if !found {
		return Process{}, false
	}
	pid, err1 := strconv.Atoi(a)
	start, err2 := strconv.ParseUint(b, 10, 64)
	if err1 != nil || err2 != nil || pid <= 0 || fileName(Process{pid, start}) != name {
		return Process{}, false
	}
	return Process{PID: pid, Start: start}, true
}

// Holders names a change's holders for messages: "jvmkit alloc --switch-flags (pid 12)".
func Holders(c *Change) string {
	if len(c.Holders) == 0 {
		return "nobody (left behind)"
	}
	parts := make([]string, len(c.Holders))
	for i, h := range c.Holders {
		parts[i] = fmt.Sprintf("%s (pid %d)", h.By, h.PID)
	}
	return strings.Join(parts, ", ")
}
