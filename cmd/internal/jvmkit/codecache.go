package jvmkit

import (
	"bufio"
	"errors"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/jvmkit/jvmkit/vmstructs"
)

// codecacheJSON is the data of the jvmkit.codecache/v1 schema.
type codecacheJSON struct {
	Version string               `json:"version,omitempty"`
	Heaps   []vmstructs.CodeHeap `json:"heaps"`
	Blobs   []vmstructs.CodeBlob `json:"blobs"`
	Scopes  []vmstructs.Scope    `json:"scopes,omitempty"` // --pc in an nmethod: the inlining chain there
}

func (a *jvmkit) codecacheCmd() *cobra.Command {
	var pc string
	var inline bool
	cmd := &cobra.Command{
		Use:   "codecache <pid|core>",
		Short: "List the code cache: compiled methods, the interpreter, adapters and stubs",
		Long: `codecache lists every blob of the JVM's code cache, read from its memory: one line per blob,

    start-end kind level name

where start-end is the code (what Compiler.perfmap prints as address and size), kind is one of nmethod,
native-nmethod, interpreter, stub-routines, buffer, adapter, mh-adapter, vtable, runtime-stub,
deoptimization, safepoint, exception, uncommon-trap, upcall or stub, level is the compilation tier of an
nmethod (0 native wrapper, 1-3 C1, 4 C2; "-" for other blobs), and name is the method as
Compiler.perfmap names it ("int java.lang.String.hashCode()") or the blob's own name.

With --pc, only the blob that contains the address is printed (exit status 1 if none does), and for an
nmethod the methods inlined at that address, innermost first, each with its bci and source line (exact
with -XX:+DebugNonSafepoints; otherwise those of the nearest debug information after the address).
With --inline, every nmethod line is followed by the methods compiled into it by inlining, one per
line, indented. --json prints schema jvmkit.codecache/v1: the version, the heaps and every blob with its blob address,
compile id, Method* and frame size.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var addr uint64
			if pc != "" {
				v, err := strconv.ParseUint(pc, 0, 64)
				if err != nil {
					return usagef("--pc %q: not an address", pc)
				}
				addr = v
			}
			j, err := a.openTarget(cmd.Context(), args[0], true)
			if err != nil {
				return err
			}
			defer j.Close()
			c, err := j.CodeCache()
			if err != nil {
				return fmt.Errorf("codecache: %w", err)
			}
			var blobs []vmstructs.CodeBlob
			var scopes []vmstructs.Scope
			if pc != "" {
				b, err := c.FindBlob(addr)
				if err != nil {
					return fmt.Errorf("codecache: %w", err)
				}
				if b == nil {
					return fmt.Errorf("codecache: no blob contains %#x", addr)
				}
				blobs = []vmstructs.CodeBlob{*b}
				if b.Kind == vmstructs.KindNMethod {
					if scopes, err = c.Scopes(b, addr, true); err != nil {
						fmt.Fprintf(a.stderr, "jvmkit: codecache: %v\n", err)
					}
				}
			} else {
				blobs, err = c.Blobs()
				var me *vmstructs.MissingError
				switch {
				case errors.As(err, &me) && blobs != nil:
					// Blobs without method names: say so and list them.
					fmt.Fprintf(a.stderr, "jvmkit: codecache: %v\n", err)
				case err != nil:
					return fmt.Errorf("codecache: %w", err)
				}
			}
			if a.json {
				v, _ := j.Version()
				return a.printJSON("jvmkit.codecache/v1", codecacheJSON{Version: v, Heaps: c.Heaps(), Blobs: blobs, Scopes: scopes})
			}
			w := bufio.NewWriter(a.stdout)
			var inlineErr error
			for i := range blobs {
				b := &blobs[i]
				level := "-"
				if b.Kind == vmstructs.KindNMethod || b.Kind == vmstructs.KindNativeNMethod {
					level = strconv.Itoa(b.Level)
				}
				fmt.Fprintf(w, "%#x-%#x %s %s %s\n", b.Start, b.End, b.Kind, level, b.Label())
				if inline && b.Kind == vmstructs.KindNMethod {
					names, err := c.Inlined(b)
					if err != nil && inlineErr == nil {
						inlineErr = err // code unloaded while we read, or entries missing: say it once
					}
					for _, n := range names {
						fmt.Fprintf(w, "\t%s\n", n)
					}
				}
			}
			if inlineErr != nil {
				fmt.Fprintf(a.stderr, "jvmkit: codecache --inline: %v\n", inlineErr)
			}
			for _, s := range scopes {
				fmt.Fprintf(w, "\t%s bci=%d", s.MethodName, s.BCI)
				if s.Line >= 0 {
					fmt.Fprintf(w, " line=%d", s.Line)
				}
				fmt.Fprintln(w)
			}
			return w.Flush()
		},
	}
	cmd.Flags().StringVar(&pc, "pc", "", "print only the blob that contains this address (0x... or decimal)")
	cmd.Flags().BoolVar(&inline, "inline", false, "list the methods inlined into each nmethod")
	return cmd
}
