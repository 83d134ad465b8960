package jcmd

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jvmkit/jvmkit/internal/lazyre"
)

// This file holds pure parsers of the text HotSpot's diagnostic commands print. None of them does
// I/O or panics, whatever the input; each has a fuzz target and golden inputs captured from real
// JVMs in testdata/<jdk>/ (see TestCapture).

// Command is a diagnostic command as `help <name>` describes it.
type Command struct {
	Name, Description, Impact, Permission, Syntax string
	Arguments                                     []Option // positional, in order ("Arguments:" section)
	Options                                       []Option // "Options:" section (key or key=value)

	// Controls are the .jfc control options JFR.start takes besides its own options (gc=high,
	// memory-leaks=gc-roots, ...). They come from the help where it lists them ("Options for
	// profile:", JDK 25) and otherwise from the .jfc files of JDK 17, whose help does not list them.
	Controls []Option
	// EventSettings is set for JFR.start, which also takes <event>#<setting>=<value> and
	// +<event>#<setting>=<value>.
	EventSettings bool
}

// Option is one argument or option of a Command.
type Option struct {
	Name, Description string
	// Type is the type the JVM parses the value as: STRING, BOOLEAN, NANOTIME, MEMORY SIZE, JLONG,
	// INT, FILE, STRING SET, as printed by HotSpot's own help. The JFR commands print hand-written
	// help whose types are prose ("INT followed by 's' for seconds ...") or plain wrong (maxsize
	// "STRING"); there Type is what jdk.jfr's parser or HotSpot's really use. For a .jfc control it is
	// the placeholder the help prints: "off|normal|detailed|high|all", "timespan", "method-filter",
	// "true|false".
	Type     string
	Default  string   // "" for "no default value"
	Required bool     // C++ help: no "[optional]"; JFR help: no "(Optional)", or "(Mandatory)"
	Multiple bool     // may be repeated, the values accumulate (STRING SET, JFR.start settings)
	Hidden   bool     // accepted by the JVM's parser but not listed by its help (JFR.start flush-interval)
	Values   []string // the values a .jfc selection or flag accepts
}

// ParseHelpList returns the command names of `help` ("The following commands are available:") or of
// `help -all` (each name followed by its tab-indented description).
func ParseHelpList(out string) ([]string, error) {
	lines := splitLines(out)
	var names []string
	listing := false
	for i, l := range lines {
		t := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "The following commands are available:"):
			listing = true
		case listing && t == "":
			listing = false
		case listing:
			if isCommandName(t) {
				names = append(names, t)
			}
		case t != "" && l == t && isCommandName(t) && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "\t"):
			names = append(names, t)
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("parse help: no command names in %q", excerpt(out))
	}
	return names, nil
}

func isCommandName(s string) bool {
	if s == "" || len(s) > 200 {
		return false
	}
	for _, r := range s {
		if r != '.' && r != '_' && r != '-' && (r < '0' || r > '9') && (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') {
			return false
		}
	}
	return true
}

// The package's regular expressions are compiled on first use (lazyre.Regexp), not in its init; those
// on gjcmd's paths are hand-written matchers (match.go), so that gjcmd links no regexp engine.

// ParseHelp parses the output of `help <name>`. Two layouts exist: HotSpot's own (DCmdParser::print_help,
// one tab-indented line per argument: "\tname : [optional] description (TYPE, default)") and the
// hand-written text of the JFR commands (jdk.jfr.internal.dcmd.DCmd*.getHelp: an indented name, a
// paragraph ending in "(TYPE, default)", notes), and JFR.start's list of .jfc options on JDK 25.
// A command the JVM does not have ("Help unavailable : ... : No such command") wraps
// ErrUnknownCommand.
func ParseHelp(out string) (*Command, error) {
	if name, ok := matchHelpUnavailable(out); ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownCommand, name)
	}
	lines := splitLines(out)
	for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
		lines = lines[1:]
	}
	if len(lines) == 0 {
		return nil, errors.New("parse help: empty output")
	}
	name := strings.TrimSpace(lines[0])
	if !isCommandName(name) {
		return nil, fmt.Errorf("parse help: %q is not a command name", excerpt(name))
	}
	c := &Command{Name: name}
	p := helpParser{c: c}
	var desc []string
	head := true
	for _, l := range lines[1:] {
		t := strings.TrimSpace(l)
		if head {
			switch {
			case strings.HasPrefix(l, "Impact:"):
				c.Impact = strings.TrimSpace(strings.TrimPrefix(l, "Impact:"))
				head = false
			case t != "":
				desc = append(desc, t)
			}
			continue
		}
		p.line(l)
	}
	p.flush()
	c.Description = strings.Join(desc, "\n")
	if c.Impact == "" && len(c.Arguments)+len(c.Options) == 0 {
		return nil, fmt.Errorf("parse help: no Impact line in %q", excerpt(out))
	}
	fixJFR(c)
	return c, nil
}

type helpSection int

const (
	secNone helpSection = iota
	secArguments
	secOptions
	secControls
)

// helpParser is the state of ParseHelp after the Impact line.
type helpParser struct {
	c       *Command
	sec     helpSection
	profile string // "Options for <profile>:"
	entry   []string
	isArg   bool // the pending JFR-style entry is a positional argument (<name>)
	byName  map[string]int
}

func (p *helpParser) line(l string) {
	t := strings.TrimSpace(l)
	switch {
	case strings.HasPrefix(l, "Permission:"):
		p.flush()
		p.c.Permission = strings.TrimSpace(strings.TrimPrefix(l, "Permission:"))
		return
	case strings.HasPrefix(l, "Syntax :"), strings.HasPrefix(l, "Syntax:"):
		p.flush()
		s := strings.TrimSpace(l[strings.IndexByte(l, ':')+1:])
		p.c.Syntax = strings.Join(strings.Fields(s), " ")
		return
	case l == "Arguments:":
		p.flush()
		p.sec = secArguments
		return
	case strings.HasPrefix(l, "Options:"):
		p.flush()
		p.sec = secOptions
		return
	case strings.HasPrefix(l, "Options for ") && strings.HasSuffix(t, ":"):
		p.flush()
		p.sec = secControls
		p.profile = strings.TrimSuffix(strings.TrimPrefix(t, "Options for "), ":")
		return
	case strings.HasPrefix(l, "Event settings and .jfc options"):
		p.flush()
		p.c.EventSettings = true
		p.sec = secNone
		return
	}
	switch p.sec {
	case secArguments, secOptions:
		switch {
		case strings.HasPrefix(l, "\t"):
			p.flush()
			if o, ok := parseCxxEntry(l[1:]); ok {
				p.add(o, p.sec == secArguments)
			}
		case t == "":
			if len(p.entry) > 0 {
				p.entry = append(p.entry, "") // notes follow the first paragraph
			}
		case l[0] != ' ':
			p.flush()
			p.sec = secNone
		case indent(l) <= 4:
			p.flush()
			p.entry = []string{t}
			p.isArg = strings.HasPrefix(t, "<")
		case len(p.entry) > 0:
			p.entry = append(p.entry, t)
		}
	case secControls:
		if name, placeholder, def, ok := matchControlLine(l); ok {
			p.control(name, placeholder, def)
		} else if t != "" && l[0] != ' ' {
			p.sec = secNone
		}
	}
}

