package gjcmd

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jvmkit/jvmkit/attach"
	"github.com/jvmkit/jvmkit/cmd/internal/cliutil"
)

// gjcmd parses its own command line instead of building a cobra tree: it starts often (scripts, loops,
// completions) and cobra, pflag and text/template would be most of its start-up. The syntax is pflag's
// with interspersed flags off, as the tree of the release tool (completions, man pages) declares it:
// flags come before the target, and everything after the target belongs to the command ("VM.flags -all").

// Use, Short and Long are gjcmd's usage line and help, shared with the release tool's tree.
const (
	Use   = "gjcmd [flags] [<pid | main class | 0> <command ...|PerfCounter.print|-f file>]"
	Short = "Send diagnostic commands to running HotSpot JVMs (a drop-in jcmd that needs no JDK)"
	Long  = `gjcmd sends diagnostic commands to running HotSpot JVMs, like the JDK's jcmd, without a JDK and
in a few milliseconds. It works from the host against JVMs in containers (by host pid) and as root
against JVMs of other users.

  gjcmd                         list JVMs (same as -l)
  gjcmd <pid> <command ...>     run a diagnostic command, e.g. "gjcmd 1234 VM.flags -all"
  gjcmd <main class> <command>  every JVM whose main class contains the argument
  gjcmd 0 <command>             every JVM
  gjcmd <pid> -f <file>         one command per line, up to a line "stop"
  gjcmd <pid> PerfCounter.print the JVM's performance counters (read from hsperfdata, no attach)
  gjcmd <pid> <operation> [args] a raw attach operation: load, properties, agentProperties,
                                datadump, threaddump, dumpheap, inspectheap, setflag, printflag,
                                jcmd, getversion (jcmd's line runs as a diagnostic command; the
                                files of dumpheap and inspectheap are made safe as for GC.heap_dump)

Exit status: 0 ok, 1 the JVM reported a failure, 2 usage, 3 no such JVM or not HotSpot,
4 permission denied, 5 attach listener not available (timeout, JVM stopped, attach disabled),
130 interrupted (a command that only prints, for one JVM, is simply ended by SIGINT or SIGTERM,
as jattach is: nothing to undo or report).`
)

// Flag is one of gjcmd's flags, as the release tool declares it to cobra. Value points into a gjcmd's
// settings: *bool, *int, *string or *time.Duration.
type Flag struct {
	Name, Short, Usage string
	Value              any
}

// Type is the flag's value type as pflag names it ("bool", "int", "string", "duration").
func (f *Flag) Type() string {
	switch f.Value.(type) {
	case *bool:
		return "bool"
	case *int:
		return "int"
	case *time.Duration:
		return "duration"
	}
	return "string"
}

// Default is the flag's default as pflag shows it, "" for the type's zero value.
func (f *Flag) Default() string {
	switch v := f.Value.(type) {
	case *time.Duration:
		if *v != 0 {
			return v.String()
		}
	case *int:
		if *v != 0 {
			return strconv.Itoa(*v)
		}
	case *string:
		if *v != "" {
			return strconv.Quote(*v)
		}
	}
	return ""
}

func (f *Flag) set(value string) error {
	var err error
	switch v := f.Value.(type) {
	case *bool:
		*v, err = strconv.ParseBool(value)
	case *int:
		var n int64
		n, err = strconv.ParseInt(value, 0, 0)
		*v = int(n)
	case *time.Duration:
		*v, err = time.ParseDuration(value)
	case *string:
		*v = value
	}
	if err != nil {
		return cliutil.UsageErrorf("invalid argument %q for %q flag: %v", value, "--"+f.Name, err)
	}
	return nil
}

// Flags are gjcmd's flags with their defaults, for the release tool's tree.
func Flags() []Flag { return newGjcmd(nil, nil).flags() }

// Parse reads a command line as gjcmd does: its flags, set from args, and the arguments after them.
func Parse(args []string) ([]Flag, []string, error) {
	g := newGjcmd(nil, nil)
	rest, _, err := g.parse(args)
	return g.flags(), rest, err
}

func newGjcmd(stdout, stderr io.Writer) *gjcmd {
	return &gjcmd{stdout: stdout, stderr: stderr, attachTimeout: attach.DefaultAttachTimeout}
}

