package gjcmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jvmkit/jvmkit/attach"
	"github.com/jvmkit/jvmkit/cmd/internal/cliutil"
	"github.com/jvmkit/jvmkit/internal/hsperf"
	"github.com/jvmkit/jvmkit/internal/procfs"
	"github.com/jvmkit/jvmkit/internal/rootfs"
	"github.com/jvmkit/jvmkit/jcmd"
)

// rawOp reports the attach operations gjcmd sends as they are (jattach style), but for "jcmd", whose
// command line runs as a diagnostic command (checked, its files prepared), and the files dumpheap and
// inspectheap write (jcmd.Client.PrepareOperation). No diagnostic command has one of these names (those
// contain a dot, apart from "help"). A switch rather than a map: a
// package-level map is built at every start, and gjcmd starts often.
func rawOp(name string) bool {
	switch name {
	case "load", "properties", "agentProperties", "datadump", "threaddump",
		"dumpheap", "inspectheap", "setflag", "printflag", "jcmd", "getversion":
		return true
	}
	return false
}

// Main runs gjcmd with the given arguments (without the program name) and returns the exit status.
func Main(args []string, stdout, stderr io.Writer) int {
	g := newGjcmd(stdout, stderr)
	if len(args) > 0 && (args[0] == cliutil.CompleteRequest || args[0] == cliutil.CompleteRequestNoDesc) {
		g.completeRequest(args[0] == cliutil.CompleteRequestNoDesc, args[1:])
		return cliutil.ExitOK
	}
	if completionScript(args, stdout) {
		return cliutil.ExitOK
	}
	rest, _, err := g.parse(args)
	switch {
	case err != nil:
		fmt.Fprintf(stderr, "gjcmd: %v\n\n%s", err, g.usage())
		return cliutil.ExitUsage
	case g.help:
		fmt.Fprintf(stdout, "%s\n\n%s", Long, g.usage())
		return cliutil.ExitOK
	case g.version:
		fmt.Fprint(stdout, cliutil.VersionText("gjcmd"))
		return cliutil.ExitOK
	}
	ctx, arm, stop := cliutil.LazySignalContext()
	defer stop()
	g.arm = arm
	return cliutil.Finish(ctx, "gjcmd", g.run(ctx, rest), stderr, g.usage)
}

func usagef(format string, args ...any) error { return cliutil.UsageErrorf(format, args...) }

type gjcmd struct {
	stdout, stderr io.Writer
	list           bool
	timeout        time.Duration
	attachTimeout  time.Duration
	jsonOut        bool
	verbose        bool
	protocol       int
	streaming      bool
	copyTo         string
	output         string
	overwrite      bool
	noCheck        bool
	help           bool
	version        bool
	// arm puts in the SIGINT/SIGTERM handler (cliutil.LazySignalContext): at once, in the background,
	// unless the request only reads (see readOnly); then only if attach has to start the listener.
	arm func()
}

// request is what to do with each selected JVM.
type request struct {
	kind    string   // "dcmd", "file", "perfcounters", "raw"
	lines   []string // dcmd: one line; file: each line of the file
	op      string   // raw
	args    []string // raw
	display string   // command as shown in JSON results
}