func indent(l string) int { return len(l) - len(strings.TrimLeft(l, " ")) }

// A control line is a .jfc option in JFR.start's help (JDK 25): "  gc=<off|normal|detailed|high|all>  (normal)"
// (matchControlLine).

func (p *helpParser) control(name, placeholder, def string) {
	if def == `""` {
		def = ""
	}
	note := p.profile + ".jfc: " + def
	if i, ok := p.byName["control "+name]; ok {
		o := &p.c.Controls[i]
		o.Description += "; " + note
		if p.profile == "default" {
			o.Default = def
		}
		return
	}
	o := Option{Name: name, Type: placeholder, Default: def, Description: note}
	if strings.Contains(placeholder, "|") {
		o.Values = strings.Split(placeholder, "|")
	}
	if p.byName == nil {
		p.byName = map[string]int{}
	}
	p.byName["control "+name] = len(p.c.Controls)
	p.c.Controls = append(p.c.Controls, o)
}

func (p *helpParser) add(o Option, arg bool) {
	if arg {
		p.c.Arguments = append(p.c.Arguments, o)
	} else {
		p.c.Options = append(p.c.Options, o)
	}
}

// flush ends a pending entry of the JFR layout: its first paragraph has the name, "(Optional)" and
// ends with "(TYPE, default)"; later paragraphs are notes.
func (p *helpParser) flush() {
	lines := p.entry
	p.entry = nil
	if len(lines) == 0 {
		return
	}
	f := strings.Fields(lines[0])
	name := strings.TrimSuffix(strings.TrimPrefix(f[0], "<"), ">")
	var paras []string
	var cur []string
	for i, l := range lines {
		if i == 0 {
			l = strings.TrimSpace(strings.TrimPrefix(l, f[0]))
		}
		if l == "" {
			if len(cur) > 0 {
				paras = append(paras, strings.Join(cur, " "))
			}
			cur = nil
			continue
		}
		cur = append(cur, l)
	}
	if len(cur) > 0 {
		paras = append(paras, strings.Join(cur, " "))
	}
	o := Option{Name: name, Required: true}
	if len(paras) > 0 {
		first := paras[0]
		switch {
		case strings.HasPrefix(first, "(Optional)"):
			o.Required = false
			first = strings.TrimSpace(strings.TrimPrefix(first, "(Optional)"))
		case strings.HasPrefix(first, "(Mandatory)"):
			first = strings.TrimSpace(strings.TrimPrefix(first, "(Mandatory)"))
		}
		desc, typ, def, ok := splitTypeDefault(first)
		if ok {
			o.Type, o.Default = normalizeJFRType(typ), normalizeDefault(def)
			first = desc
		}
		paras[0] = first
		o.Description = strings.Join(paras, "\n\n")
	}
	if name == "" {
		return
	}
	p.add(o, p.isArg)
}

// parseCxxEntry parses "name : [optional] description (TYPE, default)" (DCmdParser::print_help). Names
// may contain spaces ("flag name" of VM.set_flag), so the name ends at the first " : ".
func parseCxxEntry(s string) (Option, bool) {
	i := strings.Index(s, " : ")
	if i <= 0 {
		return Option{}, false
	}
	o := Option{Name: strings.TrimSpace(s[:i]), Required: true}
	rest := strings.TrimSpace(s[i+3:])
	if strings.HasPrefix(rest, "[optional]") {
		o.Required = false
		rest = strings.TrimSpace(strings.TrimPrefix(rest, "[optional]"))
	}
	o.Description = rest
	if desc, typ, def, ok := splitTypeDefault(rest); ok {
		o.Description, o.Type, o.Default = desc, typ, normalizeDefault(def)
	}
	if o.Type == "STRING SET" {
		o.Multiple = true
	}
	return o, o.Name != ""
}

// splitTypeDefault splits "description (TYPE, default)" at the last parenthesis that opens a type
// (an upper-case word) and closes at the end of s. Descriptions and defaults may hold parentheses of
// their own: `Output format ("plain" or "json") (STRING, plain)`, `(STRING, 0 (no max size))`.
func splitTypeDefault(s string) (desc, typ, def string, ok bool) {
	s = strings.TrimSpace(s)
	if !strings.HasSuffix(s, ")") {
		return "", "", "", false
	}
	for i := strings.LastIndexByte(s, '('); i >= 0; i = strings.LastIndexByte(s[:i], '(') {
		inner := s[i+1 : len(s)-1]
		comma := strings.Index(inner, ", ")
		if comma <= 0 || !typeHead(inner[:comma]) {
			continue
		}
		if !balanced(inner) {
			continue
		}
		return strings.TrimSpace(s[:i]), strings.TrimSpace(inner[:comma]), strings.TrimSpace(inner[comma+2:]), true
	}
	return "", "", "", false
}

// typeHead reports whether t starts with an upper-case type word such as "MEMORY SIZE" or "INT
// followed by 's' for seconds ...".
func typeHead(t string) bool {
	if len(t) < 3 {
		return false
	}
	n := 0
	for n < len(t) && (t[n] >= 'A' && t[n] <= 'Z') {
		n++
	}
	return n >= 3 && (n == len(t) || t[n] == ' ')
}

func balanced(s string) bool {
	d := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			d++
		case ')':
			d--
			if d < 0 {
				return false
			}
		}
	}
	return d == 0
}

// normalizeJFRType maps the prose of JFR's help to the types its parser uses.
func normalizeJFRType(t string) string {
	switch {
	case strings.Contains(t, " followed by "):
		return "NANOTIME" // "INT followed by 's' for seconds 'm' for minutes or 'h' for hours"
	case t == "LONG":
		return "JLONG"
	}
	return t
}

func normalizeDefault(d string) string {
	d = strings.TrimSpace(d)
	for _, p := range []string{"default value is ", "default value "} {
		d = strings.TrimPrefix(d, p)
	}
	if d == "no default value" {
		return ""
	}
	if len(d) >= 2 && d[0] == '\'' && d[len(d)-1] == '\'' {
		d = d[1 : len(d)-1] // "default value 'end'"
	}
	return d
}

// jfrJavaParsed reports the commands whose options jdk.jfr parses itself
// (jdk.jfr.internal.dcmd.ArgumentParser, JDK 17 and later): a BOOLEAN needs "=true" or "=false", INT must
// not be negative, and a word without "=" fills a positional argument before it is looked up as an
// option. JFR.configure, like every other command, goes through HotSpot's DCmdParser
// (diagnosticFramework.cpp). This and the tables below are switches, not package-level maps, which
// gjcmd would build at every start.
func jfrJavaParsed(command string) bool {
	switch command {
	case "JFR.start", "JFR.dump", "JFR.check", "JFR.stop", "JFR.view", "JFR.query":
		return true
	}
	return false
}

// jfrType is the parsers' type of a JFR command's option where JFR's help prints another (jdk.jfr
// DCmd*.getArgumentInfos; JFR.configure: jfrDcmds.cpp), the same on JDK 17 and 25.
func jfrType(command, option string) (string, bool) {
	switch command + " " + option {
	case "JFR.start maxsize", "JFR.dump maxsize", "JFR.view maxsize":
		return "MEMORY SIZE", true
	case "JFR.start settings":
		return "STRING SET", true
	case "JFR.configure globalbuffercount", "JFR.configure stackdepth":
		return "JLONG", true
	case "JFR.configure globalbuffersize", "JFR.configure maxchunksize", "JFR.configure memorysize",
		"JFR.configure thread_buffer_size":
		return "MEMORY SIZE", true
	}
	return "", false
}

