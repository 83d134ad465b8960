package jcmd

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// JFRStart are the options of JFR.start. Zero values are left out (the JVM's defaults apply).
type JFRStart struct {
	Name     string
	Settings []string // "default", "profile", "none" or .jfc paths (in the JVM's file system)
	Delay    time.Duration
	Duration time.Duration
	Filename string // as the JVM sees it; relative to its cwd; %p and %t are expanded by the JVM
	MaxAge   time.Duration
	MaxSize  int64 // bytes
	// Disk, DumpOnExit and PathToGCRoots are tri-state: nil leaves the JVM's default.
	Disk          *bool
	DumpOnExit    *bool
	PathToGCRoots *bool
	// Options are .jfc control options (e.g. "memory-leaks": "gc-roots") and event settings
	// ("jdk.OldObjectSample#enabled": "true"), JDK 17+.
	Options map[string]string
}

// JFRDump are the options of JFR.dump.
type JFRDump struct {
	Name          string // empty: every recording
	Filename      string
	PathToGCRoots *bool
	Begin, End    string // as the JVM accepts them: ISO-8601 time, time of day, or negative offsets ("-1h")
	MaxAge        time.Duration
	MaxSize       int64
}

// Bool returns a pointer to v, for the tri-state options.
func Bool(v bool) *bool { return &v }

// Line renders the options as a JFR.start command line.
func (o JFRStart) Line() (string, error) { return o.build().line() }

func (o JFRStart) build() *lineBuilder {
	b := &lineBuilder{}
	b.cmd("JFR.start")
	b.str("name", o.Name)
	for _, s := range o.Settings {
		b.str("settings", s)
	}
	b.dur("delay", o.Delay)
	b.dur("duration", o.Duration)
	b.str("filename", o.Filename)
	b.dur("maxage", o.MaxAge)
	b.size("maxsize", o.MaxSize)
	b.boolp("disk", o.Disk)
	b.boolp("dumponexit", o.DumpOnExit)
	b.boolp("path-to-gc-roots", o.PathToGCRoots)
	keys := make([]string, 0, len(o.Options))
	for k := range o.Options {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b.str(k, o.Options[k])
	}
	return b
}

// Line renders the options as a JFR.dump command line.
func (o JFRDump) Line() (string, error) { return o.build().line() }

func (o JFRDump) build() *lineBuilder {
	b := &lineBuilder{}
	b.cmd("JFR.dump")
	b.str("name", o.Name)
	b.str("filename", o.Filename)
	b.boolp("path-to-gc-roots", o.PathToGCRoots)
	b.str("begin", o.Begin)
	b.str("end", o.End)
	b.dur("maxage", o.MaxAge)
	b.size("maxsize", o.MaxSize)
	return b
}

// StartJFR starts a recording and returns it as JFR.check then reports it.
func (c *Client) StartJFR(ctx context.Context, o JFRStart) (*Recording, error) {
	if len(o.Options) > 0 {
		// Before JDK 17 (JDK-8265271) the JVM answers "Unknown argument" without saying why.
		if feature, err := c.Feature(ctx); err == nil && feature < 17 {
			return nil, fmt.Errorf("jcmd: JFR.start takes .jfc options and event settings only from JDK 17; JVM %d runs JDK %d: use settings=<file.jfc>", c.Target().PID, feature)
		}
	}
	out, _, err := c.runWriting(ctx, o.build(), true)
	if err != nil {
		return nil, err
	}
	id, name, err := ParseJFRStart(out)
	if err != nil {
		return nil, fmt.Errorf("JFR.start: %w: %s", err, strings.TrimSpace(out))
	}
	recs, err := c.CheckJFR(ctx, "")
	if err == nil {
		for i := range recs {
			if recs[i].ID == id {
				return &recs[i], nil
			}
		}
	}
	return &Recording{ID: id, Name: name}, nil
}

// DumpJFR writes recording data to a file (JFR.dump) and returns where the JVM wrote it.
func (c *Client) DumpJFR(ctx context.Context, o JFRDump) (*File, error) {
	out, notes, err := c.runWriting(ctx, o.build(), true)
	if err != nil {
		return nil, err
	}
	return withNotes(c.writtenFile(ctx, out, o.Filename, "JFR.dump"))(notes)
}