func (g *gjcmd) run(ctx context.Context, args []string) error {
	if g.list || len(args) == 0 {
		// jcmd -l ignores what follows it, and so does gjcmd: a drop-in takes the same command lines.
		return g.listJVMs(ctx)
	}
	if n, err := strconv.Atoi(args[0]); err == nil && n < 0 {
		fmt.Fprintf(g.stderr, "Invalid pid '%s' specified\n", args[0]) // jcmd's words and status
		return cliutil.Exit(cliutil.ExitFailed)
	}
	if g.protocol < 0 || g.protocol > 2 {
		return usagef("--protocol must be 0, 1 or 2")
	}
	if g.copyTo != "" && g.output != "" {
		return usagef("--copy-to and -o exclude each other")
	}
	if err := g.checkCopyDest(); err != nil {
		return err
	}
	req, err := parseRequest(args[1:])
	if err != nil {
		return err
	}
	pids, err := jcmd.Select(ctx, args[0])
	if err != nil {
		if errors.Is(err, jcmd.ErrNoMatch) {
			fmt.Fprintf(g.stderr, "Could not find any processes matching : '%s'\n", args[0])
			return cliutil.Exit(cliutil.ExitNoJVM)
		}
		return err
	}
	if !g.readOnly(req) || g.jsonOut || len(pids) > 1 {
		// Interrupted, the command has something to undo or report: what it changed, or (buffered for
		// several JVMs or JSON) the output it already has.
		go g.arm()
	}
	if g.jsonOut || len(pids) > 1 {
		return g.runBuffered(ctx, pids, req)
	}
	// One JVM: stream its output as it arrives. The header without fmt, whose first use is a warm
	// attach's largest cost of its own here (its printer pool and state, paged in).
	_, _ = g.stdout.Write(append(strconv.AppendInt(nil, int64(pids[0]), 10), ":\n"...))
	res := g.execute(ctx, pids[0], req, g.stdout)
	return g.finish(res)
}

func parseRequest(words []string) (request, error) {
	for i, w := range words {
		if w == "-f" {
			switch {
			case i != 0:
				return request{}, usagef("-f must come right after the target")
			case len(words) == 1:
				return request{}, usagef("no file specified for -f")
			case len(words) > 2:
				return request{}, usagef("options after -f are not allowed")
			}
			b, err := readCommandFile(words[1])
			if err != nil {
				return request{}, usagef("could not read from file specified with -f option: %v", err)
			}
			text := strings.TrimSuffix(string(b), "\n")
			lines := strings.Split(text, "\n")
			for i, l := range lines {
				lines[i] = strings.TrimSuffix(l, "\r") // jcmd reads lines with readLine, which takes CRLF too
			}
			return request{kind: "file", lines: lines, display: "-f " + words[1]}, nil
		}
		if w == "PerfCounter.print" {
			return request{kind: "perfcounters", display: w}, nil
		}
	}
	if len(words) > 0 && words[0] == "jcmd" {
		// jattach's "jcmd" operation carries a command line: run it as one, checked and prepared.
		words = words[1:]
	} else if len(words) > 0 && rawOp(words[0]) {
		return request{kind: "raw", op: words[0], args: words[1:], display: strings.Join(words, " ")}, nil
	}
	line := strings.Join(words, " ")
	if line == "" {
		// Like jcmd: no command lists the available ones.
		line = "help"
	}
	return request{kind: "dcmd", lines: []string{line}, display: line}, nil
}

// maxCommandFile bounds a -f file: a few thousand command lines.
const maxCommandFile = 1 << 20

// readCommandFile reads a -f file: a regular file (a FIFO or device could block or never end), of at most
// maxCommandFile bytes, text without NUL bytes.
func readCommandFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|openNonblock, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := rootfs.ReadRegular(f, path, maxCommandFile)
	if err != nil {
		return nil, err
	}
	if bytes.IndexByte(b, 0) >= 0 {
		return nil, fmt.Errorf("%s holds NUL bytes: not a text file of commands", path)
	}
	return b, nil
}

// result is the outcome for one JVM.
type result struct {
	PID     int    `json:"pid"`
	Command string `json:"command"`
	Status  *int   `json:"status,omitempty"` // the JVM's reply status, when it replied
	Output  string `json:"output"`
	Error   string `json:"error,omitempty"`
	Exit    int    `json:"exit"`
	// Files are the files the command wrote, with the host path and, with --copy-to/-o, the copy.
	Files []writtenFile `json:"files,omitempty"`
	// Notes are things worth telling beyond the JVM's output (printed on stderr).
	Notes []string `json:"notes,omitempty"`
	err   error
}

type writtenFile struct {
	Path     string `json:"path"`      // in the JVM's mount namespace
	HostPath string `json:"host_path"` // reachable from here
	CopiedTo string `json:"copied_to,omitempty"`
	Size     int64  `json:"size,omitempty"`
}