// jfrHidden are options the parsers accept on JDK 17 and 25 but the help leaves out (checked against
// both JVMs in testdata/<jdk>/checks.json): JFR.start flush-interval; JFR.configure dumppath, which JDK 17
// does not list, and samplethreads, which JDK 25 no longer lists.
func jfrHidden(command string) []Option {
	switch command {
	case "JFR.start":
		return []Option{{Name: "flush-interval", Type: "NANOTIME", Default: "1s",
			Description: "Minimum time before flushing buffers, e.g. 4s, or 0 for flushing when a recording ends"}}
	case "JFR.configure":
		return []Option{
			{Name: "dumppath", Type: "STRING", Description: "Path to the location where a recording file is written in case the VM runs into a critical error"},
			{Name: "samplethreads", Type: "BOOLEAN", Default: "true", Description: "Flag for activating thread sampling"},
		}
	}
	return nil
}

// jfc17Controls are the <control> inputs (selection, text, flag) of JDK 17's default.jfc and
// profile.jfc: what JFR.start accepts there as name=value although `help JFR.start` does not say.
// Defaults are default.jfc's. JDK 25 dropped file-threshold and socket-threshold, renamed the
// exceptions value "errors" to "throttled" and added method-timing and method-trace; its help lists them.
var jfc17Controls = []Option{
	{Name: "gc", Type: "off|normal|detailed|high|all", Default: "normal"},
	{Name: "allocation-profiling", Type: "off|low|medium|high|maximum", Default: "low"},
	{Name: "compiler", Type: "off|normal|detailed|all", Default: "normal"},
	{Name: "method-profiling", Type: "off|normal|high|max", Default: "normal"},
	{Name: "thread-dump", Type: "off|once|60s|10s|1s", Default: "once"},
	{Name: "exceptions", Type: "off|errors|all", Default: "errors"},
	{Name: "memory-leaks", Type: "off|types|stack-traces|gc-roots", Default: "types"},
	{Name: "locking-threshold", Type: "timespan", Default: "20 ms"},
	{Name: "file-threshold", Type: "timespan", Default: "20 ms"},
	{Name: "socket-threshold", Type: "timespan", Default: "20 ms"},
	{Name: "class-loading", Type: "true|false", Default: "false"},
}

// fixJFR corrects what the hand-written JFR help gets wrong and adds what it leaves out.
func fixJFR(c *Command) {
	for _, list := range [][]Option{c.Arguments, c.Options} {
		for i := range list {
			if t, ok := jfrType(c.Name, list[i].Name); ok {
				list[i].Type = t
			}
			if list[i].Type == "STRING SET" {
				list[i].Multiple = true
			}
		}
	}
	for _, h := range jfrHidden(c.Name) {
		if c.option(h.Name) == nil {
			h.Hidden = true
			c.Options = append(c.Options, h)
		}
	}
	if c.Name == "JFR.start" {
		c.EventSettings = true
		if len(c.Controls) == 0 {
			for _, o := range jfc17Controls {
				o.Description = "a control of JDK 17's default.jfc and profile.jfc (this JVM's help lists none)"
				if strings.Contains(o.Type, "|") {
					o.Values = strings.Split(o.Type, "|")
				}
				c.Controls = append(c.Controls, o)
			}
		}
	}
}

func (c *Command) option(name string) *Option {
	for i := range c.Options {
		if c.Options[i].Name == name {
			return &c.Options[i]
		}
	}
	return nil
}

// OptionError is a command line that the JVM would reject, or would read differently from what it
// says, found before anything is sent.
type OptionError struct {
	Command    string // e.g. "JFR.dump"
	Option     string // the option, argument or word at fault; "" for the line as a whole
	Suggestion string // the closest known option name, for an unknown one
	Reason     string // e.g. "unknown option", `invalid BOOLEAN value "yes"`
}

func (e *OptionError) Error() string {
	var b strings.Builder
	b.WriteString(e.Command)
	b.WriteString(": ")
	switch {
	case e.Option == "":
		b.WriteString(e.Reason)
	case strings.HasPrefix(e.Reason, "unknown "), strings.HasPrefix(e.Reason, "missing "):
		b.WriteString(e.Reason)
		b.WriteByte(' ')
		b.WriteString(strconv.Quote(e.Option))
	default:
		b.WriteString(strconv.Quote(e.Option))
		b.WriteString(": ")
		b.WriteString(e.Reason)
	}
	if e.Suggestion != "" {
		fmt.Fprintf(&b, "; did you mean %q?", e.Suggestion)
	}
	return b.String()
}

// SplitLine splits a jcmd command line into words the way HotSpot does: the command name ends at the
// first white space (CmdLine, diagnosticFramework.cpp); the arguments are separated by spaces only
// (DCmdArgIter's delimiter), and a quoted part ('a b' or "a b", closed by the same quote not preceded
// by a backslash) may hold spaces. The command name comes first; quotes are kept, so that Check sees
// what the JVM's parser will. Several commands in one request (separated by newlines) are an error:
// split them first.
func SplitLine(line string) ([]string, error) {
	if strings.ContainsAny(line, "\n\x00") {
		return nil, errors.New("split command line: it holds a newline or NUL; send one command per line")
	}
	line = strings.TrimLeft(line, " \t\v\f\r")
	if line == "" {
		return nil, nil
	}
	end := strings.IndexAny(line, " \t\v\f\r")
	if end < 0 {
		return []string{line}, nil
	}
	words := []string{line[:end]}
	rest := strings.TrimLeft(line[end:], " \t\v\f\r")
	for {
		rest = strings.TrimLeft(rest, " ")
		if rest == "" {
			return words, nil
		}
		i := 0
		for i < len(rest) && rest[i] != ' ' {
			if q := rest[i]; q == '"' || q == '\'' {
				j, ok := closingQuote(rest, i)
				if !ok {
					return nil, fmt.Errorf("split command line: unterminated %c quote in %q", q, excerpt(rest))
				}
				i = j
			}
			i++
		}
		words = append(words, rest[:i])
		rest = rest[i:]
	}
}

// closingQuote returns the index of the quote that closes the one at s[open]: the next one of the
// same kind not preceded by a backslash (the backslash itself stays part of the text).
func closingQuote(s string, open int) (int, bool) {
	for j := open + 1; j < len(s); j++ {
		if s[j] == s[open] && s[j-1] != '\\' {
			return j, true
		}
	}
	return 0, false
}

// arg is one word of a command line split into key and value like the JVM does.
type arg struct {
	key, value string
	hasValue   bool
}