// StopJFR stops a recording (JFR.stop); with a filename the data is written there first, otherwise
// it is discarded. The returned File is nil without a filename.
func (c *Client) StopJFR(ctx context.Context, name, filename string) (*File, error) {
	var b lineBuilder
	b.cmd("JFR.stop")
	b.str("name", name)
	b.str("filename", filename)
	out, notes, err := c.runWriting(ctx, &b, true)
	if err != nil {
		return nil, err
	}
	// Failures come back with status 0 and a message ("Recording must be started before it can be
	// stopped.", "Could not find ..."); success always says "Stopped recording".
	if !strings.Contains(out, "Stopped recording") {
		return nil, fmt.Errorf("JFR.stop: %s", strings.TrimSpace(out))
	}
	if filename == "" {
		return nil, nil
	}
	return withNotes(c.writtenFile(ctx, out, filename, "JFR.stop"))(notes)
}

// CheckJFR lists recordings (JFR.check); name selects one. As JFR's first use in a JVM, it goes through the
// repository guard of PrepareWrites like the other JFR commands.
func (c *Client) CheckJFR(ctx context.Context, name string) ([]Recording, error) {
	var b lineBuilder
	b.cmd("JFR.check")
	b.str("name", name)
	b.str("verbose", "true")
	out, _, err := c.runWriting(ctx, &b, false)
	if err != nil {
		return nil, err
	}
	return ParseJFRCheck(out)
}

// ConfigureJFR sets JFR's global options (JFR.configure), e.g. "repositorypath", "stackdepth"; with
// none it returns the current configuration text.
func (c *Client) ConfigureJFR(ctx context.Context, opts map[string]string) (string, error) {
	var b lineBuilder
	b.cmd("JFR.configure")
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b.str(k, opts[k])
	}
	out, _, err := c.runWriting(ctx, &b, true)
	return out, err
}

// lineBuilder renders key=value options, quoting values with spaces the way the DCmd parser reads
// them.
type lineBuilder struct {
	parts []string
	err   error
}

func (b *lineBuilder) cmd(name string) { b.parts = append(b.parts, name) }

func (b *lineBuilder) str(key, v string) {
	if v == "" {
		return
	}
	if strings.ContainsAny(v, "\n\x00") {
		b.err = fmt.Errorf("jcmd: value of %s contains a newline or NUL", key)
		return
	}
	if strings.ContainsAny(v, " \t'\"") {
		switch {
		case !strings.Contains(v, "'"):
			v = "'" + v + "'"
		case !strings.Contains(v, `"`):
			v = `"` + v + `"`
		default:
			b.err = fmt.Errorf("jcmd: value of %s contains both quote characters", key)
			return
		}
	}
	b.parts = append(b.parts, key+"="+v)
}

func (b *lineBuilder) dur(key string, d time.Duration) {
	if d <= 0 {
		return
	}
	// The DCmd NANOTIME parser takes an integer with a unit: ns, us, ms, s, m, h, d.
	switch {
	case d%(24*time.Hour) == 0:
		b.str(key, strconv.FormatInt(int64(d/(24*time.Hour)), 10)+"d")
	case d%time.Hour == 0:
		b.str(key, strconv.FormatInt(int64(d/time.Hour), 10)+"h")
	case d%time.Minute == 0:
		b.str(key, strconv.FormatInt(int64(d/time.Minute), 10)+"m")
	case d%time.Second == 0:
		b.str(key, strconv.FormatInt(int64(d/time.Second), 10)+"s")
	case d%time.Millisecond == 0:
		b.str(key, strconv.FormatInt(int64(d/time.Millisecond), 10)+"ms")
	default:
		b.str(key, strconv.FormatInt(int64(d), 10)+"ns")
	}
}

func (b *lineBuilder) size(key string, n int64) {
	if n > 0 {
		b.str(key, strconv.FormatInt(n, 10))
	}
}

func (b *lineBuilder) boolp(key string, v *bool) {
	if v != nil {
		b.str(key, strconv.FormatBool(*v))
	}
}

// quoted adds a positional argument, quoted when it has spaces.
func (b *lineBuilder) quoted(v string) {
	if v == "" {
		return
	}
	if strings.Contains(v, "=") {
		// HotSpot's parser cuts a bare word at '=' (GC.heap_dump /tmp/a=b writes /tmp/a).
		b.err = fmt.Errorf("jcmd: %q: a positional argument cannot contain '='", v)
		return
	}
	n := len(b.parts)
	b.str("x", v)
	if len(b.parts) > n {
		b.parts[n] = strings.TrimPrefix(b.parts[n], "x=")
	}
}

func (b *lineBuilder) line() (string, error) { return strings.Join(b.parts, " "), b.err }
