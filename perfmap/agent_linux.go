package perfmap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/attach"
	"github.com/jvmkit/jvmkit/internal/rootfs"
	"github.com/jvmkit/jvmkit/jcmd"
	"github.com/jvmkit/jvmkit/jvmti"
)

// AgentOptions choose what FromAgent loads into the JVM and how the agent names code.
type AgentOptions struct {
	// Options for jvmkit's agent: a comma-separated list of the words below (empty items are ignored;
	// anything else is refused before the agent is loaded). They are perf-map-agent's options, with its
	// names, but matched as whole words:
	//
	//   (none)          a compiled method is "Lpkg/Class;::method", its class in the JVM's notation;
	//                   generated code is named as the JVM names it ("Interpreter", "StubRoutines (1)")
	//   unfold          each range of code inlined into a compiled method gets its own entry, named
	//                   "inlined in root" ("LB;::g in LA;::f"); the entries of one compiled method tile
	//                   its code without overlaps
	//   unfoldsimple    as unfold, an inlined range named by its own method ("LB;::g")
	//   unfoldall       as unfold, every range named by its inlining chain, outermost method first,
	//                   joined by "->" ("LA;::f->LB;::g->LC;::h"); unfoldall wins over unfoldsimple,
	//                   which wins over unfold
	//   use_semicolon_unfold_delimiter
	//                   unfoldall joins with ";" instead of "->"
	//   msig            the JVM signature follows the method name ("LA;::f(JI)J")
	//   sourcepos       "(File.java:N)" follows, N the line of the method's first bytecode; "(File.java)"
	//                   without line numbers; nothing without a source file
	//   dottedclass     "/" in class names becomes "." ("Ljava.lang.String;::hashCode")
	//   cleanclass      the "L" and ";" around class names go ("java/lang/String::hashCode"; with
	//                   dottedclass "java.lang.String::hashCode")
	//   annotate_java_frames
	//                   "_[j]" follows the name of each compiled method, "_[i]" that of each inlined one
	//                   ("LA;::f_[j]", "LB;::g in LA;::f_[i]", "LA;::f_[j]->LB;::g_[i]"), which flame
	//                   graphs colour; generated code is not annotated
	//   debug_dump_unfold_entries
	//                   accepted and ignored (perf-map-agent prints to the JVM's stdout with it)
	//
	// A name is built as class, "::", method, signature, source position, annotation; line breaks
	// become spaces. The agent also knows file=PATH, which FromAgent sets itself. With Library set,
	// Options go to that library unchecked.
	Options string
	// Library, when set, is the host path of another JVMTI agent to load instead of jvmkit's, such as
	// perf-map-agent's libperfmap.so. It is copied into the JVM's /tmp like jvmkit's own and must write
	// /tmp/perf-<pid>.map itself (pid as the JVM sees it), which FromAgent reads.
	Library string
	// Logger receives debug records: the files FromAgent creates and removes in the JVM's /tmp, with
	// their host paths, and timings. Nil: none.
	Logger *slog.Logger
}

// ErrNoExec is returned by FromAgent when the JVM's /tmp is mounted noexec: a JVMTI agent cannot be loaded
// from there.
var ErrNoExec = jvmti.ErrNoExec

const (
	agentMapDirPrefix = ".jvmkit-perfmap-agent-"
	maxAgentLibrary   = 64 << 20
)

