package jcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"

	"github.com/jvmkit/jvmkit/attach"
	"github.com/jvmkit/jvmkit/internal/procfs"
	"github.com/jvmkit/jvmkit/internal/rootfs"
)

// A diagnostic command that writes a file writes it with the JVM's privileges, at a path that the JVM
// resolves in its own world, often in a directory every user can write (/tmp). Another user who plants a
// symbolic link at that path makes a JVM that runs as root overwrite any file: JDK 17's Compiler.perfmap
// always writes /tmp/perf-<pid>.map with fopen "w"; JFR opens its file with TRUNCATE_EXISTING; jcmd and
// jattach pass such commands through as they are. So before a command line is sent, the files it will
// have the JVM write are found (plannedWrites), each is made safe in the JVM's world (rootfs.Prepare),
// and afterwards the files that were made for the JVM are checked to hold what it wrote.

// write is one file (or directory) that a command line has the JVM write.
type write struct {
	option   string      // the argument or option naming it; "" for the JVM's own default
	path     string      // as the JVM will open it: absolute, or relative to its working directory
	mode     rootfs.Mode // how the JVM opens it
	perm     uint32      // mode the JVM creates the file with, before its umask (jvmPerm)
	dirOK    bool        // the path may name a directory that the JVM generates a name in (JFR)
	deferred bool        // written later (JFR.start: at the end of the recording): no content to check now
}

// fileRule is how a known command writes the file one of its arguments names.
type fileRule struct {
	option    string
	mode      rootfs.Mode
	perm      uint32 // as write.perm
	overwrite string // a boolean option that turns an exclusive create into a truncating one
	dirOK     bool
	deferred  bool
}

// fileRules are the file arguments of the commands that write files, with how the JVM opens them
// (OpenJDK 17 to 25):
//   - Compiler.perfmap: CodeCache::write_perf_map, fileStream(name, "w"): follows links, truncates.
//   - GC.heap_dump: os::create_binary_file, O_CREAT|O_EXCL; with -overwrite O_TRUNC instead.
//   - Thread.dump_to_file: jdk.internal.vm.ThreadDumper, Files.newOutputStream with CREATE_NEW; with
//     -overwrite CREATE|TRUNCATE_EXISTING.
//   - JFR.start, JFR.dump, JFR.stop filename=: jdk.jfr WriteableUserPath, Files.newBufferedWriter
//     (CREATE|TRUNCATE_EXISTING) at once, then the real path written when the data is dumped; a
//     directory gets a generated name (hotspot-pid-<pid>-id-<n>-<time>.jfr) inside it.
//   - JFR.configure repositorypath=, dumppath=: directories that JFR creates names in.
//   - System.dump_map -F: fileStream "w".
//   - VM.cds: the archive is removed and then opened O_CREAT|O_TRUNC (FileMapInfo::open_for_write),
//     which no preparation can protect in a directory that others write in.
//   - Compiler.directives_add: the directives may have compilations write replay and inline files in
//     the working directory (DumpReplay, DumpInline), later.
//   - GC.heap_dump from JDK 22: segments <file>.p0 ... first, each opened as the file is.
//   - VM.cds static_dump: a child JVM, whose output goes to java_pid<child>_stdout and _stderr in the
//     working directory.
//   - VM.log output=: LogFileOutput renames an existing file to name.0 ... (rotation) and then opens
//     the name with fopen "a"; with output_options filecount=0 it never renames.
//
// A switch, not a package-level map, which gjcmd would build at every start.
func fileRules(command string) []fileRule {
	switch command {
	case "Compiler.perfmap":
		return []fileRule{{option: "filename", mode: rootfs.Follow, perm: 0o666}}
	case "GC.heap_dump":
		return []fileRule{{option: "filename", mode: rootfs.Exclusive, perm: 0o600, overwrite: "-overwrite"}}
	case "Thread.dump_to_file":
		return []fileRule{{option: "filepath", mode: rootfs.Exclusive, perm: 0o666, overwrite: "-overwrite"}}
	case "JFR.start":
		return []fileRule{{option: "filename", mode: rootfs.Follow, perm: 0o666, dirOK: true, deferred: true}}
	case "JFR.dump", "JFR.stop":
		return []fileRule{{option: "filename", mode: rootfs.Follow, perm: 0o666, dirOK: true}}
	case "JFR.configure":
		return []fileRule{{option: "repositorypath", mode: rootfs.PrivateDir}, {option: "dumppath", mode: rootfs.PrivateDir}}
	case "System.dump_map":
		return []fileRule{{option: "-F", mode: rootfs.Follow, perm: 0o666}}
	case "VM.cds":
		return []fileRule{{option: "filename", mode: rootfs.Private}}
	case "VM.log":
		return []fileRule{{option: "output", mode: rootfs.Private, perm: 0o666}}
	}
	return nil
}

