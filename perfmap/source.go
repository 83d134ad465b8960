package perfmap

import (
	"context"
	"fmt"
	"strings"

	"github.com/jvmkit/jvmkit/vmstructs"
)

// FromVMStructs builds the map of JVM pid from its code cache, read from its memory: every blob, named as
// Compiler.perfmap names it. With unfold, an nmethod's name is followed by "->" and each method inlined
// into it (see the package documentation); an nmethod whose inlining cannot be read keeps its plain name.
func FromVMStructs(ctx context.Context, pid int, unfold bool) ([]Entry, error) {
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
		if b.End <= b.Start {
			continue
		}
		name := b.Label()
		if unfold && b.Kind == vmstructs.KindNMethod {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if inl, err := cc.Inlined(b); err == nil && len(inl) > 0 {
				name += "->" + strings.Join(inl, "->")
			}
		}
		out = append(out, Entry{Start: b.Start, Size: b.End - b.Start, Name: name})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("perfmap: process %d: empty code cache", pid)
	}
	return out, nil
}
