package cli

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

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
	if a.json {
		v, _ := j.Version()
		if flags == nil {
			flags = []vmstructs.Flag{}
		}
		if err := a.printJSON("jvmkit.flags/v1", flagsJSON{Version: v, Flags: flags}); err != nil {
			return err
		}
	} else {
		for _, f := range flags {
			writeFlagLine(a.stdout, f)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s", vmstructs.ErrNoSuchFlag, strings.Join(missing, ", "))
	}
	return readErr
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