// jvmPerm is the mode of a file made for the JVM: the mode the JVM creates it with (0666 for fopen and
// Java's streams, 0600 for a heap dump) less the JVM's umask, as open(2) would make it; a JVM whose umask
// is not known (a kernel before 4.7) gets the owner's bits only. A fixed 0644 would let every user read a
// recording (environment, properties, arguments) that the JVM's own umask keeps private.
//
// The owner may always read and write it (the JVM opens it by name, perhaps more than once: a umask
// without the owner's write bit would make it fail where its own create would have given it a
// writable descriptor), and nobody else may write it (another user could otherwise put data in it
// before the JVM writes, or instead of a JVM that silently fails).
func jvmPerm(perm uint32, st procfs.Status) uint32 {
	if !st.HasUmask {
		return perm&0o700 | 0o600
	}
	return perm&^st.Umask&^0o022 | 0o600
}

// writesWithoutArguments reports the commands that write a file of the JVM's choosing when no argument
// names one, so that they are looked at even when the line has no arguments.
func writesWithoutArguments(command string) bool {
	switch command {
	case "Compiler.perfmap", "System.dump_map", "VM.cds", "JFR.dump", "JFR.start":
		return true
	}
	return false
}

// mayWrite reports whether a command line can have the JVM write a file, which is worth the JVM's
// description of the command (one round trip) to find out which.
func mayWrite(name string, words []string) bool {
	return len(words) > 0 || writesWithoutArguments(name)
}

