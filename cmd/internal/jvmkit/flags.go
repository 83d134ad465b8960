package jvmkit

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/jvmkit/jvmkit/cmd/internal/guard"
	"github.com/jvmkit/jvmkit/vmstructs"
)

func (a *jvmkit) flagsCmd() *cobra.Command {
	var sets []string
	var writeMemory bool
	cmd := &cobra.Command{
		Use:   "flags <pid|core> [name...]",
		Short: "Print the JVM's -XX flags (like jcmd VM.flags -all); set a bool flag with --set --write-memory",
		Long: `flags reads the JVM's flag table (JVMFlag::flags) from its memory and prints one line per flag, as
'jcmd <pid> VM.flags -all' does: type, name, value, kinds ({product}, {manageable}, {diagnostic}, ...) and
origin ({default}, {command line}, {ergonomic}, ...). Unlike jcmd it also lists the locked diagnostic and
experimental flags and the develop flags, whose values are constants in product builds. With names, only
those flags are printed.

--set Name=true|false --write-memory stores a bool flag's new value straight into the JVM's memory
(/proc/<pid>/mem), for JVMs whose attach mechanism is unavailable. Both options are required. The old and
the new value are printed; --set Name=<old value> restores it. The JVM reads its flags without
synchronisation and expects most of them never to change: flags read only at start-up keep their effect,
and changing a flag that selected a GC, a code layout or compiled code can crash the JVM. Manageable
flags are the ones meant to change at run time; prefer 'jcmd <pid> VM.set_flag' where attach works.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(sets) > 0 || writeMemory {
				return a.setFlags(cmd, args, sets, writeMemory)
			}
			return a.printFlags(cmd, args[0], args[1:])
		},
	}
	cmd.Flags().StringArrayVar(&sets, "set", nil, "set a bool flag: `Name=true|false` (repeatable; needs --write-memory)")
	cmd.Flags().BoolVar(&writeMemory, "write-memory", false, "allow --set to write into the JVM's memory")
	return cmd
}

// flagsJSON is the data of jvmkit.flags/v1.
type flagsJSON struct {
	Version string           `json:"version,omitempty"`
	Flags   []vmstructs.Flag `json:"flags"`
	// Changes are jvmkit's changes to the printed flags still in force, History what jvmkit did to them
	// (cmd/internal/guard's record of the JVM).
	Changes []guard.Change `json:"jvmkit_changes,omitempty"`
	History []guard.Entry  `json:"jvmkit_history,omitempty"`
}

func (a *jvmkit) printFlags(cmd *cobra.Command, target string, names []string) error {
	j, err := a.openTarget(cmd.Context(), target, true)
	if err != nil {
		return err
	}
	defer func() { _ = j.Close() }() // read-only: nothing to lose
	var flags []vmstructs.Flag
	var missing []string
	var readErr error // flags whose values could not be read: printed without, reported at the end
	if len(names) == 0 {
		if flags, readErr = j.Flags(); flags == nil {
			return readErr
		}
	} else {
		for _, n := range names {
			f, err := j.Flag(n)
			switch {
			case errors.Is(err, vmstructs.ErrNoSuchFlag):
				missing = append(missing, n)
				continue
			case err != nil:
				return err
			}
			flags = append(flags, f)
		}
	}
	var changes []guard.Change
	var history []guard.Entry
	if j.PID > 0 {
		changes, history = jvmkitChanges(j.PID, flags)
	}
	if a.json {
		v, _ := j.Version()
		if flags == nil {
			flags = []vmstructs.Flag{}
		}
		if err := a.printJSON("jvmkit.flags/v1", flagsJSON{Version: v, Flags: flags, Changes: changes, History: history}); err != nil {
			return err
		}
	} else {
		unknown := 0
		for _, f := range flags {
			writeFlagLine(a.stdout, f)
			if f.Kinds == nil || f.Origin == "" {
				unknown++
			}
		}
		if unknown > 0 {
			// An empty {} would read as data: say that this JDK's bit layout is not known to us.
			v, _ := j.Version()
			fmt.Fprintf(a.stderr, "jvmkit: flags: the kinds or origins of %d flags are not known for this JVM (%s): their {} are not what VM.flags prints; use jcmd <pid> VM.flags -all for them\n", unknown, v)
		}
		a.noteChanges(j.PID, changes, history)
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s", vmstructs.ErrNoSuchFlag, strings.Join(missing, ", "))
	}
	return readErr
}

// jvmkitChanges returns what jvmkit's record of JVM pid says about flags: the changes in force and the
// history. Without a record (or when it cannot be read: flags only reads) there is nothing to say.
func jvmkitChanges(pid int, flags []vmstructs.Flag) ([]guard.Change, []guard.Entry) {
	store, err := guard.OpenStoreIfExists(guard.DefaultDir)
	if err != nil || store == nil {
		return nil, nil
	}
	defer func() { _ = store.Close() }()
	rec, err := guard.Read(store, pid)
	if err != nil {
		return nil, nil
	}
	shown := make(map[string]bool, len(flags))
	for _, f := range flags {
		shown[f.Name] = true
	}
	var changes []guard.Change
	for _, c := range rec.Changes {
		if c.Kind == guard.KindBoolFlag && shown[c.Name] {
			changes = append(changes, c)
		}
	}
	var history []guard.Entry
	for _, e := range rec.Log {
		if e.Kind == guard.KindBoolFlag && shown[e.Name] {
			history = append(history, e)
		}
	}
	return changes, history
}

// noteChanges says on stderr which printed flags jvmkit changed: VM.flags shows their origin as before.
func (a *jvmkit) noteChanges(pid int, changes []guard.Change, history []guard.Entry) {
	inForce := map[string]bool{}
	for _, c := range changes {
		inForce[c.Name] = true
		state := "held by " + guard.Holders(&c) + ", which restores it when it ends"
		if !c.Held() {
			state = fmt.Sprintf("left behind (its command and guardian were killed): run jvmkit alloc --restore %d", pid)
		}
		fmt.Fprintf(a.stderr, "jvmkit: flags: %s was set %s by %s at %s, not by the JVM: %s\n", c.Name, c.New, c.By,
			c.At.Format(time.RFC3339), state)
	}
	last := map[string]guard.Entry{}
	for _, e := range history {
		last[e.Name] = e
	}
	names := make([]string, 0, len(last))
	for n := range last {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		e := last[n]
		if inForce[n] {
			continue
		}
		note := ""
		if e.Note != "" {
			note = " (" + e.Note + ")"
		}
		fmt.Fprintf(a.stderr, "jvmkit: flags: %s was last %s to %s by %s at %s%s\n", n, map[string]string{
			"restored": "restored", "kept": "set", "set": "set", "left": "left"}[e.What], e.New, e.By, e.At.Format(time.RFC3339), note)
	}
}

// writeFlagLine prints a flag the way JVMFlag::print_on does for VM.flags -all: the type right-aligned
// in columns 0-8, the name from column 10, " =" at 50, the value from 53, the kinds right-aligned in 20
// columns from 84 and the origin from 105; a column already passed gets one space instead. A
// multi-line ccstrlist continues on "+=" lines; the last one carries kinds and origin.
func writeFlagLine(w io.Writer, f vmstructs.Flag) {
	var b strings.Builder
	fill := func(pos int) {
		if b.Len() < pos {
			b.WriteString(strings.Repeat(" ", pos-b.Len()))
		} else {
			b.WriteByte(' ')
		}
	}
	lines := strings.Split(f.Value, "\n")
	for i, v := range lines {
		b.Reset()
		eq := "+="
		if i == 0 {
			fmt.Fprintf(&b, "%9s", f.Type)
			eq = " ="
		}
		fill(10)
		b.WriteString(f.Name)
		fill(50)
		b.WriteString(eq)
		fill(53)
		b.WriteString(v)
		if i == len(lines)-1 {
			fill(84)
			fmt.Fprintf(&b, "%20s", "{"+strings.Join(f.Kinds, " ")+"}")
			fill(105)
			b.WriteString("{" + f.Origin + "}")
		}
		fmt.Fprintln(w, b.String())
	}
}

// flagChange is one --set in jvmkit.flags.set/v1.
type flagChange struct {
	Name string `json:"name"`
	Old  bool   `json:"old"`
	New  bool   `json:"new"`
}

func (a *jvmkit) setFlags(cmd *cobra.Command, args, sets []string, writeMemory bool) error {
	if len(sets) == 0 {
		return usagef("--write-memory needs --set Name=true|false")
	}
	if !writeMemory {
		return usagef("--set writes into the JVM's memory: add --write-memory to confirm (see jvmkit flags --help)")
	}
	if len(args) != 1 {
		return usagef("--set takes only the pid, the flags to set are in --set")
	}
	type want struct {
		name string
		v    bool
	}
	var wants []want
	for _, s := range sets {
		name, val, ok := strings.Cut(s, "=")
		v, err := strconv.ParseBool(val)
		if !ok || name == "" || err != nil || (val != "true" && val != "false") {
			return usagef("--set %q: want Name=true or Name=false", s)
		}
		wants = append(wants, want{name, v})
	}
	pid, err := strconv.Atoi(args[0])
	if err != nil {
		return usagef("--set needs a live JVM's pid, not %q", args[0])
	}
	j, err := a.openTarget(cmd.Context(), args[0], false)
	if err != nil {
		return err
	}
	defer func() { _ = j.Close() }() // read-only: nothing to lose
	w, err := vmstructs.OpenProcessMemoryWriter(pid)
	if err != nil {
		return err
	}
	defer func() { _ = w.Close() }() // the writes are done or reported
	var changes []flagChange
	for _, x := range wants {
		f, err := j.Flag(x.name)
		if err != nil {
			return err
		}
		manageable := false
		for _, k := range f.Kinds {
			manageable = manageable || k == "manageable"
		}
		if !manageable && f.Type == "bool" {
			fmt.Fprintf(a.stderr, "jvmkit: warning: %s is not manageable: HotSpot does not expect it to change at run time\n", x.name)
		}
		old, err := j.SetBoolFlag(x.name, x.v, w)
		if err != nil {
			return err
		}
		changes = append(changes, flagChange{Name: x.name, Old: old, New: x.v})
		if store, err := guard.OpenStore(guard.DefaultDir); err == nil {
			err = guard.NoteSet(cmd.Context(), store, pid, x.name, old, x.v, "jvmkit flags --set")
			_ = store.Close()
			if err != nil {
				fmt.Fprintf(a.stderr, "jvmkit: warning: %s is set, but jvmkit's record of process %d could not say so: %v\n", x.name, pid, err)
			}
		}
		if !a.json {
			fmt.Fprintf(a.stdout, "%s: %t -> %t\n", x.name, old, x.v)
		}
	}
	if a.json {
		v, _ := j.Version()
		return a.printJSON("jvmkit.flags.set/v1", map[string]any{"version": v, "pid": pid, "set": changes})
	}
	return nil
}
