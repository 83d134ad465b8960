package gjcmd

import (
	"os"
	"path/filepath"
	"testing"
)

// TestReadOnly: which requests leave SIGINT and SIGTERM their default action (see readOnly). A command
// that changes the JVM or writes a file, -o and --copy-to, and every JFR command keep the handler.
func TestReadOnly(t *testing.T) {
	file := filepath.Join(t.TempDir(), "commands")
	if err := os.WriteFile(file, []byte("VM.version\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args           []string
		output, copyTo string
		want           bool
	}{
		{args: []string{"VM.version"}, want: true},
		{args: []string{"VM.flags", "-all"}, want: true},
		{args: []string{"Thread.print", "-l"}, want: true},
		{args: []string{"PerfCounter.print"}, want: true},
		{args: nil, want: true}, // no command: help
		{args: []string{"VM.version"}, output: "/tmp/x", want: false},
		{args: []string{"Thread.print"}, copyTo: "/tmp/d", want: false},
		{args: []string{"GC.heap_dump", "/tmp/x.hprof"}, want: false},
		{args: []string{"GC.class_histogram"}, want: false}, // a full GC
		{args: []string{"JFR.check"}, want: false},          // sets JFR up on its first use
		{args: []string{"JFR.start"}, want: false},
		{args: []string{"VM.set_flag", "PrintGC", "true"}, want: false},
		{args: []string{"VM.log", "output=/tmp/x"}, want: false},
		{args: []string{"properties"}, want: false}, // raw operations keep it
		{args: []string{"-f", file}, want: false},   // even of commands that only print: one handler for all
	} {
		g := &gjcmd{output: tc.output, copyTo: tc.copyTo}
		req, err := parseRequest(tc.args)
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if got := g.readOnly(req); got != tc.want {
			t.Errorf("%v (-o %q, --copy-to %q): readOnly %v, want %v", tc.args, tc.output, tc.copyTo, got, tc.want)
		}
	}
}
