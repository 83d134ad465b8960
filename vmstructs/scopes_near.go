package vmstructs

import (
	"fmt"
	"sort"
)

// ScopesNear is Scopes for a pc that is not at a call or safepoint, with the rule of HotSpot's
// Serviceability Agent (jhsdb jstack; NMethod.getPCDescNearDbg): the PcDesc at the greatest offset at
// or before pc that has debug information, where Scopes(b, pc, true) takes the first one after pc as
// AsyncGetCallTrace does (forte.cpp). Neither is exact between safepoints without
// -XX:+DebugNonSafepoints; ScopesNear gives what jhsdb prints.
func (c *CodeCache) ScopesNear(b *CodeBlob, pc uint64) ([]Scope, error) {
	if b == nil || b.Kind != KindNMethod && b.Kind != KindNativeNMethod {
		return nil, fmt.Errorf("vmstructs: scopes: not an nmethod")
	}
	if pc < b.Start || pc >= b.End {
		return nil, fmt.Errorf("vmstructs: scopes: pc %#x outside the code of nmethod %#x", pc, b.BlobAddr)
	}
	l, _, pcs, err := c.pcDescs(b)
	if err != nil {
		return nil, err
	}
	n := len(pcs) / int(l.pcSize)
	off := int64(pc - b.Start)
	// The first PcDesc after pc; the one wanted is the last with a scope before it.
	i := sort.Search(n, func(i int) bool {
		p, _ := intFieldIn(pcs, uint64(i)*l.pcSize, l.pcOffset)
		return p > off
	})
	for i--; i >= 0; i-- {
		p, _ := intFieldIn(pcs, uint64(i)*l.pcSize, l.pcOffset)
		if s, _ := intFieldIn(pcs, uint64(i)*l.pcSize, l.pcScope); s != 0 && p >= 0 {
			// Scopes looks a return address up by its PcDesc exactly: hand it that PcDesc's pc.
			return c.Scopes(b, b.Start+uint64(p), false)
		}
	}
	return c.Scopes(b, pc, true)
}
