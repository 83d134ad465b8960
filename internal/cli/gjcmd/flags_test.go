package gjcmd

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// pflagParse parses args as cobra would for gjcmd's tree (package gjcmdtree, the release tool's): pflag
// with interspersed flags off. It returns the flag values and the positional arguments.
func pflagParse(args []string) (values string, rest []string, err error) {
	g := newGjcmd(io.Discard, io.Discard)
	fs := pflag.NewFlagSet("gjcmd", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SetInterspersed(false)
	for _, f := range g.flags() {
		switch v := f.Value.(type) {
		case *bool:
			fs.BoolVarP(v, f.Name, f.Short, *v, f.Usage)
		case *int:
			fs.IntVarP(v, f.Name, f.Short, *v, f.Usage)
		case *string:
			fs.StringVarP(v, f.Name, f.Short, *v, f.Usage)
		case *time.Duration:
			fs.DurationVarP(v, f.Name, f.Short, *v, f.Usage)
		}
	}
	if err := fs.Parse(args); err != nil {
		return "", nil, err
	}
	return settings(g), fs.Args(), nil
}

func settings(g *gjcmd) string {
	var b strings.Builder
	for _, f := range g.flags() {
		fmt.Fprintf(&b, "%s=%v ", f.Name, reflectValue(f.Value))
	}
	return b.String()
}

func reflectValue(v any) any {
	switch v := v.(type) {
	case *bool:
		return *v
	case *int:
		return *v
	case *string:
		return *v
	case *time.Duration:
		return *v
	}
	return nil
}

func ownParse(args []string) (values string, rest []string, err error) {
	g := newGjcmd(io.Discard, io.Discard)
	rest, _, err = g.parse(args)
	if err != nil {
		return "", nil, err
	}
	return settings(g), rest, nil
}

// checkAsPflag: gjcmd's parser reads a command line as pflag does (the oracle: what gjcmd's cobra tree,
// and so its completions and man pages, declare), accepting and refusing the same ones.
func checkAsPflag(t *testing.T, args []string) {
	t.Helper()
	wantV, wantRest, wantErr := pflagParse(args)
	gotV, gotRest, gotErr := ownParse(args)
	if (wantErr != nil) != (gotErr != nil) {
		t.Fatalf("%q: error %v, pflag's %v", args, gotErr, wantErr)
	}
	if wantErr != nil {
		return
	}
	if gotV != wantV || !slices.Equal(gotRest, wantRest) && len(gotRest)+len(wantRest) > 0 {
		t.Fatalf("%q:\n got %s rest %q\nwant %s rest %q", args, gotV, gotRest, wantV, wantRest)
	}
}

var parseSeeds = [][]string{
	{}, {"-l"}, {"--list"}, {"-lv"}, {"-vl", "123"}, {"123", "VM.flags", "-all"}, {"--", "-5", "x"},
	{"--timeout", "5s", "1", "VM.version"}, {"--timeout=5s", "1"}, {"--timeout"}, {"--timeout", "x"},
	{"-o", "out.jfr", "1", "JFR.dump"}, {"-oout.jfr", "1"}, {"-o=out.jfr", "1"}, {"-o"}, {"--output=", "1"},
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