func (r *result) notef(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

// execute runs req against one JVM, writing output to w.
func (g *gjcmd) execute(ctx context.Context, pid int, req request, w io.Writer) *result {
	res := &result{PID: pid, Command: req.display}
	if g.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, g.timeout)
		defer cancel()
	}
	if req.kind == "perfcounters" {
		res.err = perfCounters(ctx, pid, w)
		return res
	}
	opts := &attach.Options{AttachTimeout: g.attachTimeout, Protocol: g.protocol, Streaming: g.streaming, BeforeStart: g.arm}
	if g.verbose {
		opts.Logger = stderrLogger{g.stderr}
	}
	start := time.Now()
	cl, err := jcmd.Dial(ctx, pid, opts)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			err = fmt.Errorf("interrupted while attaching to JVM %d; nothing was sent: %w", pid, err)
		}
		res.err = err
		return res
	}
	defer cl.Close()
	if g.verbose {
		fmt.Fprintf(g.stderr, "gjcmd: attached to %d (nspid %d, uid %d) in %v\n", pid, cl.Target().NSPID, cl.Target().UID, time.Since(start).Round(time.Microsecond))
	}
	switch req.kind {
	case "raw":
		g.executeRaw(ctx, cl, req, w, res)
	default:
		for _, line := range req.lines {
			if strings.TrimSpace(line) == "stop" {
				break
			}
			if !g.executeLine(ctx, cl, line, w, res) {
				break
			}
		}
	}
	return res
}

