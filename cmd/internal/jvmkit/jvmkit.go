package jvmkit

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/jvmkit/jvmkit/cmd/internal/clitree"
	"github.com/jvmkit/jvmkit/cmd/internal/cliutil"
	"github.com/jvmkit/jvmkit/vmstructs"
)

func usagef(format string, args ...any) error { return cliutil.UsageErrorf(format, args...) }

// Extra makes a subcommand defined outside this package, for commands whose dependencies the tests of
// this package need not link (jvmkit agent: HTTP and protobuf clients; jvmkit jfr export: Parquet).
type Extra func(stdout, stderr io.Writer) *cobra.Command

// Main runs jvmkit with the given arguments (without the program name) and the extra subcommands, and
// returns the exit status.
func Main(args []string, stdout, stderr io.Writer, extra ...Extra) int {
	return clitree.Run("jvmkit", Command(stdout, stderr, extra...), args, stdout, stderr, false)
}

// Command builds jvmkit's command tree with the extra subcommands: for Main, and for the release tool,
// which generates completions and man pages from it.
func Command(stdout, stderr io.Writer, extra ...Extra) *cobra.Command {
	app := &jvmkit{stdout: stdout, stderr: stderr}
	root := &cobra.Command{
		Use:   "jvmkit",
		Short: "Read running HotSpot JVMs from the outside: VMStructs, code cache, threads, flags",
		Long: `jvmkit reads a HotSpot JVM's own self-description (VMStructs) from its memory, with no agent and
no attach: nothing runs in the JVM and it is not stopped. A target is a pid (the host pid for a JVM in a
container) or, where the command says so, a core file made with gcore.

Exit status: 0 ok, 1 failed, 2 usage, 3 no such JVM or not HotSpot, 4 permission, 6 not in this
build (its architecture), 130 interrupted.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().BoolVar(&app.json, "json", false, "print JSON")
	root.PersistentFlags().StringVar(&app.coreRoot, "core-root", "", "for a core file: the directory the JVM's files are under (a container's root)")
	root.AddCommand(app.vmstructsCmd(), app.flagsCmd(), app.threadsCmd(), app.codecacheCmd(), app.foldCmd(), app.flameCmd(), app.usdtCmd(), app.symbolizeCmd(), app.jitlogCmd(), app.profileCmd(), app.allocCmd(), app.gcCmd(), app.jfrCmd())
	for _, c := range extra {
		addOrMerge(root, c(stdout, stderr))
	}
	clitree.FinishTree(root)
	return root
}

// addOrMerge adds cmd to root, or, when root has a command of that name (jfr), adds cmd's subcommands
// to it: an extra command can extend a tree as well as add one (jvmkit jfr export).
func addOrMerge(root, cmd *cobra.Command) {
	for _, c := range root.Commands() {
		if c.Name() == cmd.Name() {
			c.AddCommand(cmd.Commands()...)
			return
		}
	}
	root.AddCommand(cmd)
}

type jvmkit struct {
	stdout, stderr io.Writer
	json           bool
	coreRoot       string
}

// openTarget opens a pid, or a core file where the command accepts one.
func (a *jvmkit) openTarget(ctx context.Context, target string, coreOK bool) (*vmstructs.JVM, error) {
	if pid, err := strconv.Atoi(target); err == nil {
		return vmstructs.Open(ctx, pid)
	}
	if !coreOK {
		return nil, usagef("%q is not a pid", target)
	}
	return vmstructs.OpenCore(ctx, target, vmstructs.CoreOptions{Root: a.coreRoot})
}

func (a *jvmkit) printJSON(schema string, v any) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(map[string]any{"schema": schema, "data": v})
}

func (a *jvmkit) vmstructsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "vmstructs <pid|core>",
		Short: "Dump the JVM's VMStructs tables (types, fields, constants)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			j, err := a.openTarget(cmd.Context(), args[0], true)
			if err != nil {
				return err
			}
			defer j.Close()
			if a.json {
				return a.printJSON("jvmkit.vmstructs/v1", j.Table)
			}
			v, _ := j.Version()
			fmt.Fprintf(a.stdout, "# %s, libjvm %s at %#x: %d fields, %d types, %d int and %d long constants\n",
				v, j.LibJVM, j.Bias, len(j.Table.Fields), len(j.Table.Types), len(j.Table.Ints), len(j.Table.Longs))
			for _, t := range j.Table.Types {
				fmt.Fprintf(a.stdout, "type %s size=%d", t.Name, t.Size)
				if t.Superclass != "" {
					fmt.Fprintf(a.stdout, " extends %s", t.Superclass)
				}
				fmt.Fprintln(a.stdout)
			}
			for _, f := range j.Table.Fields {
				if f.Static {
					fmt.Fprintf(a.stdout, "field %s::%s %s static @%#x\n", f.Type, f.Name, f.TypeString, f.Address)
				} else {
					fmt.Fprintf(a.stdout, "field %s::%s %s +%d\n", f.Type, f.Name, f.TypeString, f.Offset)
				}
			}
			for _, c := range j.Table.Ints {
				fmt.Fprintf(a.stdout, "int %s = %d\n", c.Name, c.Value)
			}
			for _, c := range j.Table.Longs {
				fmt.Fprintf(a.stdout, "long %s = %d\n", c.Name, c.Value)
			}
			return nil
		},
	}
}
