package testutil

import "testing"

// TestCompiledAt reads -XX:+PrintCompilation lines as JDK 11, 17 and 25 print them.
func TestCompiledAt(t *testing.T) {
	for _, c := range []struct {
		line, method string
		level        int
		ok           bool
	}{
		{"     54    6       3       Spin::main (44 bytes)\n", "Spin::main", 3, true},
		{"    302   68       4       Busy::spin (29 bytes)\n", "Busy::spin", 4, true},
		{"121    9  s!   4       Demo::hashOrder (40 bytes)\n", "Demo::hashOrder", 4, true},
		{"     54    7 %     4       Spin::main @ 4 (44 bytes)\n", "Spin::main", 0, false},
		{"     57    6       3       Spin::main (44 bytes)   made not entrant\n", "Spin::main", 0, false},
		{"     54    6       3       Spin::mainly (44 bytes)\n", "Spin::main", 0, false},
		{"ready\n", "Spin::main", 0, false},
	} {
		if level, ok := compiledAt(c.line, c.method); level != c.level || ok != c.ok {
			t.Errorf("compiledAt(%q, %q) = %d, %v; want %d, %v", c.line, c.method, level, ok, c.level, c.ok)
		}
	}
}