// executeLine runs one diagnostic command line; false stops a -f file at the first failure, as jcmd
// does (its loop ends with the exception).
func (g *gjcmd) executeLine(ctx context.Context, cl *jcmd.Client, line string, w io.Writer, res *result) bool {
	if strings.HasPrefix(strings.TrimLeft(line, " \t\v\f\r"), "#") && !strings.ContainsAny(line, "\n\x00") {
		// A comment: HotSpot runs a line only if its command name does not start with #
		// (DCmd::parse_and_execute), whatever follows. Sent as jcmd sends it, unchecked and unprepared;
		// a newline or NUL (a second line, which the JVM would run) is refused below as for any line.
		cw := &countWriter{w: w}
		err := cl.VM.ExecuteTo(ctx, cw, "jcmd", line)
		res.setStatus(err)
		if err != nil {
			res.err = interrupted(err, cl, "#", nil)
			return false
		}
		if cw.n == 0 {
			fmt.Fprintln(w, "Command executed successfully")
		}
		return true
	}
	words, err := jcmd.SplitLine(line)
	if err != nil {
		// A newline would have the JVM run a second command, unchecked and unprepared; an unterminated
		// quote it refuses itself.
		res.err = &checkError{err}
		return false
	}
	name := ""
	if len(words) > 0 {
		name = words[0]
	}
	// A frozen JVM (podman pause) would run a command that does more than print when it is thawed,
	// perhaps much later: refused before anything is sent. One that only prints is sent, and the wait
	// for its reply finds the freezer within a second, at no cost to a warm attach.
	if !printsOnly(name) {
		if err := cl.VM.Frozen(); err != nil {
			res.err = fmt.Errorf("%w; %s was not sent", err, name)
			return false
		}
	}
	// Options are checked against the JVM's own help before anything is sent; a bare command costs
	// no extra round trip (the JVM's answer to an unknown one is as good).
	if len(words) > 1 && !g.noCheck {
		if err := cl.Check(ctx, line); err != nil {
			res.err = notRun(err, cl, name)
			if !errors.Is(err, context.Canceled) {
				res.err = &checkError{err}
			}
			return false
		}
	}
	if name == "VM.start_java_debugging" {
		return g.startDebugging(ctx, cl, w, res)
	}
	if err := g.checkCopyNames(ctx, cl, name, line); err != nil {
		res.err = notRun(err, cl, name)
		if !errors.Is(err, context.Canceled) {
			res.err = &checkError{err}
		}
		return false
	}
	// Files the line has the JVM write are made safe first (never a write through another user's link);
	// a path that cannot be made safe is refused before anything is sent.
	ws, err := cl.PrepareWrites(ctx, line)
	if err != nil {
		res.err = notRun(err, cl, name)
		return false
	}
	defer ws.Close()
	if ws != nil {
		for _, n := range ws.Notes {
			res.notef("%s", n)
		}
	}
	if (g.copyTo != "" || g.output != "") && !writesFile(name) && ws == nil && !unknownCommand(ctx, cl, name) {
		res.err = &checkError{fmt.Errorf("%s writes no file: --copy-to and -o copy the file a command has the JVM write (its output is on stdout)", name)}
		return false
	}
	collect := writesFile(name) || ws != nil // the output names a file to report or copy
	nsHint := strings.HasPrefix(name, "JFR.") && cl.Target().NSPID != cl.Target().PID
	cw := &countWriter{w: w, keep: collect || nsHint}
	err = cl.VM.ExecuteTo(ctx, cw, "jcmd", line)
	res.setStatus(err)
	var je *attach.JVMError
	if errors.As(err, &je) && len(words) > 0 && strings.Contains(je.Message, "Unknown diagnostic command") {
		if since, ok := commandSince(name); ok {
			if feature, ferr := cl.Feature(ctx); ferr == nil && feature < since {
				res.notef("JDK %d has no %s (added in JDK %d)", feature, name, since)
			}
		} else if names, herr := cl.Commands(ctx); herr == nil {
			if s := jcmd.Suggest(name, names); s != "" {
				res.notef("did you mean %s?", s)
			}
		}
	}
	if err != nil {
		if errors.As(err, &je) {
			ws.Failed(je.Message) // nothing left behind for a command the JVM refused
		}
		res.err = interrupted(err, cl, name, ws)
		return false
	}
	// A JVM that reports a failure as text (status 0) has said what happened: the files made for it that
	// it did not write go. Otherwise they must now hold what it wrote.
	if jcmd.ReportsFailure(cw.kept.String()) {
		ws.Failed(cw.kept.String())
	} else if err := ws.Check(); err != nil {
		res.err = fmt.Errorf("%s: %w", name, err)
		return false
	}
	if cw.n == 0 {
		fmt.Fprintln(w, "Command executed successfully")
	}
	if t := cl.Target(); nsHint && strings.Contains(cw.kept.String(), "jcmd "+strconv.Itoa(t.NSPID)+" ") {
		// JFR's hints ("Use jcmd 1 JFR.dump name=...") name the JVM by its pid in its container.
		res.notef("the JVM calls itself %d, its pid in its container; from this host it is %d", t.NSPID, t.PID)
	}
	if collect {
		if err := g.collectFile(ctx, cl, name, line, cw.kept.String(), res); err != nil {
			res.err = err
			return false
		}
	}
	return true
}

// unknownCommand reports a command the JVM does not have, which it then says itself.
func unknownCommand(ctx context.Context, cl *jcmd.Client, name string) bool {
	_, err := cl.Describe(ctx, name)
	return errors.Is(err, jcmd.ErrUnknownCommand)
}

// notRun explains an interrupt that came before the command was sent (while its description was asked
// for): the JVM does not have it.
func notRun(err error, cl *jcmd.Client, name string) error {
	if !errors.Is(err, context.Canceled) {
		return err
	}
	return fmt.Errorf("interrupted before JVM %d had the command; %s was not run: %w", cl.Target().PID, name, context.Canceled)
}

