package perfmap

import (
	"context"
	"fmt"
	"strings"

	"github.com/jvmkit/jvmkit/vmstructs"
)

// VMStructsOptions choose what FromVMStructs writes.
type VMStructsOptions struct {
	// Unfold splits each nmethod into ranges by inlining chain (see vmstructs.CodeCache.InlineRanges): a
	// range of inlined code is named by its chain, outermost method first, joined by "->"
	// ("int A.f()->int B.g()"), as perf-map-agent's unfoldall does; the other ranges keep the method's
	// name. The ranges do not overlap, so perf finds exactly one of them.
	Unfold bool
	// Annotate appends "_[j]" to the names of compiled Java methods, and "_[i]" to each inlined method of
	// an unfolded chain, as perf-map-agent's annotate_java_frames does; flame graph tools colour frames by
	// these suffixes.
	Annotate bool
}

// FromVMStructs builds the map of JVM pid from its code cache, read from its memory: every blob, named as
// Compiler.perfmap names it; with unfold, as VMStructsOptions.Unfold says.
func FromVMStructs(ctx context.Context, pid int, unfold bool) ([]Entry, error) {
	return FromVMStructsWith(ctx, pid, VMStructsOptions{Unfold: unfold})
}

// FromVMStructsWith is FromVMStructs with options. An nmethod whose inlining cannot be read is written
// whole under its own name.
func FromVMStructsWith(ctx context.Context, pid int, opts VMStructsOptions) ([]Entry, error) {
	j, err := vmstructs.Open(ctx, pid)
	if err != nil {
		return nil, err
	}
	defer j.Close()
	cc, err := j.CodeCache()
	if err != nil {
		return nil, err
	}
	blobs, err := cc.Blobs()
	if err != nil {
		return nil, err
	}
	out := make([]Entry, 0, len(blobs))
	for i := range blobs {
		b := &blobs[i]
		if b.End <= b.Start || b.Unloaded() {
			continue
		}
		name := b.Label()
		java := b.Kind == vmstructs.KindNMethod || b.Kind == vmstructs.KindNativeNMethod
		if opts.Annotate && java {
			name += annotJIT
		}
		if opts.Unfold && b.Kind == vmstructs.KindNMethod {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if rs, err := cc.InlineRanges(b); err == nil && len(rs) > 1 {
				for _, r := range rs {
					out = append(out, Entry{Start: r.Start, Size: r.End - r.Start, Name: chainName(b, r.Scopes, opts.Annotate)})
				}
				continue
			}
		}
		out = append(out, Entry{Start: b.Start, Size: b.End - b.Start, Name: name})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("perfmap: process %d: empty code cache", pid)
	}
	return out, nil
}

// Suffixes of annotated names, as perf-map-agent and stackcollapse-perf.pl write them.
const (
	annotJIT     = "_[j]"
	annotInlined = "_[i]"
)

// chainName names a range of nmethod b with inlining chain scopes (innermost first): the nmethod's
// name, then each inlined method outwards in.
func chainName(b *vmstructs.CodeBlob, scopes []vmstructs.Scope, annotate bool) string {
	var sb strings.Builder
	sb.WriteString(b.Label())
	if annotate {
		sb.WriteString(annotJIT)
	}
	for k := len(scopes) - 2; k >= 0; k-- {
		name := scopes[k].MethodName
		if name == "" {
			name = fmt.Sprintf("Method@%#x", scopes[k].Method)
		}
		sb.WriteString("->")
		sb.WriteString(name)
		if annotate {
			sb.WriteString(annotInlined)
		}
	}
	return sb.String()
}

// AnnotateJDKNames appends "_[j]" to the entries that name a Java method in the JDK's own format
// (Compiler.perfmap: "int java.lang.String.hashCode()"): a name that ends with ")" and has no space
// just before its "(", which the names of stubs and adapters ("StubRoutines (1)") do not.
func AnnotateJDKNames(entries []Entry) {
	for i := range entries {
		if isJDKMethodName(entries[i].Name) {
			entries[i].Name += annotJIT
		}
	}
}

func isJDKMethodName(name string) bool {
	if !strings.HasSuffix(name, ")") {
		return false
	}
	i := strings.IndexByte(name, '(')
	return i > 0 && name[i-1] != ' ' && strings.Contains(name[:i], ".")
}
