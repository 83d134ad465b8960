package jcmd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jvmkit/jvmkit/attach"
	"github.com/jvmkit/jvmkit/internal/procfs"
)

// File is a file a diagnostic command wrote, named as the JVM sees it and as the caller can reach it.
type File struct {
	Path     string // absolute path in the JVM's mount namespace
	HostPath string // the same file reached through /proc/<pid>/root, usable from the caller's side
	Output   string // what the command printed
	// Notes say what was done to make the path safe before the JVM wrote it (PrepareWrites).
	Notes []string
}

// failureTexts are outputs with status 0 that still mean the command failed (DCmds report many
// errors as text, see the attach reference notes).
var failureTexts = []string{
	"No recordings to dump", "Dump failed", "Could not", "could not", "Unable to", "No available recording",
	"Failed", "does not exist", "Exception", "Error", "not been started",
}

// ReportsFailure reports whether the output of a command that returned status 0 says that it failed:
// diagnostic commands report many errors as text ("Unable to create ...: File exists").
func ReportsFailure(out string) bool {
	for _, f := range failureTexts {
		if strings.Contains(out, f) {
			return true
		}
	}
	return false
}

// writtenFile works out which file a command wrote: the path it reports in its output, or else the
// file name it was given, resolved the way the JVM resolves it.
func (c *Client) writtenFile(ctx context.Context, out, requested, cmd string) (*File, error) {
	feature, _ := c.Feature(ctx)
	expandP, expandT := fileNameExpansion(feature, cmd)
	// JDK 17's JFR uses the file name as a format string for its reply: "x_%p.jfr" is written as it
	// is but reported as "Conversion = 'p'", "%%" is reported as "%". Trust the name given there.
	literalPercent := strings.Contains(requested, "%") && !expandP && !expandT
	if !literalPercent {
		if p, ok := DumpedPath(out); ok {
			return c.fileAt(ctx, p, out, false, false)
		}
		if ReportsFailure(out) {
			return nil, fmt.Errorf("%s: %s", cmd, strings.TrimSpace(out))
		}
	}
	if requested == "" {
		return nil, fmt.Errorf("%s: the JVM did not say where it wrote the file: %s", cmd, strings.TrimSpace(out))
	}
	return c.fileAt(ctx, requested, out, expandP, expandT)
}

func (c *Client) fileAt(ctx context.Context, name, out string, expandP, expandT bool) (*File, error) {
	t := c.Target()
	p := name
	if !strings.HasPrefix(p, "/") || expandP || expandT {
		cwd, err := JVMCwd(ctx, t)
		if err != nil && !strings.HasPrefix(p, "/") {
			return nil, fmt.Errorf("jcmd: resolve %q against the JVM's working directory: %w", name, err)
		}
		p = expandPath(name, t.NSPID, cwd, time.Now(), expandP, expandT)
	}
	return &File{Path: p, HostPath: HostPath(t, p), Output: out}, nil
}

// CopyOut copies a file the JVM wrote to dst (a directory or a file name), atomically, owned by the
// caller; it never writes through a symlink. It returns the destination path and the size.
func (c *Client) CopyOut(ctx context.Context, f *File, dst string, overwrite bool) (string, int64, error) {
	return CopyOut(ctx, c.Target(), f.Path, dst, overwrite)
}

// HeapDump writes a heap dump (GC.heap_dump) to filename, as the JVM sees it. all includes
// unreachable objects; gzip 1-9 compresses (0: none).
func (c *Client) HeapDump(ctx context.Context, filename string, all bool, gzip int) (*File, error) {
	if filename == "" {
		return nil, errors.New("jcmd: GC.heap_dump needs a file name")
	}
	var b lineBuilder
	b.cmd("GC.heap_dump")
	if all {
		b.cmd("-all")
	}
	if gzip > 0 {
		b.str("-gz", strconv.Itoa(gzip))
	}
	b.quoted(filename)
	out, notes, err := c.runWriting(ctx, &b, true)
	if err != nil {
		return nil, err
	}
	return withNotes(c.writtenFile(ctx, out, filename, "GC.heap_dump"))(notes)
}

// PerfMap has the JVM write a perf map of its JIT-compiled code (Compiler.perfmap). A file name is
// accepted from JDK 22 (JDK-8314029); before, and by default, the map is /tmp/perf-<nspid>.map in the
// JVM's mount namespace.
func (c *Client) PerfMap(ctx context.Context, filename string) (*File, error) {
	feature, err := c.Feature(ctx)
	if err != nil {
		return nil, err
	}
	if feature < 17 {
		return nil, noPerfMap(feature)
	}
	if filename != "" && feature < 22 {
		return nil, fmt.Errorf("jcmd: Compiler.perfmap takes a file name only from JDK 22 (JDK-8314029); JVM %d runs JDK %d, whose map is /tmp/perf-%d.map", c.Target().PID, feature, c.Target().NSPID)
	}
	var b lineBuilder
	b.cmd("Compiler.perfmap")
	b.quoted(filename)
	out, notes, err := c.runWriting(ctx, &b, false)
	if err != nil {
		return nil, err
	}
	if filename == "" {
		return withNotes(c.fileAt(ctx, "/tmp/perf-"+strconv.Itoa(c.Target().NSPID)+".map", out, false, false))(notes)
	}
	return withNotes(c.writtenFile(ctx, out, filename, "Compiler.perfmap"))(notes)
}