// interrupted explains a command cut short by SIGINT or SIGTERM: before the JVM had it, nothing was
// done; after, the JVM goes on with it, and a file it writes will still appear. The same is said of a
// command the JVM had when it stopped answering (frozen, stopped, past the deadline).
func interrupted(err error, cl *jcmd.Client, name string, ws *jcmd.Writes) error {
	pid := cl.Target().PID
	canceled := errors.Is(err, context.Canceled)
	switch {
	case !errors.Is(err, attach.ErrAbandoned) && canceled:
		return notRun(err, cl, name)
	case !errors.Is(err, attach.ErrAbandoned):
		return err
	}
	file := ""
	if jvm, host := ws.Paths(); len(jvm) > 0 {
		file = jvm[0]
		if host[0] != jvm[0] {
			file += " (from this host: " + host[0] + ")"
		}
	}
	switch {
	case canceled && file == "":
		return fmt.Errorf("interrupted; %s goes on in JVM %d, its output is lost: %w", name, pid, context.Canceled)
	case canceled:
		return fmt.Errorf("interrupted; %s goes on in JVM %d, which will write %s: %w", name, pid, file, context.Canceled)
	case file == "":
		return fmt.Errorf("%w; it had %s, which it runs once it runs again (its output is lost)", err, name)
	}
	return fmt.Errorf("%w; it had %s, which it runs once it runs again: it will write %s", err, name, file)
}

// commandSince names the release that added a command that older JDKs lack, so that the answer to
// "Unknown diagnostic command" can name the JDK.
func commandSince(name string) (int, bool) {
	switch name {
	case "Compiler.perfmap":
		return 17, true
	case "Thread.dump_to_file":
		return 21, true
	}
	return 0, false
}

// checkError is an invalid command line found before sending: exit status 1, as the JVM's own
// rejection would give.
type checkError struct{ err error }

func (e *checkError) Error() string { return e.err.Error() }
func (e *checkError) Unwrap() error { return e.err }

// readOnly tells a request that changes nothing in the JVM and writes no file: a diagnostic command that
// only prints, or PerfCounter.print (run also wants one JVM and no --json: buffered output is printed at
// the end, and an interrupt must not lose it). Interrupted, it has nothing to undo or to report, so gjcmd leaves
// SIGINT and SIGTERM their default action (as jattach does) and saves os/signal's handler, a quarter of
// a warm VM.version; if attach has to start the JVM's listener, the handler goes in first, so that an
// interrupt still removes the trigger file.
func (g *gjcmd) readOnly(req request) bool {
	if g.output != "" || g.copyTo != "" {
		return false
	}
	switch req.kind {
	case "perfcounters":
		return true
	case "dcmd":
		words, _ := jcmd.SplitLine(req.lines[0])
		return len(words) > 0 && printsOnly(words[0])
	}
	return false
}

// printsOnly tells the diagnostic commands that, whatever their options, only print: they change no
// setting of the JVM and write no file.
func printsOnly(name string) bool {
	switch name {
	case "help", "VM.version", "VM.uptime", "VM.command_line", "VM.flags", "VM.system_properties", "VM.info",
		"VM.dynlibs", "VM.classloader_stats", "VM.classloaders", "VM.class_hierarchy", "VM.metaspace",
		"VM.stringtable", "VM.symboltable", "VM.events", "VM.print_touched_methods", "Thread.print",
		"GC.heap_info", "Compiler.codecache", "Compiler.codelist", "Compiler.queue", "Compiler.directives_print",
		"System.map":
		return true
	}
	return false
}

// writesFile tells the commands whose output names a file they wrote.
func writesFile(name string) bool {
	switch name {
	case "JFR.dump", "JFR.stop", "GC.heap_dump", "Compiler.perfmap", "Thread.dump_to_file",
		"VM.cds", "System.dump_map", "Compiler.CodeHeap_Analytics":
		return true
	}
	return false
}

// checkCopyDest refuses, before anything runs in the JVM, a copy that could only fail once the JVM
// has written its file (jcmd.CheckCopyDest: what CopyOut checks; -o naming a directory).
func (g *gjcmd) checkCopyDest() error {
	if err := g.outputNotDir(); err != nil {
		return err
	}
	if dst := g.copyTo + g.output; dst != "" {
		return jcmd.CheckCopyDest(dst, "", g.overwrite)
	}
	return nil
}