// FromAgent loads a JVMTI agent into JVM pid with the attach mechanism's load operation, has it write the
// map of the JVM's code cache, and reads it: jvmkit's own agent (embedded; see jvmti/agent) or, with
// opts.Library, another one.
//
// The library is copied into the JVM's own /tmp (inside its mount namespace, reached under
// /proc/<pid>/root without following symbolic links out of it), into a directory owned by root, mode
// 0755, named after the library's SHA-256 (/tmp/.jvmkit-agent-<hash>/): the JVM, whatever its user, can
// read it, and nobody else can change it. Loading by the same path again reaches the library already in
// the JVM (the dynamic linker matches loaded libraries by name), so repeated calls do not pile up copies
// of it. The copy is removed after the load unless another FromAgent holds it (a shared flock on the
// directory). The JVM opens the library by that path with its own privileges, so the path must be one
// that nobody but root and the JVM's user can change: a /tmp that other users may write without the
// sticky bit (a Kubernetes emptyDir at /tmp) or that another user owns is refused with an error wrapping
// rootfs.ErrUnsafe (fs.ErrPermission), and nothing is loaded.
//
// jvmkit's agent writes the map into a fresh directory in the JVM's /tmp owned by the JVM's user, mode
// 0700 (/tmp/.jvmkit-perfmap-agent-<random>/), which is removed afterwards. Another agent writes
// /tmp/perf-<pid>.map: a file already there is moved aside for the load and put back afterwards, so that
// what existed before is left as it was.
//
// Errors: the attach error when the JVM cannot be attached (-XX:+DisableAttachMechanism:
// attach.ErrAttachDisabled); ErrNoExec for a noexec /tmp; ErrNotSupported when this build has no agent for
// its architecture (see jvmti/agent/build.sh) and opts.Library is empty. A failed load wraps
// *attach.AgentError, whose ReturnCode is what jvmkit's agent returned from Agent_OnAttach:
//
//	1           invalid options
//	2           the JVM offers no JVMTI 1.2 environment
//	3           out of memory in the JVM
//	1000 + e    JVMTI AddCapabilities failed with jvmtiError e
//	2000 + e    creating monitors, setting callbacks or events failed with jvmtiError e
//	3000 + e    JVMTI GenerateEvents failed with jvmtiError e
//	4000 + n    creating the map's temporary file failed with errno n
//	5000 + n    writing it failed with errno n
//	6000 + n    renaming it into place failed with errno n
//
// and errors for codes 4000 to 6999 also wrap the errno (errors.Is(err, fs.ErrPermission) works).
//
// On JDK 21 and later the JVM prints a warning that an agent was loaded dynamically on its own stderr
// (JEP 451), unless it runs with -XX:+EnableDynamicAgentLoading; a JVM started with
// -XX:-EnableDynamicAgentLoading refuses the load.
func FromAgent(ctx context.Context, pid int, opts AgentOptions) ([]Entry, error) {
	var (
		lib  []byte
		name string
		err  error
	)
	if opts.Library == "" {
		if err := checkAgentOptions(opts.Options); err != nil {
			return nil, err
		}
		lib, name, err = jvmti.Library("perfmap")
	} else {
		lib, name, err = readAgentLibrary(opts.Library)
	}
	if err != nil {
		return nil, err
	}
	var log attach.Logger
	if opts.Logger != nil { // not a typed nil in the interface
		log = opts.Logger
	}
	js, err := jvmti.Open(ctx, pid, log)
	if errors.Is(err, ErrNoExec) {
		return nil, fmt.Errorf("%w; use the vmstructs or jcmd strategy", err)
	}
	if err != nil {
		return nil, err
	}
	defer js.Close()
	s := &agentSession{ctx: ctx, js: js, t: js.Target(), log: opts.Logger}
	libPath, release, err := js.Stage(name, lib)
	if err != nil {
		return nil, err
	}
	defer release()
	if opts.Library == "" {
		return s.runOurs(libPath, opts.Options)
	}
	return s.runOther(libPath, opts.Library, opts.Options)
}

// agentSession is one FromAgent call.
type agentSession struct {
	ctx context.Context
	js  *jvmti.Session
	t   *attach.Target
	log *slog.Logger
}

func (s *agentSession) debug(msg string, args ...any) {
	if s.log != nil {
		s.log.Debug(msg, append([]any{"pid", s.t.PID}, args...)...)
	}
}