// parseArg reads "key", "key=value" and their quoted forms ('key'='a b', key="a b"): a quote ends the
// key or the value it starts in, and the word must end there too (jdk.jfr's ArgumentParser.readText;
// HotSpot's DCmdArgIter reads quotes the same way but does not insist on the end, which only matters
// for words no one means to write).
func parseArg(word string) (arg, error) {
	var a arg
	key, pos, err := readPart(word, 0, true)
	if err != nil {
		return a, err
	}
	a.key = key
	if pos < len(word) && word[pos] == '=' {
		a.hasValue = true
		a.value, pos, err = readPart(word, pos+1, false)
		if err != nil {
			return a, err
		}
	}
	if pos < len(word) {
		return a, fmt.Errorf("unexpected %q after a closing quote", word[pos:])
	}
	return a, nil
}

func readPart(s string, pos int, key bool) (string, int, error) {
	var b strings.Builder
	for pos < len(s) && (!key || s[pos] != '=') {
		if q := s[pos]; q == '"' || q == '\'' {
			j, ok := closingQuote(s, pos)
			if !ok {
				return "", 0, fmt.Errorf("unterminated %c quote", q)
			}
			b.WriteString(s[pos+1 : j])
			return b.String(), j + 1, nil
		}
		b.WriteByte(s[pos])
		pos++
	}
	return b.String(), pos, nil
}

// Check validates the words that follow the command name on a jcmd line (e.g. ["name=t1",
// "path-to-gc-roots=true"]) the way the JVM's parser will, before anything is sent. It returns
// *OptionError for an unknown option (with the closest known name), a bad value for the option's type,
// a repeated option, a missing mandatory argument (also where JDK 25's JFR parser forgets to insist:
// JFR.stop without name, JFR.view without a view), too many positional arguments ("unknown
// argument"), and a few mistakes the JVM accepts silently or only warns about:
//
//   - an unquoted positional argument with "=" in it, which HotSpot cuts at the "=" (GC.heap_dump
//     /tmp/a=b.hprof writes /tmp/a): quote the word;
//   - a JFR.start option that is neither an option, a .jfc control of this JDK nor an event setting
//     (<event>#<setting>=<value>), on which JFR.start only prints a warning and does nothing;
//   - JFR.start values JFR refuses only when it runs: a numeric name, a duration or delay under 1s,
//     a .jfc control value outside its choices or a bad timespan.
//
// Where HotSpot is laxer than the types it prints (a MEMORY SIZE of "10q" is 10 bytes to it), Check
// follows the type.
func (c *Command) Check(words []string) error {
	java := jfrJavaParsed(c.Name)
	if len(c.Arguments)+len(c.Options)+len(c.Controls) == 0 && !c.EventSettings {
		if len(words) > 0 {
			return &OptionError{Command: c.Name, Option: words[0], Reason: "takes no arguments"}
		}
		return nil
	}
	seen := map[string]bool{}
	b := binder{c: c, java: java}
	customJFC := false
	var extended []arg // JFR.start words that are not its own options
	for _, w := range words {
		o, a, positional, err := b.bind(w)
		if err != nil {
			return err
		}
		if o == nil {
			if c.EventSettings || len(c.Controls) > 0 {
				extended = append(extended, a)
				continue
			}
			return c.unknown(a.key, len(c.Arguments) > 0)
		}
		if seen[o.Name] && !o.Multiple {
			return &OptionError{Command: c.Name, Option: o.Name, Reason: "given more than once"}
		}
		seen[o.Name] = true
		if reason := checkValue(o.Type, a.value, a.hasValue, java); reason != "" {
			return &OptionError{Command: c.Name, Option: o.Name, Reason: reason}
		}
		if positional {
			continue
		}
		if c.Name == "JFR.start" {
			if reason := checkJFRStart(o.Name, a.value); reason != "" {
				return &OptionError{Command: c.Name, Option: o.Name, Reason: reason}
			}
			if o.Name == "settings" && !standardJFC(a.value) {
				customJFC = true
			}
		}
	}
	for _, a := range extended {
		if err := c.checkExtended(a, customJFC); err != nil {
			return err
		}
	}
	// A mandatory argument or option with a default has a value without one given in HotSpot's parser
	// (DCmdParser::check asks for a value, which the default is: VM.classloaders' fold, JDK 11-21);
	// jdk.jfr's own parser asks for the option itself.
	defaulted := func(o Option) bool { return o.Default != "" && !java }
	for _, o := range c.Arguments {
		if o.Required && !defaulted(o) && !seen[o.Name] {
			return &OptionError{Command: c.Name, Option: o.Name, Reason: "missing mandatory argument"}
		}
	}
	for _, o := range c.Options {
		if o.Required && !defaulted(o) && !seen[o.Name] {
			return &OptionError{Command: c.Name, Option: o.Name, Reason: "missing mandatory option"}
		}
	}
	return nil
}

// binder assigns the words of a command line to a command's arguments and options the way the JVM
// reads them.
type binder struct {
	c       *Command
	java    bool // parsed by jdk.jfr's ArgumentParser (JFR commands), else by HotSpot's DCmdParser
	nextArg int
}

// bind returns the argument or option that word w sets (nil: none of the command's own; JFR.start's
// .jfc controls and event settings are left to the caller), the word as key and value, and whether it
// filled a positional argument. A word the JVM would read differently from what it says is an
// *OptionError.
func (b *binder) bind(w string) (*Option, arg, bool, error) {
	c := b.c
	a, err := parseArg(w)
	if err != nil {
		return nil, a, false, &OptionError{Command: c.Name, Option: w, Reason: err.Error()}
	}
	if a.key == "" {
		return nil, a, false, &OptionError{Command: c.Name, Option: w, Reason: "empty option name"}
	}
	if b.java && !a.hasValue && b.nextArg < len(c.Arguments) {
		// jdk.jfr fills positional arguments with bare words before it looks at option names.
		o := &c.Arguments[b.nextArg]
		b.nextArg++
		a.value, a.hasValue = a.key, true
		return o, a, true, nil
	}
	o := c.option(a.key)
	if o != nil || b.java || b.nextArg >= len(c.Arguments) {
		return o, a, false, nil
	}
	o = &c.Arguments[b.nextArg]
	b.nextArg++
	if a.hasValue {
		if s := closest(a.key, c.optionNames()); s != "" {
			return nil, a, false, &OptionError{Command: c.Name, Option: a.key, Suggestion: s, Reason: "unknown option"}
		}
		reason := fmt.Sprintf("the JVM would take only %q as <%s>; quote the whole word", a.key, o.Name)
		return nil, a, false, &OptionError{Command: c.Name, Option: w, Reason: reason}
	}
	if strings.HasPrefix(a.key, "-") {
		if s := closest(a.key, c.optionNames()); s != "" {
			return nil, a, false, &OptionError{Command: c.Name, Option: a.key, Suggestion: s, Reason: "unknown option"}
		}
	}
	a.value, a.hasValue = a.key, true
	return o, a, true, nil
}

func (c *Command) optionNames() []string {
	names := make([]string, 0, len(c.Options)+len(c.Controls))
	for _, o := range c.Options {
		names = append(names, o.Name)
	}
	for _, o := range c.Controls {
		names = append(names, o.Name)
	}
	return names
}

func (c *Command) unknown(key string, hasArgs bool) error {
	e := &OptionError{Command: c.Name, Option: key, Reason: "unknown option", Suggestion: closest(key, c.optionNames())}
	if hasArgs && e.Suggestion == "" {
		e.Reason = "unknown argument" // every positional argument is taken
	}
	return e
}