// checkCopyNames refuses, before the line is sent, a copy that cannot be made once the JVM has written
// its file: JFR.start's recording (written when it stops, by JFR.stop, JFR.dump or its duration), and
// with --copy-to a file of the name the JVM will write already in the directory (checkCopyDest looked at
// the directory alone, before the name was known).
func (g *gjcmd) checkCopyNames(ctx context.Context, cl *jcmd.Client, name, line string) error {
	if g.copyTo == "" && g.output == "" {
		return nil
	}
	if name == "JFR.start" {
		return fmt.Errorf("--copy-to and -o copy a file the command wrote; JFR.start writes its recording only when it stops: give --copy-to to the JFR.dump or JFR.stop that writes it")
	}
	if name == "JFR.stop" {
		words, _ := jcmd.SplitLine(line)
		named := slices.ContainsFunc(words, func(w string) bool { return strings.HasPrefix(w, "filename=") })
		if feature, err := cl.Feature(ctx); err == nil && feature < 21 && !named {
			// JDK 21's JFR.stop says where the recording went; 17's only when the line names the file, and
			// the destination JFR.start was given cannot be asked for.
			return fmt.Errorf("--copy-to and -o copy the file the command wrote, and JDK %d's JFR.stop says which file that is only when it is given one: add filename=<path> to JFR.stop (the recording was not stopped)", feature)
		}
	}
	if g.copyTo == "" {
		return nil
	}
	return cl.CheckCopyNames(ctx, line, g.copyTo, g.overwrite)
}

// outputNotDir refuses an -o that names a directory: -o is the copy's file name.
func (g *gjcmd) outputNotDir() error {
	if g.output == "" {
		return nil
	}
	if st, err := os.Lstat(g.output); err == nil && st.IsDir() {
		return fmt.Errorf("-o %s is a directory; give a file name, or use --copy-to for a directory", g.output)
	}
	return nil
}

// collectFile finds the file command name (of line) wrote, reports its host path and copies it out on
// request.
func (g *gjcmd) collectFile(ctx context.Context, cl *jcmd.Client, name, line, out string, res *result) error {
	if name == "JFR.start" {
		// Nothing is written yet: the recording goes to its file when it stops.
		if t := cl.Target(); t.Container() {
			if f, ok := cl.WrittenFile(ctx, line, out); ok {
				res.notef("the JVM writes the recording to %s when it stops; from this host: %s", f.Path, f.HostPath)
			}
		}
		return nil
	}
	f, ok := cl.WrittenFile(ctx, line, out)
	if !ok {
		if g.copyTo != "" || g.output != "" {
			return fmt.Errorf("the command did not write a file to copy: %s", strings.TrimSpace(out))
		}
		return nil
	}
	wf := writtenFile{Path: f.Path, HostPath: f.HostPath}
	switch {
	case cl.Target().Container():
		res.notef("the JVM wrote %s; from this host: %s", f.Path, f.HostPath)
	case !strings.Contains(out, f.Path):
		res.notef("the JVM wrote %s", f.Path) // e.g. Compiler.perfmap, which prints nothing
	}
	if err := g.outputNotDir(); err != nil { // checked before the command too; it may have changed since
		return err
	}
	if dst := g.copyTo + g.output; dst != "" {
		to, n, err := cl.CopyOut(ctx, f, dst, g.overwrite)
		if err != nil {
			return err
		}
		wf.CopiedTo, wf.Size = to, n
		if uid, same := sameFile(to, f.HostPath); same {
			// dst was the JVM's own directory (--copy-to /proc/PID/root/tmp): its file, left as it is.
			res.notef("%s is the file the JVM wrote, owned by uid %d: nothing to copy", to, uid)
		} else {
			res.notef("copied %s to %s (%d bytes)", f.Path, to, n)
		}
	}
	res.Files = append(res.Files, wf)
	return nil
}