// flags are gjcmd's flags bound to g, sorted by name as the help lists them.
func (g *gjcmd) flags() []Flag {
	return []Flag{
		{"attach-timeout", "", "bound starting the attach listener and connecting", &g.attachTimeout},
		{"copy-to", "", "copy the file the command wrote (JFR.dump, GC.heap_dump, ...) into this directory, also out of containers", &g.copyTo},
		{"help", "h", "help for gjcmd", &g.help},
		{"json", "", "print results as JSON (schema jvmkit.gjcmd/v1)", &g.jsonOut},
		{"list", "l", "list JVM processes on the local machine", &g.list},
		{"no-check", "", "send command options without checking them against the JVM's help first", &g.noCheck},
		{"output", "o", "copy the file the command wrote to this file name", &g.output},
		{"overwrite", "", "with --copy-to/-o: replace an existing file (never through a symlink)", &g.overwrite},
		{"protocol", "", "attach protocol: 0 auto (2 on JDK 24+, else 1), 1, 2", &g.protocol},
		{"streaming", "", "let JDK 25+ stream output while the command runs (the default has the JVM buffer it)", &g.streaming},
		{"timeout", "", "bound each JVM's whole operation (attach and reply); 0: attach within --attach-timeout, then wait for the reply while the JVM runs", &g.timeout},
		{"verbose", "v", "print attach diagnostics on stderr", &g.verbose},
		{"version", "", "version for gjcmd", &g.version},
	}
}

// parse sets g's flags from the start of args and returns the rest (the target and the command). A
// flag that wants a value and ends args is returned as pending (for completion), with an error.
func (g *gjcmd) parse(args []string) (rest []string, pending *Flag, err error) {
	flags := g.flags()
	lookup := func(long, short string) *Flag {
		i := slices.IndexFunc(flags, func(f Flag) bool { return long != "" && f.Name == long || short != "" && f.Short == short })
		if i < 0 {
			return nil
		}
		return &flags[i]
	}
	for len(args) > 0 {
		a := args[0]
		switch {
		case a == "--":
			return args[1:], nil, nil
		case len(a) < 2 || a[0] != '-' || negativeNumber(a):
			// The target: everything from here on is positional. A negative number is a target too (no
			// shorthand is a digit), which run refuses as jcmd does, rather than as an unknown flag.
			return args, nil, nil
		}
		args = args[1:]
		if strings.HasPrefix(a, "--") {
			name, value, hasValue := strings.Cut(a[2:], "=")
			f := lookup(name, "")
			switch {
			case f == nil:
				return nil, nil, cliutil.UsageErrorf("unknown flag: --%s", name)
			case hasValue:
				err = f.set(value)
			case f.Type() == "bool":
				err = f.set("true")
			case len(args) == 0:
				return nil, f, cliutil.UsageErrorf("flag needs an argument: --%s", name)
			default:
				err, args = f.set(args[0]), args[1:]
			}
			if err != nil {
				return nil, nil, err
			}
			continue
		}
		// Shorthands: "-lv", "-o file", "-ofile", "-o=file".
		for s := a[1:]; s != ""; {
			f := lookup("", s[:1])
			if f == nil {
				return nil, nil, cliutil.UsageErrorf("unknown shorthand flag: %q in %s", s[:1], a)
			}
			s = s[1:]
			switch {
			case len(s) > 1 && s[0] == '=': // "-o=" is "=" as -o's value, as in pflag
				err, s = f.set(s[1:]), ""
			case f.Type() == "bool":
				err = f.set("true")
			case s != "":
				err, s = f.set(s), ""
			case len(args) == 0:
				return nil, f, cliutil.UsageErrorf("flag needs an argument: %q in %s", f.Short, a)
			default:
				err, args = f.set(args[0]), args[1:]
			}
			if err != nil {
				return nil, nil, err
			}
		}
	}
	return nil, nil, nil
}

// negativeNumber says whether a is "-" and digits.
func negativeNumber(a string) bool {
	_, err := strconv.ParseUint(a[1:], 10, 64)
	return a[0] == '-' && err == nil
}

// usage is the usage text that follows a usage error, and ends the help: pflag's layout.
func (g *gjcmd) usage() string {
	flags := Flags() // the defaults, not what this command line set
	lines := make([]string, len(flags))
	width := 0
	for i, f := range flags {
		l := "      --" + f.Name
		if f.Short != "" {
			l = "  -" + f.Short + ", --" + f.Name
		}
		if t := f.Type(); t != "bool" {
			l += " " + t
		}
		lines[i] = l
		width = max(width, len(l))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Usage:\n  %s\n\nFlags:\n", Use)
	for i, f := range flags {
		fmt.Fprintf(&b, "%-*s   %s", width, lines[i], f.Usage)
		if d := f.Default(); d != "" {
			fmt.Fprintf(&b, " (default %s)", d)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// completeFlags offers the flags whose "--name" or "-x" starts with toComplete.
func (g *gjcmd) completeFlags(toComplete string) []string {
	var out []string
	for _, f := range g.flags() {
		if w := "--" + f.Name; strings.HasPrefix(w, toComplete) {
			out = append(out, w+"\t"+f.Usage)
		}
		if w := "-" + f.Short; f.Short != "" && !strings.HasPrefix(toComplete, "--") && strings.HasPrefix(w, toComplete) {
			out = append(out, w+"\t"+f.Usage)
		}
	}
	return out
}