// noPerfMap is the error for a JVM older than Compiler.perfmap, whose own answer ("Unknown diagnostic
// command") would not say why.
func noPerfMap(feature int) error {
	return fmt.Errorf("JDK %d has no Compiler.perfmap (added in JDK 17): %w", feature, ErrUnknownCommand)
}

// withNotes adds the notes of PrepareWrites to a File.
func withNotes(f *File, err error) func([]string) (*File, error) {
	return func(notes []string) (*File, error) {
		if f != nil {
			f.Notes = append(f.Notes, notes...)
		}
		return f, err
	}
}

// ThreadPrint returns a thread dump (Thread.print), with lock information (-l) and extended
// information (-e, JDK 11+) on request.
func (c *Client) ThreadPrint(ctx context.Context, locks, extended bool) (*ThreadDump, error) {
	line := "Thread.print"
	if locks {
		line += " -l"
	}
	if extended {
		line += " -e"
	}
	out, err := c.Run(ctx, line)
	if err != nil {
		return nil, err
	}
	return ParseThreadDump(out)
}

// Flags returns the JVM's flags (VM.flags): the ones set on the command line or ergonomically, or
// with all every flag.
func (c *Client) Flags(ctx context.Context, all bool) ([]Flag, error) {
	line := "VM.flags"
	if all {
		line += " -all"
	}
	out, err := c.Run(ctx, line)
	if err != nil {
		return nil, err
	}
	return ParseFlags(out)
}

// SystemProperties returns the JVM's system properties (VM.system_properties).
func (c *Client) SystemProperties(ctx context.Context) (map[string]string, error) {
	out, err := c.Run(ctx, "VM.system_properties")
	if err != nil {
		return nil, err
	}
	return ParseProperties(out)
}

// ErrDebuggingUnsupported is returned by StartDebugging on JDK 24 and later, which removed on-demand
// debugging (the jdwp option onjcmd, JDK-8336401).
var ErrDebuggingUnsupported = errors.New("on-demand debugging is not supported since JDK 24")

// Endpoint is a TCP socket's local address (IP and port); String formats it as net/netip does.
type Endpoint = procfs.Endpoint

// Debugger describes a JDWP agent that VM.start_java_debugging started.
type Debugger struct {
	Transport string     // dt_socket
	Address   string     // as configured, e.g. 127.0.0.1:0
	Listening []Endpoint // the sockets the JVM started listening on: the real port when the configured one is 0
	Output    string     // the JVM's own answer ("Debugging has been started." or "... is already active.")
}

// StartDebugging starts the JDWP agent of a JVM started with
// -agentlib:jdwp=transport=dt_socket,server=y,suspend=n,onjcmd=y,address=... (VM.start_java_debugging).
func (c *Client) StartDebugging(ctx context.Context) (*Debugger, error) {
	t := c.Target()
	feature, _ := c.Feature(ctx)
	before, _ := listeningTCP(t.PID)
	out, err := c.Run(ctx, "VM.start_java_debugging")
	var je *attach.JVMError
	if err != nil && !errors.As(err, &je) {
		return nil, err
	}
	if err == nil {
		var d *Debugging
		if d, err = ParseDebugging(out); err == nil {
			dbg := &Debugger{Transport: d.Transport, Address: d.Address, Output: out}
			after, _ := listeningTCP(t.PID)
			for _, a := range after {
				if !slices.Contains(before, a) {
					dbg.Listening = append(dbg.Listening, a)
				}
			}
			return dbg, nil
		}
	}
	if feature >= 24 {
		return nil, fmt.Errorf("%w: JVM %d runs JDK %d; onjcmd=y was removed in JDK 24 (JDK-8336401), start the JVM with -agentlib:jdwp=transport=dt_socket,server=y,suspend=n,address=<host:port> instead (JVM said: %s)", ErrDebuggingUnsupported, t.PID, feature, err.Error())
	}
	return nil, fmt.Errorf("VM.start_java_debugging: %w; the JVM must run with -agentlib:jdwp=transport=dt_socket,server=y,suspend=n,onjcmd=y", err)
}

// WrittenFile tells which file a diagnostic command line wrote, from the command's output or, when
// the output does not say, from the file name on the line (resolved as the JVM resolves it). ok is
// false for commands that wrote none.
func (c *Client) WrittenFile(ctx context.Context, line, out string) (*File, bool) {
	words, err := SplitLine(line)
	if err != nil || len(words) == 0 {
		return nil, false
	}
	name, requested := words[0], ""
	for _, w := range words[1:] {
		switch {
		case strings.HasPrefix(w, "filename="):
			requested = strings.TrimPrefix(w, "filename=")
		case strings.HasPrefix(w, "-"), strings.Contains(w, "="):
		default:
			requested = w // the positional file argument (GC.heap_dump, Thread.dump_to_file, ...)
		}
	}
	if name == "Compiler.perfmap" && requested == "" {
		f, err := c.fileAt(ctx, "/tmp/perf-"+strconv.Itoa(c.Target().NSPID)+".map", out, false, false)
		return f, err == nil
	}
	f, err := c.writtenFile(ctx, out, requested, name)
	return f, err == nil
}