// runOurs loads jvmkit's agent with file= in a fresh directory that only the JVM's user can write.
func (s *agentSession) runOurs(libPath, options string) ([]Entry, error) {
	dir, dfd, err := s.js.PrivateDir(agentMapDirPrefix)
	if err != nil {
		return nil, err
	}
	defer s.js.RemovePrivateDir(dir, dfd)
	file := "/tmp/" + dir + "/perf-" + strconv.Itoa(s.t.NSPID) + ".map"
	if options != "" {
		options += ","
	}
	options += "file=" + file
	if err := s.load(libPath, options, true, file); err != nil {
		return nil, err
	}
	return s.readMap(file)
}

// runOther loads another agent, which writes /tmp/perf-<nspid>.map with the JVM's privileges,
// following whatever is at the name (perf-map-agent: fopen "w"). What was there before is moved aside
// and put back afterwards; a new file of the JVM's user is put at the name first (rootfs.Prepare), and
// the map is read back from that file.
func (s *agentSession) runOther(libPath, hostLib, options string) ([]Entry, error) {
	name := "perf-" + strconv.Itoa(s.t.NSPID) + ".map"
	if _, foreign := jcmd.MapPID(s.t); foreign {
		return nil, fmt.Errorf("%w: perfmap: not loading agent %s into process %d: it writes /tmp/perf-%d.map, which is host process %d's map (the JVM is pid %d in its own pid namespace and shares the host's /tmp)",
			attach.ErrPermission, hostLib, s.t.PID, s.t.NSPID, s.t.NSPID, s.t.NSPID)
	}
	saved := ""
	var st unix.Stat_t
	switch err := unix.Fstatat(s.js.Tmp(), name, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case err == nil:
		saved = ".jvmkit-perfmap-saved-" + rootfs.RandomHex(8)
		if err := unix.Renameat2(s.js.Tmp(), name, s.js.Tmp(), saved, unix.RENAME_NOREPLACE); err != nil {
			return nil, fmt.Errorf("perfmap: move %s aside: %w", s.js.HostPath(name), err)
		}
		s.debug("moved aside", "path", s.js.HostPath(name), "to", s.js.HostPath(saved))
	case !errors.Is(err, unix.ENOENT):
		return nil, fmt.Errorf("perfmap: stat %s: %w", s.js.HostPath(name), err)
	}
	defer func() {
		if saved != "" {
			if err := unix.Renameat(s.js.Tmp(), saved, s.js.Tmp(), name); err != nil {
				s.debug("restore failed", "path", s.js.HostPath(saved), "err", err)
			} else {
				s.debug("restored", "path", s.js.HostPath(name))
			}
		}
	}()
	p, err := rootfs.NewProcess(s.t.PID, s.t.UID, s.t.GID, s.t.Status.Groups, "").Prepare(context.Background(), "/tmp/"+name, rootfs.Fresh, 0o644)
	if err != nil {
		return nil, fmt.Errorf("perfmap: not loading agent %s into process %d: %w", hostLib, s.t.PID, err)
	}
	defer p.Close()
	if p.Note != "" {
		s.debug("prepared", "note", p.Note)
	}
	defer func() {
		if p.Remove() {
			s.debug("removed", "path", s.js.HostPath(name))
		}
	}()
	if err := s.load(libPath, options, false, hostLib); err != nil {
		return nil, err
	}
	f, err := p.Result()
	if err != nil {
		return nil, fmt.Errorf("perfmap: agent %s loaded into process %d but did not write its map: %w", hostLib, s.t.PID, err)
	}
	if f != p.File() {
		defer f.Close()
	}
	data, err := rootfs.ReadStable(f)
	if err != nil {
		return nil, fmt.Errorf("perfmap: map of process %d (%s): %w", s.t.PID, s.js.HostPath(name), err)
	}
	entries, err := Parse(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("perfmap: map of process %d (%s): %w", s.t.PID, s.js.HostPath(name), err)
	}
	return entries, nil
}