func (g *gjcmd) startDebugging(ctx context.Context, cl *jcmd.Client, w io.Writer, res *result) bool {
	d, err := cl.StartDebugging(ctx)
	if err != nil {
		res.err = err
		return false
	}
	zero := 0
	res.Status = &zero
	if _, err := io.WriteString(w, d.Output); err != nil { // the JVM's answer, as jcmd prints it
		res.err = err
		return false
	}
	for _, a := range d.Listening {
		res.notef("JDWP is listening on %s", a)
	}
	return true
}

func (g *gjcmd) executeRaw(ctx context.Context, cl *jcmd.Client, req request, w io.Writer, res *result) {
	switch req.op {
	case "properties", "agentProperties", "threaddump", "printflag":
	default: // not sent to a frozen JVM, which would run it once thawed (see executeLine)
		if err := cl.VM.Frozen(); err != nil {
			res.err = fmt.Errorf("%w; %s was not sent", err, req.op)
			return
		}
	}
	// A file the operation has the JVM write is made safe first, as for diagnostic commands.
	ws, err := cl.PrepareOperation(ctx, req.op, req.args)
	if err != nil {
		res.err = notRun(err, cl, req.op)
		return
	}
	defer ws.Close()
	if ws != nil {
		for _, n := range ws.Notes {
			res.notef("%s", n)
		}
	}
	cw := &countWriter{w: w, keep: req.op == "load" || ws != nil}
	err = cl.VM.ExecuteTo(ctx, cw, req.op, req.args...)
	res.setStatus(err)
	var jerr *attach.JVMError
	switch {
	case errors.As(err, &jerr):
		ws.Failed(jerr.Message) // nothing left behind for an operation the JVM refused
	case err == nil:
		if cerr := ws.Check(); cerr != nil {
			if jcmd.ReportsFailure(cw.kept.String()) {
				ws.Failed(cw.kept.String()) // it said why it wrote nothing
			}
			res.err = fmt.Errorf("%s: %w", req.op, cerr)
			return
		}
	}
	var je *attach.JVMError
	switch {
	case req.op == "load" && errors.As(err, &je):
		res.err = attach.LoadResult(je.Code, []byte(je.Message))
	case err != nil:
		res.err = err
	case req.op == "load":
		// Keep the reply visible, as jattach does, and judge it by the rules of the JVM's version.
		res.err = attach.LoadResult(0, cw.kept.Bytes())
	}
}

func (r *result) setStatus(err error) {
	var je *attach.JVMError
	switch {
	case err == nil:
		zero := 0
		r.Status = &zero
	case errors.As(err, &je):
		code := je.Code
		r.Status = &code
	}
}

func perfCounters(ctx context.Context, pid int, w io.Writer) error {
	// Refused like every other command for a process that is not a JVM: its user could have put any
	// file at /tmp/hsperfdata_<user>/<pid>.
	if _, err := jcmd.Inspect(ctx, pid); err != nil {
		return err
	}
	t, err := attach.Resolve(pid)
	if err != nil {
		return err
	}
	tmp, err := t.OpenTmp() // its /tmp as it resolves it, inside its root
	if err != nil {
		return err
	}
	defer tmp.Close()
	// The file is 0600, its directory 0755: the refusal comes from ReadFile, or from Find for a
	// directory made otherwise.
	refused := func(err error) error {
		return fmt.Errorf("%w: cannot read the hsperfdata of %d: %w; %s", attach.ErrPermission, pid, tmp.ShownErr(err),
			t.RemedyAny(procfs.CapDacReadSearch, procfs.CapDacOverride))
	}
	path, err := hsperf.Find(tmp.Path(), t.NSPID, t.UID)
	if err != nil {
		if errors.Is(err, os.ErrPermission) {
			return refused(err)
		}
		return fmt.Errorf("JVM %d has no hsperfdata file (started with -XX:-UsePerfData or -XX:+PerfDisableSharedMem?): %w", pid, tmp.ShownErr(err))
	}
	d, err := hsperf.ReadFile(ctx, path)
	if d == nil {
		if errors.Is(err, os.ErrPermission) {
			return refused(err)
		}
		return tmp.ShownErr(err)
	}
	if werr := hsperf.WritePerfCounters(w, d); werr != nil {
		return werr
	}
	return tmp.ShownErr(err)
}