// plannedWrites returns the files that the command line name + words has the JVM write. cmd is the
// JVM's description of the command (Describe); it may be nil for a line without arguments. feature is the
// JDK's feature release and nspid the JVM's pid in its namespace, for the %p the JVM expands.
//
// Known commands follow fileRules; for any other command, each argument that the JVM's help types as
// FILE (JDK 21 and later print that type; 17 prints STRING) is taken as a file written in a way not
// known, which Prepare treats as Private. A line whose words cannot be assigned to the command's
// arguments is refused when the command writes files: what the JVM would write is not known then.
func plannedWrites(name string, words []string, cmd *Command, feature, nspid int) ([]write, error) {
	values := map[string]string{}
	set := map[string]bool{}
	// on reports a boolean option the line turns on, as HotSpot reads it (a bare option, an empty value or
	// "true" in any case) or more widely: reading one as off that the JVM reads as on would leave a
	// truncating open unprepared.
	on := func(opt string) bool { return set[opt] && boolOn(values[opt]) }
	if cmd != nil {
		b := binder{c: cmd, java: jfrJavaParsed(name)}
		for _, w := range words {
			o, a, _, err := b.bind(w)
			if err != nil {
				if fileRules(name) != nil || hasFileType(cmd) {
					return nil, fmt.Errorf("cannot tell which file %s would write: %w", name, err)
				}
				return nil, nil
			}
			if o == nil {
				continue // JFR.start's .jfc controls and event settings
			}
			values[o.Name], set[o.Name] = a.value, true
			if !a.hasValue {
				values[o.Name] = "true"
			}
		}
	} else if len(words) > 0 && fileRules(name) != nil {
		return nil, fmt.Errorf("cannot tell which file %s would write without its description", name)
	}
	var out []write
	add := func(w write) {
		if w.path == "" {
			return
		}
		out = append(out, w)
	}
	covered := map[string]bool{}
	for _, r := range fileRules(name) {
		covered[r.option] = true
		v, ok := values[r.option]
		if !ok {
			continue
		}
		w := write{option: r.option, mode: r.mode, perm: r.perm, dirOK: r.dirOK, deferred: r.deferred}
		if r.overwrite != "" && on(r.overwrite) {
			w.mode = rootfs.Follow
			if name == "GC.heap_dump" && feature >= 22 {
				// From JDK 22 the dump is written in segments, <file>.p0, .p1 ..., merged into <file> and
				// removed; with -overwrite each is opened O_TRUNC, following a link another user planted at
				// a segment's name (measured on JDK 25: heap data written through /tmp/h.hprof.p0). Only a
				// directory that nobody else can write in keeps those names free.
				w.mode = rootfs.Private
			}
		}
		w.path = expandJVMName(name, v, nspid, feature)
		if name == "VM.log" {
			w.path, w.mode = logOutput(v, values["output_options"], nspid)
		}
		if hasTimeSequence(name, v, feature) && w.mode == rootfs.Follow {
			// The JVM puts its own clock reading into the name: it cannot be prepared in advance.
			w.mode = rootfs.Private
		}
		add(w)
	}
	// The JVM's own defaults.
	switch name {
	case "Compiler.perfmap":
		if !set["filename"] {
			add(write{path: "/tmp/perf-" + strconv.Itoa(nspid) + ".map", mode: rootfs.Follow, perm: 0o666})
		}
	case "System.dump_map":
		if !set["-F"] {
			add(write{path: "vm_memory_map_" + strconv.Itoa(nspid) + ".txt", mode: rootfs.Follow, perm: 0o666})
		}
	case "VM.cds":
		if !set["filename"] || values["subcmd"] == "static_dump" {
			// The default archive goes in the working directory; a static dump is made by a child JVM whose
			// output the JVM writes to java_pid<child>_stdout and _stderr there (CDS.java,
			// PrintStream(name): follows links, truncates), whatever the archive's name.
			add(write{path: ".", mode: rootfs.PrivateDir})
		}
	case "JFR.dump":
		if !set["filename"] {
			add(write{path: ".", mode: rootfs.PrivateDir}) // hotspot-pid-...jfr in the JVM's working directory
		}
	case "Compiler.directives_add":
		// A directive may turn DumpReplay or DumpInline on: each later compilation it matches then writes
		// replay_pid<pid>_compid<n>.log (inline_pid...) in the JVM's working directory, opened O_TRUNC
		// through whatever is at the name, long after this command. The file is not read here: the
		// directory must be one that nobody else can write in.
		add(write{path: ".", mode: rootfs.PrivateDir})
	case "JFR.start":
		if !set["filename"] && (set["duration"] || on("dumponexit")) {
			add(write{path: ".", mode: rootfs.PrivateDir, deferred: true})
		}
	}
	if cmd != nil {
		for _, o := range append(append([]Option(nil), cmd.Arguments...), cmd.Options...) {
			if o.Type != "FILE" || covered[o.Name] || !set[o.Name] {
				continue
			}
			add(write{option: o.Name, path: expandJVMName(name, values[o.Name], nspid, feature), mode: rootfs.Private})
		}
	}
	return out, nil
}

func hasFileType(cmd *Command) bool {
	for _, o := range append(append([]Option(nil), cmd.Arguments...), cmd.Options...) {
		if o.Type == "FILE" {
			return true
		}
	}
	return false
}

// boolOn reports whether a boolean option's value turns it on: as HotSpot's DCmdArgument<bool> reads it
// (empty, or "true" in any case), and "1", which it refuses, counted as on too.
func boolOn(v string) bool { return v == "" || v == "1" || strings.EqualFold(v, "true") }

// expandJVMName expands %p in a file name where the JVM does (fileNameExpansion); %t stays, since only
// the JVM knows the time it will put there.
func expandJVMName(cmd, name string, nspid, feature int) string {
	expandP, _ := fileNameExpansion(feature, cmd)
	return expandName(name, nspid, expandP, false)
}

// hasTimeSequence reports whether the JVM will put a time into the name (JFR's %t).
func hasTimeSequence(cmd, name string, feature int) bool {
	_, expandT := fileNameExpansion(feature, cmd)
	return expandT && strings.Contains(strings.ReplaceAll(name, "%%", ""), "%t")
}