// checkExtended checks a JFR.start word that is not one of its options: an event setting, a .jfc
// control, or, with a .jfc file of the user's own, anything that is not a misspelt option.
func (c *Command) checkExtended(a arg, customJFC bool) error {
	if strings.Contains(a.key, "#") {
		ev, setting, _ := strings.Cut(strings.TrimPrefix(a.key, "+"), "#")
		if ev == "" || setting == "" || strings.Contains(setting, "#") {
			return &OptionError{Command: c.Name, Option: a.key, Reason: "an event setting is <event>#<setting>=<value>"}
		}
		if !a.hasValue {
			return &OptionError{Command: c.Name, Option: a.key, Reason: "an event setting needs a value: <event>#<setting>=<value>"}
		}
		return nil
	}
	for i := range c.Controls {
		if ctl := &c.Controls[i]; ctl.Name == a.key {
			if reason := checkControl(ctl, a.value, a.hasValue); reason != "" {
				return &OptionError{Command: c.Name, Option: a.key, Reason: reason}
			}
			return nil
		}
	}
	s := closest(a.key, c.optionNames())
	if customJFC && s == "" {
		return nil // may be an option of the user's .jfc
	}
	return &OptionError{Command: c.Name, Option: a.key, Suggestion: s, Reason: "unknown option"}
}

func standardJFC(s string) bool {
	switch s {
	case "default", "profile", "none", "default.jfc", "profile.jfc":
		return true
	}
	return false
}

// checkJFRStart refuses values JFR.start accepts as syntax but refuses when it runs (DCmdStart.execute).
func checkJFRStart(name, value string) string {
	switch name {
	case "name":
		if _, err := strconv.ParseInt(value, 10, 32); err == nil {
			return "a recording name cannot be numeric (it would be mistaken for an id)"
		}
	case "duration", "delay":
		if d, ok := nanotime(value, true); ok && d < int64(time.Second) {
			return "must be at least 1s"
		}
	case "settings":
		if value == "" {
			return "no settings given; use settings=none to start without any"
		}
	}
	return ""
}

// checkControl checks the value of a .jfc control the way jdk.jfr's JFCModel does.
func checkControl(o *Option, value string, hasValue bool) string {
	if !hasValue {
		return "needs a value"
	}
	switch {
	case len(o.Values) > 0:
		for _, v := range o.Values {
			if v == value {
				return ""
			}
		}
		return fmt.Sprintf("invalid value %q: want one of %s", value, strings.Join(o.Values, ", "))
	case o.Type == "timespan":
		if !jfcTimespan(value) {
			return fmt.Sprintf("invalid timespan %q: a number and a unit (ns, us, ms, s, m, h, d), e.g. 20ms", value)
		}
	}
	return ""
}

// jfcTimespan reports whether s is a timespan to jdk.jfr (jfc/model/Utilities.parseTimespan): an
// integer followed by a unit, optionally separated by white space.
func jfcTimespan(s string) bool {
	for _, u := range []string{"ns", "us", "ms", "s", "m", "h", "d"} {
		if strings.HasSuffix(s, u) {
			_, err := strconv.ParseInt(strings.TrimSpace(s[:len(s)-len(u)]), 10, 64)
			return err == nil
		}
	}
	return false
}

// checkValue checks value against a DCmd type and returns what is wrong with it, or "". java selects
// jdk.jfr's parser, which differs from HotSpot's in a few corners (see jfrJavaParsed).
func checkValue(typ, value string, hasValue, java bool) string {
	switch typ {
	case "BOOLEAN":
		if java {
			if value == "true" || value == "false" {
				return ""
			}
			if !hasValue {
				return "needs a value: =true or =false"
			}
		} else if !hasValue || value == "" || strings.EqualFold(value, "true") || strings.EqualFold(value, "false") {
			return "" // HotSpot: a bare flag is true
		}
		return fmt.Sprintf("invalid BOOLEAN value %q: want true or false", value)
	case "NANOTIME":
		if !hasValue {
			return "needs a value, e.g. =10s"
		}
		if _, ok := nanotime(value, java); !ok {
			return fmt.Sprintf("invalid NANOTIME value %q: an integer and a unit (ns, us, ms, s, m, h or d), e.g. 10s; 0 needs no unit", value)
		}
	case "MEMORY SIZE":
		if !hasValue {
			return "needs a value, e.g. =100M"
		}
		if _, ok := memorySize(value); !ok {
			return fmt.Sprintf("invalid MEMORY SIZE value %q: bytes, or an integer with k, m or g, e.g. 512k, 100M, 1g", value)
		}
	case "INT", "JLONG", "LONG":
		if !hasValue {
			return "needs a value"
		}
		n, err := strconv.ParseInt(value, 10, 64)
		switch {
		case err != nil:
			return fmt.Sprintf("invalid %s value %q: want an integer", typ, value)
		case java && n < 0:
			return fmt.Sprintf("invalid %s value %q: must not be negative", typ, value)
		}
	}
	return ""
}

// nanotime parses a NANOTIME value: an integer and one of the units ns, us, ms, s, m, h, d (both
// parsers match units case-sensitively); a unit may be left out only for 0. jdk.jfr takes a leading
// minus, HotSpot does not.
func nanotime(s string, java bool) (int64, bool) {
	i := 0
	if java && strings.HasPrefix(s, "-") {
		i = 1
	}
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	n, err := strconv.ParseInt(s[:i], 10, 64)
	if err != nil {
		return 0, false
	}
	unit := s[i:]
	if unit == "" {
		return 0, n == 0
	}
	d, ok := nanotimeUnit(unit)
	if !ok {
		return 0, false
	}
	if n > math.MaxInt64/int64(d) || n < math.MinInt64/int64(d) {
		return 0, false
	}
	return n * int64(d), true
}

// nanotimeUnit is the length of a NANOTIME unit.
func nanotimeUnit(unit string) (time.Duration, bool) {
	switch unit {
	case "ns":
		return time.Nanosecond, true
	case "us":
		return time.Microsecond, true
	case "ms":
		return time.Millisecond, true
	case "s":
		return time.Second, true
	case "m":
		return time.Minute, true
	case "h":
		return time.Hour, true
	case "d":
		return 24 * time.Hour, true
	}
	return 0, false
}

// memorySize parses a MEMORY SIZE value: a non-negative integer of bytes, optionally followed by k, m
// or g (or kb, mb, gb), in any case.
func memorySize(s string) (int64, bool) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	n, err := strconv.ParseInt(s[:i], 10, 64)
	if err != nil {
		return 0, false
	}
	var shift uint
	switch strings.ToLower(s[i:]) {
	case "":
	case "k", "kb":
		shift = 10
	case "m", "mb":
		shift = 20
	case "g", "gb":
		shift = 30
	default:
		return 0, false
	}
	if n > math.MaxInt64>>shift {
		return 0, false
	}
	return n << shift, true
}