// finish prints a single result's notes and error and returns the exit status as an error.
func (g *gjcmd) finish(res *result) error {
	for _, n := range res.Notes {
		fmt.Fprintf(g.stderr, "gjcmd: %d: %s\n", res.PID, n)
	}
	if res.err == nil {
		return nil
	}
	var je *attach.JVMError
	if errors.As(res.err, &je) && je.Code != attach.StatusBadVersion { // that one's words are attach's, not the JVM's
		// jcmd prints the JVM's message (e.g. "java.lang.IllegalArgumentException: Unknown diagnostic
		// command") on stderr as it is.
		if msg := strings.TrimSpace(je.Message); msg != "" {
			fmt.Fprintln(g.stderr, msg)
		}
	} else {
		cliutil.Report(g.stderr, "gjcmd", res.err)
	}
	return cliutil.Exit(cliutil.ExitCode(res.err))
}

// runBuffered runs the request against several JVMs in parallel and prints the results in order.
func (g *gjcmd) runBuffered(ctx context.Context, pids []int, req request) error {
	results := make([]*result, len(pids))
	bufs := make([]bytes.Buffer, len(pids))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i, pid := range pids {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			results[i] = g.execute(ctx, pid, req, &bufs[i])
		})
	}
	wg.Wait()
	var first error
	for i, res := range results {
		res.Output = bufs[i].String()
		if res.err != nil {
			res.Exit = cliutil.ExitCode(res.err)
			res.Error = res.err.Error()
		}
		if !g.jsonOut {
			fmt.Fprintf(g.stdout, "%d:\n", res.PID)
			_, _ = g.stdout.Write(bufs[i].Bytes())
		}
		if err := g.finishQuiet(res); err != nil && first == nil {
			first = err
		}
	}
	if g.jsonOut {
		if _, err := g.stdout.Write(resultsJSON(results)); err != nil {
			return err
		}
	}
	return first
}

func (g *gjcmd) finishQuiet(res *result) error {
	if g.jsonOut {
		if res.err != nil {
			return cliutil.Exit(cliutil.ExitCode(res.err))
		}
		return nil
	}
	return g.finish(res)
}

func (g *gjcmd) listJVMs(ctx context.Context) error {
	jvms, err := jcmd.List(ctx)
	if err != nil {
		return err
	}
	if h := procfs.RootWithout(procfs.CapSysPtrace); h != "" {
		// Root without it reads only its own uid's processes: the others' JVMs are missing, silently.
		fmt.Fprintf(g.stderr, "gjcmd: note: only uid 0's JVMs are listed: %s\n", h)
	}
	if g.jsonOut {
		if jvms == nil {
			jvms = []jcmd.JVM{}
		}
		_, err := g.stdout.Write(jvmsJSON(jvms))
		return err
	}
	for _, j := range jvms {
		// jcmd lists attachable JVMs only; so do we (--json shows all).
		if j.HotSpot && j.Attachable {
			fmt.Fprintf(g.stdout, "%d %s\n", j.PID, j.Command)
		}
	}
	return nil
}

// countWriter counts what passes through and, with keep, keeps a copy.
type countWriter struct {
	w    io.Writer
	n    int64
	keep bool
	kept bytes.Buffer
}

func (c *countWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	if c.keep {
		c.kept.Write(p)
	}
	return c.w.Write(p)
}

// stderrLogger prints attach's diagnostics for -v as "gjcmd: <message> pid=N" lines.
type stderrLogger struct{ w io.Writer }

func (l stderrLogger) Debug(msg string, args ...any) {
	var b strings.Builder
	b.WriteString("gjcmd: ")
	b.WriteString(msg)
	for i := 0; i+1 < len(args); i += 2 {
		fmt.Fprintf(&b, " %v=%v", args[i], args[i+1])
	}
	b.WriteByte('\n')
	_, _ = io.WriteString(l.w, b.String())
}