// logOutput returns the file a VM.log output= value names ("" for stdout, stderr and "#<index>") and how
// the JVM writes it: "file=<name>" or a bare name, quoted or not; %p is the JVM's pid (%t, its start
// time, stays: only the directory matters for a Private path). With output_options filecount=0 the
// file is never rotated, only appended to.
func logOutput(v, outputOptions string, nspid int) (string, rootfs.Mode) {
	switch {
	case v == "stdout" || v == "stderr" || strings.HasPrefix(v, "#"):
		return "", rootfs.Private
	case strings.HasPrefix(v, "file="):
		v = strings.TrimPrefix(v, "file=")
	case strings.Contains(v, "="):
		return "", rootfs.Private // another output type, which the JVM rejects
	}
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		v = v[1 : len(v)-1]
	}
	v = strings.ReplaceAll(v, "%p", strconv.Itoa(nspid))
	// The last filecount= wins in the JVM (LogFileOutput::parse_options): only then is the file never
	// rotated.
	mode := rootfs.Private
	for o := range strings.SplitSeq(outputOptions, ",") {
		if n, ok := strings.CutPrefix(strings.TrimSpace(o), "filecount="); ok {
			mode = rootfs.Private
			if n == "0" {
				mode = rootfs.Append
			}
		}
	}
	return v, mode
}

// Writes are the files a command line has the JVM write, made safe before the line is sent
// (Client.PrepareWrites). Close them after the command.
type Writes struct {
	// Notes say what was changed to make the paths safe ("/tmp/x.jfr was a symbolic link owned by uid
	// 65534 ...; replaced it ..."), for people.
	Notes []string

	items []preparedWrite
	lock  *MapLock
}

// MapLock is a held lock of a JVM's perf maps (LockMap).
type MapLock struct{ release func() }

// Close releases the lock and removes its file; a nil lock (a read-only /tmp) is fine.
func (l *MapLock) Close() {
	if l != nil && l.release != nil {
		l.release()
		l.release = nil
	}
}

type preparedWrite struct {
	w write
	p *rootfs.Prepared
}

// Close releases the handles and the lock; the files stay.
func (ws *Writes) Close() {
	if ws == nil {
		return
	}
	for _, it := range ws.items {
		it.p.Close()
	}
	ws.items = nil
	if ws.lock != nil {
		ws.lock.Close()
		ws.lock = nil
	}
}

// Paths are the files (or directories) the line has the JVM write, as the JVM sees them and from the
// caller's side.
func (ws *Writes) Paths() (jvm, host []string) {
	if ws == nil {
		return nil, nil
	}
	for _, it := range ws.items {
		jvm = append(jvm, it.p.Path)
		host = append(host, it.p.HostPath())
	}
	return jvm, host
}

