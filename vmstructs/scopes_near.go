package vmstructs

// ScopesNear is Scopes for a pc that is not at a call or safepoint, with the rule of HotSpot's
// Serviceability Agent (jhsdb jstack; NMethod.getPCDescNearDbg): the PcDesc at the greatest offset at
// or before pc that has debug information, where Scopes(b, pc, true) takes the first one after pc as
// AsyncGetCallTrace does (forte.cpp); without such a PcDesc, ScopesNear falls back to that rule.
// Neither is exact between safepoints without -XX:+DebugNonSafepoints; ScopesNear gives what jhsdb
// prints.
func (c *CodeCache) ScopesNear(b *CodeBlob, pc uint64) ([]Scope, error) {
	return c.scopes(b, pc, true, true)
}