// closest returns the candidate that name most likely misspells: the same name in another case, the
// only candidate that name begins (-d for -date), or one within an edit distance (transpositions count
// once) of a third of the name's length, at least 1; names of one or two characters are too short
// for the distance to mean anything.
func closest(name string, candidates []string) string {
	n := utf8.RuneCountInString(name)
	best, bestD := "", max(1, n/3)+1
	if n < 3 {
		bestD = 1
	}
	prefixed := ""
	for _, c := range candidates {
		if strings.EqualFold(c, name) {
			return c
		}
		if n >= 2 && strings.HasPrefix(c, name) {
			if prefixed != "" {
				prefixed = "\x00" // ambiguous
			} else {
				prefixed = c
			}
		}
		if d := osaDistance(strings.ToLower(name), strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" && prefixed != "\x00" {
		return prefixed
	}
	return best
}

// osaDistance is the optimal string alignment distance (Levenshtein plus adjacent transpositions).
func osaDistance(a, b string) int {
	if len(a) > 256 || len(b) > 256 {
		return math.MaxInt32
	}
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// Recording is one JFR recording as JFR.check lists it.
type Recording struct {
	ID          int
	Name        string
	State       string // new, delayed, running, stopped, closed
	Duration    time.Duration
	MaxAge      time.Duration
	MaxSize     int64  // bytes, as JFR.check rounds it ("250.0MB")
	Destination string // filename=..., where printed (JDK 17 and 25 do not)
	// Settings are the event settings ("jdk.ThreadSleep#threshold" -> "20 ms") listed by
	// JFR.check verbose=true; nil without verbose.
	Settings map[string]string
}

var (
	recordingLine = &lazyre.Regexp{Expr: `^Recording (\d+): name=(.*) \((\w+)\)$`}
	recordingAttr = &lazyre.Regexp{Expr: ` (duration|maxsize|maxage|filename)=(\S+)$`}
	settingLine   = &lazyre.Regexp{Expr: `^ .* \(([^()\s]+)\)$`}
	settingKey    = &lazyre.Regexp{Expr: `^[A-Za-z][\w-]*=`}
)

// ParseJFRCheck parses JFR.check (jdk.jfr.internal.dcmd.DCmdCheck): a line "Recording <id>:
// name=<name>[ duration=<t>][ maxsize=<size>][ maxage=<t>] (<state>)" per recording, and with
// verbose=true each event type's " <label> (<event name>)" followed by "   [<setting>=<value>,...]".
// "No available recordings." gives an empty list; "Could not find <name>." an error.
func ParseJFRCheck(out string) ([]Recording, error) {
	recs := []Recording{}
	lines := splitLines(out)
	event := ""
	for _, l := range lines {
		l = strings.TrimRight(l, " \t")
		if m := recordingLine.Get().FindStringSubmatch(l); m != nil {
			id, err := strconv.Atoi(m[1])
			if err != nil {
				return nil, fmt.Errorf("parse JFR.check: recording id %q: %w", m[1], err)
			}
			r := Recording{ID: id, State: m[3]}
			rest := m[2]
			seen := map[string]bool{}
			for {
				am := recordingAttr.Get().FindStringSubmatchIndex(rest)
				if am == nil {
					break
				}
				key, val := rest[am[2]:am[3]], rest[am[4]:am[5]]
				if seen[key] {
					break
				}
				seen[key] = true
				switch key {
				case "duration":
					r.Duration, _ = parseTimespan(val)
				case "maxage":
					r.MaxAge, _ = parseTimespan(val)
				case "maxsize":
					r.MaxSize, _ = parseCompactBytes(val)
				case "filename":
					r.Destination = val
				}
				rest = rest[:am[0]]
			}
			r.Name = rest
			recs = append(recs, r)
			event = ""
			continue
		}
		if len(recs) == 0 {
			continue
		}
		r := &recs[len(recs)-1]
		if m := settingLine.Get().FindStringSubmatch(l); m != nil && !strings.HasPrefix(l, "  ") {
			event = m[1]
			continue
		}
		if t := strings.TrimSpace(l); event != "" && strings.HasPrefix(t, "[") && strings.HasSuffix(t, "]") {
			if r.Settings == nil {
				r.Settings = map[string]string{}
			}
			for _, kv := range splitSettings(t[1 : len(t)-1]) {
				k, v, _ := strings.Cut(kv, "=")
				r.Settings[event+"#"+k] = v
			}
			event = ""
		}
	}
	if len(recs) == 0 {
		t := strings.TrimSpace(out)
		if strings.HasPrefix(t, "No available recordings") || t == "" {
			return recs, nil
		}
		return nil, fmt.Errorf("JFR.check: %s", firstLine(t))
	}
	return recs, nil
}

// splitSettings splits "threshold=20 ms,stackTrace=true" at the commas that start a new setting, so
// that values with commas (method filters) stay whole.
func splitSettings(s string) []string {
	var parts []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == ',' && settingKey.Get().MatchString(s[i+1:]) {
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	return append(parts, s[start:])
}

// parseTimespan parses jdk.jfr's ValueFormatter.formatTimespan output ("1h", "10m", "1 h", "20 ms").
func parseTimespan(s string) (time.Duration, bool) {
	s = strings.TrimSpace(s)
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	n, err := strconv.ParseInt(s[:i], 10, 64)
	if err != nil {
		return 0, false
	}
	u, ok := nanotimeUnit(strings.TrimSpace(s[i:]))
	if !ok || n > math.MaxInt64/int64(u) {
		return 0, false
	}
	return time.Duration(n) * u, true
}

// parseCompactBytes parses ValueFormatter.formatBytesCompact output: "100" (bytes) or "250.0MB"
// (kB, MB, GB, ... of 1024), rounded to what was printed.
func parseCompactBytes(s string) (int64, bool) {
	num, unit := s, ""
	if strings.HasSuffix(s, "B") && len(s) >= 2 {
		num, unit = s[:len(s)-2], s[len(s)-2:len(s)-1]
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	exp := 0
	if unit != "" {
		if exp = strings.Index("kMGTPE", unit) + 1; exp == 0 {
			return 0, false
		}
	}
	v := f * math.Pow(1024, float64(exp))
	if v >= math.MaxInt64 {
		return 0, false
	}
	return int64(math.Round(v)), true
}

var (
	startedLine   = &lazyre.Regexp{Expr: `(?m)^(?:Started recording (\d+)\.|Recording (\d+) scheduled to start in )`}
	startNameLine = &lazyre.Regexp{Expr: `JFR\.(?:dump|stop) name=(\\".*?\\"|\S+)`}
)

// ParseJFRStart parses JFR.start (DCmdStart.execute): "Started recording <id>." or "Recording <id>
// scheduled to start in <t>.", after any warnings, and the name from the "Use jcmd <pid> JFR.dump
// name=<name> ..." hint when there is one (an unnamed recording is named after its id; a name with a
// space is printed as \"my rec\"). A time-bound recording with a file names its file instead, and name
// is "". Output without a started recording is the JVM's refusal, returned as an error.
func ParseJFRStart(out string) (id int, name string, err error) {
	m := startedLine.Get().FindStringSubmatch(out)
	if m == nil {
		t := strings.TrimSpace(out)
		if t == "" {
			return 0, "", errors.New("JFR.start: no output")
		}
		return 0, "", fmt.Errorf("JFR.start: %s", strings.Join(strings.Fields(t), " "))
	}
	idText := m[1] + m[2]
	id, err = strconv.Atoi(idText)
	if err != nil {
		return 0, "", fmt.Errorf("JFR.start: recording id %q: %w", idText, err)
	}
	if n := startNameLine.Get().FindStringSubmatch(out); n != nil {
		name = n[1]
		if len(name) >= 4 && strings.HasPrefix(name, `\"`) && strings.HasSuffix(name, `\"`) {
			name = name[2 : len(name)-2]
		}
	}
	return id, name, nil
}

// DumpedPath extracts the file a command reports having written: JFR.dump and JFR.stop ("Dumped
// recording "t1", 1.6 MB written to:\n\n<path>"), GC.heap_dump ("Dumping heap to <path> ..." followed
// by "Heap dump file created [...]"), Thread.dump_to_file ("Created <path>") and System.dump_map
// ("Memory map dumped to "<path>"."). ok is false when the output names no file that was written: a
// failed heap dump ("Unable to create ..."), or JFR.start's "The result will be written to:", which
// names a file yet to come. The path is as the JVM sees it (its mount namespace, its cwd for
// relative names).
func DumpedPath(out string) (path string, ok bool) {
	if start, p, ok := matchWrittenTo(out); ok {
		if !strings.HasSuffix(strings.TrimRight(out[:start], " "), "will be") {
			if p := strings.TrimSpace(p); p != "" && p != "N/A" {
				return p, true
			}
		}
	}
	if p, ok := matchHeapDump(out); ok && strings.Contains(out, "Heap dump file created") {
		return p, true
	}
	if p, ok := matchCreated(out); ok {
		return p, true
	}
	if p, ok := matchDumpedTo(out); ok {
		return p, true
	}
	return "", false
}

// Debugging is the JDWP agent that VM.start_java_debugging started.
type Debugging struct{ Transport, Address string }

// ParseDebugging parses VM.start_java_debugging (JDK 12-23 with -agentlib:jdwp=...,onjcmd=y):
// "Debugging has been started." (or "Debugging is already active.") with "Transport : <t>" and
// "Address : <a>" lines; the address is the configured one, so port 0 stays 0. "Debugging has not been
// started: <reason>" and anything else are errors.
func ParseDebugging(out string) (*Debugging, error) {
	t := strings.TrimSpace(out)
	if strings.HasPrefix(t, "Debugging has not been started") {
		reason := strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(t, "Debugging has not been started"), ":"))
		if reason == "" {
			reason = "no reason given"
		}
		return nil, fmt.Errorf("debugging not started: %s", firstLine(reason))
	}
	if !strings.HasPrefix(t, "Debugging has been started") && !strings.HasPrefix(t, "Debugging is already active") {
		if t == "" {
			return nil, errors.New("VM.start_java_debugging: no output")
		}
		return nil, fmt.Errorf("VM.start_java_debugging: %s", firstLine(t))
	}
	d := &Debugging{}
	for _, l := range splitLines(t) {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "Transport":
			d.Transport = strings.TrimSpace(v)
		case "Address":
			d.Address = strings.TrimSpace(v)
		}
	}
	return d, nil
}

// Flag is one VM flag from VM.flags.
type Flag struct {
	Name, Type, Value string
	Kind              string // "product", "manageable", "C2 product", ... (VM.flags -all only)
	Origin            string // "default", "ergonomic", "command line", "management", ... (-all only)
}

var flagRow = &lazyre.Regexp{Expr: `^\s*(\S+)\s+(\S+)\s+= ?(.*?)\s*\{([^{}]*)\}\s*\{([^{}]*)\}\s*$`}

// ParseFlags parses VM.flags, both its one-line form of the flags not at their default
// ("-XX:CICompilerCount=2 -XX:+UseG1GC ...", where +/- flags get Type "bool" and the other types are
// not printed) and the table of VM.flags -all ("     bool UseG1GC    = true    {product} {ergonomic}").
func ParseFlags(out string) ([]Flag, error) {
	var flags []Flag
	bad := ""
	for _, l := range splitLines(out) {
		t := strings.TrimSpace(l)
		switch {
		case t == "" || t == "[Global flags]":
		case strings.HasPrefix(t, "-XX:"):
			for _, f := range strings.Fields(t) {
				if !strings.HasPrefix(f, "-XX:") {
					// A ccstr value with spaces (-XX:OnError="a b") is printed unquoted.
					if len(flags) > 0 {
						flags[len(flags)-1].Value += " " + f
					}
					continue
				}
				f = strings.TrimPrefix(f, "-XX:")
				switch {
				case strings.HasPrefix(f, "+"):
					flags = append(flags, Flag{Name: f[1:], Type: "bool", Value: "true"})
				case strings.HasPrefix(f, "-"):
					flags = append(flags, Flag{Name: f[1:], Type: "bool", Value: "false"})
				default:
					name, value, _ := strings.Cut(f, "=")
					flags = append(flags, Flag{Name: name, Value: value})
				}
			}
		default:
			m := flagRow.Get().FindStringSubmatch(l)
			if m == nil {
				if bad == "" {
					bad = t
				}
				continue
			}
			flags = append(flags, Flag{Type: m[1], Name: m[2], Value: m[3], Kind: m[4], Origin: m[5]})
		}
	}
	if len(flags) == 0 && bad != "" {
		return nil, fmt.Errorf("VM.flags: %s", firstLine(bad))
	}
	return flags, nil
}

// ParseProperties parses the java.util.Properties.store format of VM.system_properties and of the
// `properties` attach operation, as Properties.load reads it: # and ! comments, key and value
// separated by '=', ':' or white space, backslash escapes (\t \n \r \f \uXXXX, any other character
// stands for itself) and lines continued by an odd number of trailing backslashes.
func ParseProperties(out string) (map[string]string, error) {
	props := map[string]string{}
	s := out
	for len(s) > 0 {
		line, rest := readNaturalLine(s)
		s = rest
		l := strings.TrimLeft(line, " \t\f")
		if l == "" || l[0] == '#' || l[0] == '!' {
			continue
		}
		// Join continuation lines: an odd number of trailing backslashes continues the line, and the
		// leading white space of the next one is dropped.
		for trailingBackslashes(l)%2 == 1 {
			l = l[:len(l)-1]
			if len(s) == 0 {
				break
			}
			var next string
			next, s = readNaturalLine(s)
			l += strings.TrimLeft(next, " \t\f")
		}
		keyEnd := len(l)
		for i := 0; i < len(l); i++ {
			if l[i] == '\\' {
				i++
				continue
			}
			if c := l[i]; c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\f' {
				keyEnd = i
				break
			}
		}
		v := ""
		if keyEnd < len(l) {
			v = strings.TrimLeft(l[keyEnd:], " \t\f")
			if v != "" && (v[0] == '=' || v[0] == ':') {
				v = strings.TrimLeft(v[1:], " \t\f")
			}
		}
		key, err := unescapeProperty(l[:keyEnd])
		if err != nil {
			return nil, err
		}
		value, err := unescapeProperty(v)
		if err != nil {
			return nil, err
		}
		props[key] = value
	}
	return props, nil
}

