package attach

import "strconv"

func strconvItoa(n int) string { return strconv.Itoa(n) }

// DialAs exposes the per-thread credential dial for tests.
var DialAs = dialAs
