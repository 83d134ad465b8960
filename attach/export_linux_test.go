package attach

// DialAs exposes the per-thread credential dial for tests.
var DialAs = dialAs