// Check is called after the command returned successfully: every file made for the JVM must now be
// at its name and, unless the JVM writes it later (JFR.start) or appends to it (VM.log), hold what the
// JVM wrote. An error means the command's report of success cannot be trusted.
func (ws *Writes) Check() error {
	if ws == nil {
		return nil
	}
	var errs []error
	for _, it := range ws.items {
		var err error
		if it.w.deferred {
			err = it.p.Still()
		} else {
			err = it.p.Written()
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Failed is called when the command failed, by its status or in its output out: the files made for
// it that the JVM did not write are removed, so that a failed command leaves nothing behind, as it
// would without them. A recording that JFR.start writes when it stops is kept unless out shows that
// it did not start: without its prepared file, the JVM would create the name itself later, following
// whatever is there then.
func (ws *Writes) Failed(out string) {
	if ws == nil {
		return
	}
	for _, it := range ws.items {
		if it.w.deferred && strings.Contains(out, "Started recording") {
			continue
		}
		it.p.Discard() // never a file there before, or one appended to (VM.log): see rootfs.Prepared.Discard
	}
}

// RunWriting runs a command line that may write files the way gjcmd does: PrepareWrites, the line, and
// Writes.Check when the JVM reports success, Writes.Failed when it reports a failure (a status, or a
// failure in its output). Output goes to w as it arrives. The notes of PrepareWrites are returned also
// when the command fails.
func (c *Client) RunWriting(ctx context.Context, w io.Writer, line string) ([]string, error) {
	ws, err := c.PrepareWrites(ctx, line)
	if err != nil {
		return nil, err
	}
	if ws == nil {
		return nil, c.VM.ExecuteTo(ctx, w, "jcmd", line) // no file: nothing to check or remove
	}
	defer ws.Close()
	notes := ws.Notes
	var out strings.Builder // the output of a command that writes a file is short
	err = c.VM.ExecuteTo(ctx, io.MultiWriter(w, &out), "jcmd", line)
	var je *attach.JVMError
	switch {
	case errors.As(err, &je):
		ws.Failed(je.Message)
		return notes, err
	case err != nil:
		return notes, err // interrupted or abandoned: the JVM may still write
	case ReportsFailure(out.String()):
		err := ws.Check() // what the caller was told before the files were removed
		ws.Failed(out.String())
		return notes, err
	}
	return notes, ws.Check()
}

// runWriting is RunWriting for the typed helpers: the output is returned.
func (c *Client) runWriting(ctx context.Context, b *lineBuilder, checked bool) (string, []string, error) {
	line, err := b.line()
	if err != nil {
		return "", nil, err
	}
	if checked {
		if err := c.Check(ctx, line); err != nil {
			return "", nil, err
		}
	}
	var out strings.Builder
	notes, err := c.RunWriting(ctx, &out, line)
	if err != nil && !errors.Is(err, rootfs.ErrNotWritten) {
		return out.String(), notes, err
	}
	if err != nil {
		return out.String(), notes, fmt.Errorf("%w: %s", err, strings.TrimSpace(out.String()))
	}
	return out.String(), notes, nil
}

// ambiguousLine refuses a line that HotSpot's parser (DCmdArgIter) and jdk.jfr's read differently from
// SplitLine and parseArg, so that what is prepared could differ from what the JVM opens: white space
// other than spaces after the command name (HotSpot starts the arguments at the character that ended
// the name, a tab included, and splits them at spaces only), and a quote that does not open a key or
// a value (HotSpot moves the word's start on by one character there and keeps the quote).
func ambiguousLine(line string, words []string) error {
	if strings.ContainsAny(strings.TrimLeft(line, " \t\v\f\r"), "\t\v\f\r") {
		return errors.New("white space other than spaces in the line: HotSpot takes a tab or other such character as part of an argument; separate arguments with spaces")
	}
	for _, w := range words[min(1, len(words)):] {
		if oddQuote(w) {
			return fmt.Errorf("a quote inside %q: HotSpot and JFR read it differently; quote a whole key or value", w)
		}
	}
	return nil
}

// oddQuote reports a word whose key or value has a quote that does not open it, or text after the quote
// that closes it (other than the "=" after a quoted key).
func oddQuote(w string) bool {
	isQuote := func(b byte) bool { return b == '"' || b == '\'' }
	pos := 0
	if pos < len(w) && isQuote(w[pos]) {
		j, ok := closingQuote(w, pos)
		if !ok {
			return true
		}
		if pos = j + 1; pos == len(w) {
			return false
		}
		if w[pos] != '=' {
			return true
		}
	} else {
		for pos < len(w) && w[pos] != '=' {
			if isQuote(w[pos]) {
				return true
			}
			pos++
		}
		if pos == len(w) {
			return false
		}
	}
	pos++ // the "="
	if pos < len(w) && isQuote(w[pos]) {
		j, ok := closingQuote(w, pos)
		return !ok || j != len(w)-1
	}
	return strings.ContainsAny(w[pos:], "\"'")
}

// writtenNow returns the paths (as the JVM opens them) of the files line will have the JVM write now, as
// far as the line and the JVM's defaults name them: not a name the JVM makes up itself (a JFR recording
// in a directory, a name with the JVM's clock in it, JFR.dump's default, a JFR path not ending in .jfr),
// nor a recording JFR.start writes only when it stops.
func (c *Client) writtenNow(ctx context.Context, line string) ([]string, error) {
	words, err := SplitLine(line)
	if err != nil || len(words) == 0 || !mayWrite(words[0], words[1:]) {
		return nil, err
	}
	name := words[0]
	cmd, err := c.Describe(ctx, name)
	if err != nil {
		return nil, err
	}
	feature, _ := c.Feature(ctx)
	planned, err := plannedWrites(name, words[1:], cmd, feature, c.Target().NSPID)
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, w := range planned {
		base := path.Base(w.path)
		// A JFR path may be a directory, where the JVM names the recording: one ending in .jfr is taken
		// for the file's name.
		if w.deferred || w.dirOK && !strings.HasSuffix(base, ".jfr") || w.mode == rootfs.PrivateDir || base == "." ||
			base == "/" || hasTimeSequence(name, w.path, feature) {
			continue
		}
		paths = append(paths, w.path)
	}
	return paths, nil
}