// load runs the attach load operation. file is the map jvmkit's agent is to write; for another agent
// (ours false), the library's host path, for messages.
func (s *agentSession) load(libPath, options string, ours bool, file string) error {
	err := s.js.Load(s.ctx, libPath, options)
	if err == nil {
		return nil
	}
	var ae *attach.AgentError
	if !errors.As(err, &ae) {
		return err
	}
	if !ours {
		return fmt.Errorf("perfmap: load agent %s into process %d: %w", file, s.t.PID, err)
	}
	if ae.ReturnCode <= 0 {
		return fmt.Errorf("perfmap: load agent into process %d: %w", s.t.PID, err)
	}
	return agentFailure(s.t.PID, ae, options, file)
}

// agentFailure explains a return code of jvmkit's agent (see FromAgent and the C source).
func agentFailure(pid int, ae *attach.AgentError, options, file string) error {
	code := ae.ReturnCode
	prefix := fmt.Sprintf("perfmap: agent in process %d", pid)
	switch {
	case code == 1:
		return fmt.Errorf("%s: invalid options %q: %w", prefix, options, ae)
	case code == 2:
		return fmt.Errorf("%s: the JVM offers no JVMTI 1.2 environment: %w", prefix, ae)
	case code == 3:
		return fmt.Errorf("%s: out of memory in the JVM: %w", prefix, ae)
	case code >= 1000 && code < 4000:
		op := [...]string{"JVMTI AddCapabilities", "JVMTI event set-up", "JVMTI GenerateEvents"}[code/1000-1]
		return fmt.Errorf("%s: %s: %s: %w", prefix, op, jvmti.ErrorName(code%1000), ae)
	case code >= 4000 && code < 7000:
		op := [...]string{"create a temporary file next to", "write", "rename the map into place at"}[code/1000-4]
		return fmt.Errorf("%s: %s %s: %w: %w", prefix, op, file, unix.Errno(code%1000), ae)
	}
	return fmt.Errorf("%s: %w", prefix, ae)
}

func (s *agentSession) readMap(path string) ([]Entry, error) {
	f, err := jcmd.OpenInJVM(s.t, path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	entries, err := Parse(f)
	if err != nil {
		return nil, fmt.Errorf("perfmap: map of process %d (%s): %w", s.t.PID, f.Name(), err)
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("perfmap: process %d: the agent wrote an empty map", s.t.PID)
	}
	return entries, nil
}

func readAgentLibrary(path string) ([]byte, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, "", fmt.Errorf("perfmap: agent library: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, "", fmt.Errorf("perfmap: agent library: %w", err)
	}
	if !st.Mode().IsRegular() || st.Size() > maxAgentLibrary {
		return nil, "", fmt.Errorf("perfmap: agent library %s: not a regular file of at most %d MiB", path, maxAgentLibrary>>20)
	}
	lib, err := io.ReadAll(io.LimitReader(f, maxAgentLibrary))
	if err != nil {
		return nil, "", fmt.Errorf("perfmap: agent library: %w", err)
	}
	name := filepath.Base(path)
	if strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".so") {
		name = "agent.so"
	}
	return lib, name, nil
}

// agentWords are the options jvmkit's agent knows, besides file=.
var agentWords = map[string]bool{
	"unfold": true, "unfoldsimple": true, "unfoldall": true, "use_semicolon_unfold_delimiter": true,
	"msig": true, "sourcepos": true, "dottedclass": true, "cleanclass": true, "annotate_java_frames": true,
	"debug_dump_unfold_entries": true,
}

func checkAgentOptions(options string) error {
	for w := range strings.SplitSeq(options, ",") {
		switch {
		case w == "" || agentWords[w]:
		case strings.HasPrefix(w, "file="):
			return fmt.Errorf("perfmap: agent options: file= is chosen by FromAgent")
		default:
			return fmt.Errorf("perfmap: agent options: unknown option %q (want unfold, unfoldsimple, unfoldall, use_semicolon_unfold_delimiter, msig, sourcepos, dottedclass, cleanclass, annotate_java_frames)", w)
		}
	}
	return nil
}