// readNaturalLine returns the text up to \n, \r or \r\n, and what follows the terminator.
func readNaturalLine(s string) (string, string) {
	i := strings.IndexAny(s, "\r\n")
	if i < 0 {
		return s, ""
	}
	if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
		return s[:i], s[i+2:]
	}
	return s[:i], s[i+1:]
}

// hex4 reads the four hex digits of a \uXXXX escape at s[i:].
func hex4(s string, i int) (uint64, bool) {
	if i < 0 || i+4 > len(s) {
		return 0, false
	}
	n, err := strconv.ParseUint(s[i:i+4], 16, 16)
	return n, err == nil
}

func trailingBackslashes(s string) int {
	n := 0
	for n < len(s) && s[len(s)-1-n] == '\\' {
		n++
	}
	return n
}

func unescapeProperty(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		if i == len(s) {
			break // a lone trailing backslash is dropped, as by Properties.load
		}
		switch c = s[i]; c {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			n, ok := hex4(s, i+1)
			if !ok {
				return "", fmt.Errorf("parse properties: malformed \\uxxxx encoding in %q", excerpt(s))
			}
			i += 4
			r := rune(n)
			// Characters outside the BMP are stored as a surrogate pair of \u escapes.
			if r >= 0xD800 && r < 0xDC00 && i+2 < len(s) && s[i+1] == '\\' && s[i+2] == 'u' {
				if lo, ok := hex4(s, i+3); ok && lo >= 0xDC00 && lo < 0xE000 {
					r = (r-0xD800)<<10 + (rune(lo) - 0xDC00) + 0x10000
					i += 6
				}
			}
			b.WriteRune(r)
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// ThreadDump is the output of Thread.print or of the threaddump attach operation.
type ThreadDump struct {
	Header    string // the time stamp and "Full thread dump ..." lines
	Threads   []Thread
	Deadlocks string // the raw deadlock report ("Found one Java-level deadlock: ... Found 1 deadlock."), if any
}

// Thread is one thread of a thread dump.
type Thread struct {
	Name       string
	Number     int // #n, -1 for threads without one (GC and VM threads)
	Daemon     bool
	Priority   int // prio=, -1 if absent
	OSPriority int // os_prio=
	TID, NID   string
	Status     string   // text after nid=..., e.g. "waiting on condition", "runnable", "in Object.wait()"
	State      string   // java.lang.Thread.State, e.g. "TIMED_WAITING (sleeping)"; "" for VM threads
	Frames     []string // "java.lang.Thread.sleep(java.base@17.0.15/Native Method)", innermost first
	Locks      []string // the lock lines under the frames, e.g. "locked <0x...> (a java.lang.Object)", "waiting to lock <0x...> (...)"
	// Synchronizers are the "Locked ownable synchronizers" (Thread.print -l), e.g. "<0x...> (a
	// java.util.concurrent.locks.ReentrantLock$NonfairSync)".
	Synchronizers []string
}

var (
	threadAttrs = &lazyre.Regexp{Expr: `^ (?:#(\d+) )?(?:\[\d+\] )?(daemon )?(?:prio=(-?\d+) )?os_prio=(-?\d+) .*?tid=(\S+) nid=(\S+)(.*)$`}
	stackAddr   = &lazyre.Regexp{Expr: `\s*\[0x[0-9a-fA-F]+\]\s*$`}
)

// ParseThreadDump parses a HotSpot thread dump (Thread.print, threaddump; JavaThread::print_on and
// friends): a header, per thread a line `"<name>" #<n> [<os id>] daemon prio=<p> os_prio=<p> cpu=...
// elapsed=... tid=<tid> nid=<nid> <status>  [<addr>]` (JDK 19+ print the os thread id in brackets and
// nid in decimal), "java.lang.Thread.State: ...", "\tat <frame>" and "\t- <lock>" lines, and with -l
// the "Locked ownable synchronizers"; then VM threads without a Java state, "JNI global refs" and a
// deadlock report if HotSpot found one.
func ParseThreadDump(out string) (*ThreadDump, error) {
	td := &ThreadDump{}
	lines := splitLines(out)
	var header []string
	var cur *Thread
	inSync := false
	deadlock := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "Found one Java-level deadlock") || strings.HasPrefix(l, "Found a total of") {
			deadlock = i
			break
		}
		if strings.HasPrefix(l, `"`) {
			if t, ok := parseThreadLine(l); ok {
				td.Threads = append(td.Threads, t)
				cur = &td.Threads[len(td.Threads)-1]
				inSync = false
				continue
			}
		}
		if cur == nil {
			if len(td.Threads) == 0 && len(header) < 50 && !strings.HasPrefix(l, "Threads class SMR info") {
				header = append(header, l)
			}
			continue
		}
		t := strings.TrimSpace(l)
		switch {
		case t == "":
		case strings.HasPrefix(t, "java.lang.Thread.State:"):
			cur.State = strings.TrimSpace(strings.TrimPrefix(t, "java.lang.Thread.State:"))
		case strings.HasPrefix(t, "Locked ownable synchronizers:"):
			inSync = true
		case strings.HasPrefix(l, "\tat "):
			cur.Frames = append(cur.Frames, strings.TrimPrefix(l, "\tat "))
		case strings.HasPrefix(l, "\t- "):
			v := strings.TrimPrefix(l, "\t- ")
			switch {
			case inSync && v != "None":
				cur.Synchronizers = append(cur.Synchronizers, v)
			case !inSync:
				cur.Locks = append(cur.Locks, v)
			}
		case !strings.HasPrefix(l, " ") && !strings.HasPrefix(l, "\t"):
			cur = nil // "JNI global refs: ...", or text after the threads
		}
	}
	if deadlock >= 0 {
		// HotSpot prints the deadlock report last (one section per deadlock, then "Found N deadlock(s).").
		td.Deadlocks = strings.TrimSpace(strings.Join(lines[deadlock:], "\n"))
	}
	// The header is the first paragraph: the time stamp and "Full thread dump ...".
	var h []string
	for _, l := range header {
		if strings.TrimSpace(l) == "" {
			if len(h) > 0 {
				break
			}
			continue
		}
		h = append(h, l)
	}
	td.Header = strings.Join(h, "\n")
	if len(td.Threads) == 0 {
		return nil, fmt.Errorf("parse thread dump: no threads in %q", excerpt(out))
	}
	return td, nil
}

// parseThreadLine parses a thread's first line. The name is printed as is, quotes included, so it
// ends at the last quote that is followed by the attributes.
func parseThreadLine(l string) (Thread, bool) {
	for q := strings.LastIndexByte(l, '"'); q > 0; q = strings.LastIndexByte(l[:q], '"') {
		m := threadAttrs.Get().FindStringSubmatch(l[q+1:])
		if m == nil {
			continue
		}
		t := Thread{Name: l[1:q], Number: -1, Priority: -1, Daemon: m[2] != "", TID: m[5], NID: m[6]}
		if m[1] != "" {
			t.Number = atoiOr(m[1], -1)
		}
		if m[3] != "" {
			t.Priority = atoiOr(m[3], -1)
		}
		t.OSPriority = atoiOr(m[4], 0)
		t.Status = strings.TrimSpace(stackAddr.Get().ReplaceAllString(m[7], ""))
		return t, true
	}
	return Thread{}, false
}

func atoiOr(s string, def int) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return def
	}
	return n
}

func splitLines(s string) []string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.Split(s, "\n")
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(l)
}

// excerpt shortens s for an error message.
func excerpt(s string) string {
	if len(s) <= 80 {
		return s
	}
	cut := 80
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
