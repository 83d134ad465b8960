package gjcmdtree_test

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/jvmkit/jvmkit/cmd/internal/gjcmd"
	"github.com/jvmkit/jvmkit/cmd/internal/gjcmd/gjcmdtree"
)

// settings prints flags' values, for comparing two parses.
func settings(flags []gjcmd.Flag) string {
	var b strings.Builder
	for _, f := range flags {
		var v any
		switch p := f.Value.(type) {
		case *bool:
			v = *p
		case *int:
			v = *p
		case *string:
			v = *p
		case *time.Duration:
			v = *p
		}
		fmt.Fprintf(&b, "%s=%v ", f.Name, v)
	}
	return b.String()
}

// checkAsPflag: gjcmd's parser reads a command line as pflag does for gjcmd's tree (the oracle: what
// the completions and man pages declare), accepting and refusing the same ones.
func checkAsPflag(t *testing.T, args []string) {
	t.Helper()
	flags := gjcmd.Flags()
	fs := pflag.NewFlagSet("gjcmd", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SetInterspersed(false)
	gjcmdtree.Bind(fs, flags)
	wantErr := fs.Parse(args)
	got, gotRest, gotErr := gjcmd.Parse(args)
	if (wantErr != nil) != (gotErr != nil) {
		t.Fatalf("%q: error %v, pflag's %v", args, gotErr, wantErr)
	}
	if wantErr != nil {
		return
	}
	if g, w := settings(got), settings(flags); g != w || !slices.Equal(gotRest, fs.Args()) && len(gotRest)+len(fs.Args()) > 0 {
		t.Fatalf("%q:\n got %s rest %q\nwant %s rest %q", args, g, gotRest, w, fs.Args())
	}
}

var parseSeeds = [][]string{
	{}, {"-l"}, {"--list"}, {"-lv"}, {"-vl", "123"}, {"123", "VM.flags", "-all"}, {"--", "-5", "x"},
	{"--timeout", "5s", "1", "VM.version"}, {"--timeout=5s", "1"}, {"--timeout"}, {"--timeout", "x"},
	{"-o", "out.jfr", "1", "JFR.dump"}, {"-oout.jfr", "1"}, {"-o=out.jfr", "1"}, {"-o"}, {"-o="}, {"--output=", "1"},
	{"--json=false", "1"}, {"--json=maybe"}, {"-x"}, {"--bogus"}, {"-", "VM.version"}, {"-l=false", "1"},
	{"--protocol", "2", "1"}, {"--protocol=0x2"}, {"--protocol", "-1"}, {"-h"}, {"--version"},
	{"1", "-f", "cmds"}, {"--copy-to", "/tmp", "main.Class", "GC.heap_dump", "x.hprof"}, {"-lo", "x"},
	{"-vo"}, {"--no-check", "--streaming", "--overwrite", "--attach-timeout=1ms", "0"},
}

func TestParseAsPflag(t *testing.T) {
	for _, args := range parseSeeds {
		checkAsPflag(t, args)
	}
}

func FuzzParse(f *testing.F) {
	for _, args := range parseSeeds {
		f.Add(strings.Join(args, "\x00"))
	}
	f.Fuzz(func(t *testing.T, line string) {
		var args []string
		if line != "" {
			args = strings.Split(line, "\x00")
		}
		checkAsPflag(t, args)
	})
}
