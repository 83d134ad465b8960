package perfmap

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/attach"
	"github.com/jvmkit/jvmkit/internal/procfs"
	"github.com/jvmkit/jvmkit/internal/rootfs"
	"github.com/jvmkit/jvmkit/jcmd"
)

// The agent libraries built by `make agent` (perfmap/agent/build.sh), one per architecture: amd64 with gcc,
// arm64 with Debian's gcc-aarch64-linux-gnu. Each binary carries them all (18 KB for amd64, 66 KB for
// arm64, whose segments are aligned for 64 KiB pages) and loads the one for its own GOARCH.
//
//go:embed agent/libjvmkit-perfmap-linux-*.so
var agentLibs embed.FS

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
var ErrNoExec = errors.New("perfmap: the JVM's /tmp is mounted noexec")

// agentLibDirPrefix and agentMapDirPrefix name what FromAgent creates in the JVM's /tmp.
const (
	agentLibDirPrefix = ".jvmkit-agent-"
	agentMapDirPrefix = ".jvmkit-perfmap-agent-"
	maxAgentLibrary   = 64 << 20
)

// FromAgent loads a JVMTI agent into JVM pid with the attach mechanism's load operation, has it write the
// map of the JVM's code cache, and reads it: jvmkit's own agent (embedded; see perfmap/agent) or, with
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
// its architecture (see perfmap/agent/build.sh) and opts.Library is empty. A failed load wraps
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
		lib, name, err = embeddedAgent()
	} else {
		lib, name, err = readAgentLibrary(opts.Library)
	}
	if err != nil {
		return nil, err
	}
	aopts := &attach.Options{}
	if opts.Logger != nil { // not a typed nil in the interface
		aopts.Logger = opts.Logger
	}
	vm, err := attach.Dial(ctx, pid, aopts)
	if err != nil {
		return nil, err
	}
	defer vm.Close()
	s := &agentSession{ctx: ctx, t: vm.Target, vm: vm, log: opts.Logger, tmp: -1}
	defer s.close()
	if s.tmp, err = openTmp(s.t); err != nil {
		return nil, err
	}
	// The library and map directories go where the JVM's user could create them (rootfs.MayCreate).
	if err := rootfs.MayCreate(s.tmp, jcmd.HostPath(s.t, "/tmp"), s.t.UID, s.t.GID, s.t.Status.Groups); err != nil {
		return nil, fmt.Errorf("perfmap: not loading an agent into process %d: %w", pid, err)
	}
	if err := s.checkExec(); err != nil {
		return nil, err
	}
	libPath, release, err := s.stageLibrary(name, lib)
	if err != nil {
		return nil, err
	}
	defer release()
	if opts.Library == "" {
		return s.runOurs(libPath, opts.Options)
	}
	return s.runOther(libPath, opts.Library, opts.Options)
}

// agentSession is one FromAgent call: the target and its /tmp.
type agentSession struct {
	ctx context.Context
	t   *attach.Target
	vm  *attach.VM
	log *slog.Logger
	tmp int // O_PATH handle of the JVM's /tmp
}

func (s *agentSession) close() {
	if s.tmp >= 0 {
		unix.Close(s.tmp)
	}
}

func (s *agentSession) debug(msg string, args ...any) {
	if s.log != nil {
		s.log.Debug(msg, append([]any{"pid", s.t.PID}, args...)...)
	}
}

// hostPath is where a person on the host finds /tmp/<name> of the JVM.
func (s *agentSession) hostPath(name string) string { return jcmd.HostPath(s.t, "/tmp/"+name) }

func (s *agentSession) checkExec() error {
	var st unix.Statfs_t
	if err := unix.Fstatfs(s.tmp, &st); err != nil {
		return fmt.Errorf("perfmap: statfs %s: %w", s.hostPath(""), err)
	}
	if st.Flags&unix.ST_NOEXEC != 0 {
		return fmt.Errorf("%w (process %d): a JVMTI agent cannot be loaded from it; use the vmstructs or jcmd strategy", ErrNoExec, s.t.PID)
	}
	return nil
}

// runOurs loads jvmkit's agent with file= in a fresh directory that only the JVM's user can write.
func (s *agentSession) runOurs(libPath, options string) ([]Entry, error) {
	dir, dfd, err := s.makeMapDir()
	if err != nil {
		return nil, err
	}
	defer s.removeMapDir(dir, dfd)
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
	switch err := unix.Fstatat(s.tmp, name, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case err == nil:
		saved = ".jvmkit-perfmap-saved-" + rootfs.RandomHex(8)
		if err := unix.Renameat2(s.tmp, name, s.tmp, saved, unix.RENAME_NOREPLACE); err != nil {
			return nil, fmt.Errorf("perfmap: move %s aside: %w", s.hostPath(name), err)
		}
		s.debug("moved aside", "path", s.hostPath(name), "to", s.hostPath(saved))
	case !errors.Is(err, unix.ENOENT):
		return nil, fmt.Errorf("perfmap: stat %s: %w", s.hostPath(name), err)
	}
	defer func() {
		if saved != "" {
			if err := unix.Renameat(s.tmp, saved, s.tmp, name); err != nil {
				s.debug("restore failed", "path", s.hostPath(saved), "err", err)
			} else {
				s.debug("restored", "path", s.hostPath(name))
			}
		}
	}()
	p, err := rootfs.NewProcess(s.t.PID, s.t.UID, s.t.GID, s.t.Status.Groups, "").Prepare("/tmp/"+name, rootfs.Fresh, 0o644)
	if err != nil {
		return nil, fmt.Errorf("perfmap: not loading agent %s into process %d: %w", hostLib, s.t.PID, err)
	}
	defer p.Close()
	if p.Note != "" {
		s.debug("prepared", "note", p.Note)
	}
	defer func() {
		if p.Remove() {
			s.debug("removed", "path", s.hostPath(name))
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
		return nil, fmt.Errorf("perfmap: map of process %d (%s): %w", s.t.PID, s.hostPath(name), err)
	}
	entries, err := Parse(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("perfmap: map of process %d (%s): %w", s.t.PID, s.hostPath(name), err)
	}
	return entries, nil
}

// load runs the attach load operation. file is the map jvmkit's agent is to write; for another agent
// (ours false), the library's host path, for messages.
func (s *agentSession) load(libPath, options string, ours bool, file string) error {
	start := time.Now()
	err := s.vm.Load(s.ctx, libPath, true, options)
	s.debug("agent load", "library", libPath, "options", options, "duration", time.Since(start), "err", err)
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
		return fmt.Errorf("%s: %s: %s: %w", prefix, op, jvmtiErrorName(code%1000), ae)
	case code >= 4000 && code < 7000:
		op := [...]string{"create a temporary file next to", "write", "rename the map into place at"}[code/1000-4]
		return fmt.Errorf("%s: %s %s: %w: %w", prefix, op, file, unix.Errno(code%1000), ae)
	}
	return fmt.Errorf("%s: %w", prefix, ae)
}

func jvmtiErrorName(e int) string {
	names := map[int]string{
		23: "JVMTI_ERROR_INVALID_METHODID", 98: "JVMTI_ERROR_NOT_AVAILABLE", 99: "JVMTI_ERROR_MUST_POSSESS_CAPABILITY",
		100: "JVMTI_ERROR_NULL_POINTER", 102: "JVMTI_ERROR_INVALID_EVENT_TYPE", 103: "JVMTI_ERROR_ILLEGAL_ARGUMENT",
		110: "JVMTI_ERROR_OUT_OF_MEMORY", 111: "JVMTI_ERROR_ACCESS_DENIED", 112: "JVMTI_ERROR_WRONG_PHASE",
		113: "JVMTI_ERROR_INTERNAL", 115: "JVMTI_ERROR_UNATTACHED_THREAD", 116: "JVMTI_ERROR_INVALID_ENVIRONMENT",
	}
	if n, ok := names[e]; ok {
		return n
	}
	return "jvmtiError " + strconv.Itoa(e)
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

// makeMapDir creates /tmp/.jvmkit-perfmap-agent-<random>, owned by the JVM's user, mode 0700: the agent
// writes there, and nobody but that user and root can put anything in its way. The directory is
// flocked while in use; directories of sessions that were killed (their lock free) are removed first.
func (s *agentSession) makeMapDir() (string, int, error) {
	s.removeStaleMapDirs()
	for range 8 {
		name := agentMapDirPrefix + rootfs.RandomHex(8)
		if err := unix.Mkdirat(s.tmp, name, 0o700); err != nil {
			return "", -1, fmt.Errorf("perfmap: create %s: %w", s.hostPath(name), err)
		}
		s.debug("created", "path", s.hostPath(name))
		dfd, err := unix.Openat(s.tmp, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			continue // another session took it for a stale one before we could lock it: take another
		}
		if err == nil {
			if err = unix.Flock(dfd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
				unix.Close(dfd)
				continue // the same, with the other session still at it
			}
			var st, now unix.Stat_t
			if unix.Fstat(dfd, &st) != nil || unix.Fstatat(s.tmp, name, &now, unix.AT_SYMLINK_NOFOLLOW) != nil ||
				st.Dev != now.Dev || st.Ino != now.Ino {
				unix.Close(dfd)
				continue // removed by the other session before we locked it
			}
			if err = procfs.Explain(unix.Fchown(dfd, s.t.UID, s.t.GID), procfs.CapChown); err == nil {
				err = procfs.Explain(unix.Fchmod(dfd, 0o700), procfs.CapFowner)
			}
			if err != nil {
				unix.Close(dfd)
			}
		}
		if err != nil {
			_ = unix.Unlinkat(s.tmp, name, unix.AT_REMOVEDIR)
			return "", -1, fmt.Errorf("perfmap: prepare %s: %w", s.hostPath(name), err)
		}
		return name, dfd, nil
	}
	return "", -1, fmt.Errorf("perfmap: %s: cannot create a private directory there (other sessions keep removing it)", s.hostPath(""))
}

// removeStaleMapDirs removes the map directories that sessions killed before their clean-up left in the
// JVM's /tmp: directories of the JVM's user with our prefix whose lock is free.
func (s *agentSession) removeStaleMapDirs() {
	names, err := rootfs.ReadDirNames(s.tmp)
	if err != nil {
		return
	}
	for _, n := range names {
		if !strings.HasPrefix(n, agentMapDirPrefix) {
			continue
		}
		dfd, err := unix.Openat(s.tmp, n, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		var st unix.Stat_t
		if unix.Fstat(dfd, &st) != nil || int(st.Uid) != s.t.UID || unix.Flock(dfd, unix.LOCK_EX|unix.LOCK_NB) != nil {
			unix.Close(dfd)
			continue
		}
		s.removeMapDir(n, dfd)
	}
}

// removeMapDir removes the map directory and whatever is in it (the map; temporary files of a failed
// agent). Entries are removed through the directory's handle, never by a path.
func (s *agentSession) removeMapDir(name string, dfd int) {
	defer unix.Close(dfd)
	if names, err := rootfs.ReadDirNames(dfd); err == nil {
		for _, n := range names {
			if unix.Unlinkat(dfd, n, 0) != nil {
				_ = unix.Unlinkat(dfd, n, unix.AT_REMOVEDIR)
			}
		}
	}
	if err := unix.Unlinkat(s.tmp, name, unix.AT_REMOVEDIR); err != nil {
		s.debug("remove failed", "path", s.hostPath(name), "err", err)
		return
	}
	s.debug("removed", "path", s.hostPath(name))
}

// stageLibrary puts lib into /tmp/.jvmkit-agent-<sha256>/<name> in the JVM's root and returns its path as
// the JVM sees it, and a function that removes it when no other FromAgent uses it.
func (s *agentSession) stageLibrary(name string, lib []byte) (string, func(), error) {
	sum := sha256.Sum256(lib)
	base := agentLibDirPrefix + hex.EncodeToString(sum[:16])
	dir := base
	for attempt := 0; ; attempt++ {
		if err := s.ctx.Err(); err != nil {
			return "", nil, err
		}
		if attempt == 8 {
			return "", nil, fmt.Errorf("perfmap: %s keeps changing; not loading an agent from it", s.hostPath(dir))
		}
		dfd, state, err := s.openLibDir(dir)
		if err != nil {
			return "", nil, err
		}
		switch state {
		case libDirGone:
			continue
		case libDirUnusable:
			if dir != base {
				return "", nil, fmt.Errorf("perfmap: %s: cannot use it", s.hostPath(dir))
			}
			// Not ours, or locked by someone for too long: a private directory loads a second instance
			// of the library into a JVM that has the shared one already, which is harmless.
			dir = base + "-" + rootfs.RandomHex(6)
			continue
		}
		if err := s.placeLibrary(dfd, dir, name, lib); err != nil {
			unix.Close(dfd)
			return "", nil, err
		}
		if err := s.checkStaged(dfd, dir, name); err != nil {
			if errors.Is(err, errReplaced) && attempt < 7 {
				// Another FromAgent replaced a wrong file at the name at the same time as this one:
				// the next round keeps whichever copy is there now, if it is right.
				s.debug("replaced while checking; again", "path", s.hostPath(dir+"/"+name))
				unix.Close(dfd)
				continue
			}
			s.releaseLibrary(dfd, dir, name)
			return "", nil, err
		}
		release := func() { s.releaseLibrary(dfd, dir, name) }
		return "/tmp/" + dir + "/" + name, release, nil
	}
}

// errReplaced: the library at the path the JVM loads by is not the file in the directory just checked.
var errReplaced = errors.New("replaced")

// checkStaged makes sure that the path the JVM will load the library by, /tmp/<dir>/<name> inside its
// root, is one that nobody but root and the JVM's user can change before the JVM opens it, and that it
// leads to the copy just placed. The JVM runs whatever that path names with its own privileges: in a
// /tmp that other users may write without the sticky bit (a Kubernetes emptyDir mounted at /tmp is
// 0777), or that another user owns, that user can rename our directory away between our write and the
// JVM's dlopen and put one of their own, holding their library, under its name (seen: a root JVM ran
// uid 65534's code that way). rootfs.Prepare walks the path as the kernel will for the JVM and refuses
// such a path with an error wrapping rootfs.ErrUnsafe; what passes cannot change until the load.
func (s *agentSession) checkStaged(dfd int, dir, name string) error {
	path := "/tmp/" + dir + "/" + name
	p, err := rootfs.NewProcess(s.t.PID, s.t.UID, s.t.GID, s.t.Status.Groups, "").Prepare(path, rootfs.Exclusive, 0)
	if err != nil {
		return fmt.Errorf("perfmap: not loading an agent into process %d: %w", s.t.PID, err)
	}
	p.Close()
	f, err := rootfs.OpenRegular(s.t.Root, path, s.hostPath(dir+"/"+name))
	if err != nil {
		return fmt.Errorf("perfmap: not loading an agent into process %d: %w", s.t.PID, err)
	}
	defer f.Close()
	var got, placed unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &got); err != nil {
		return fmt.Errorf("perfmap: stat %s: %w", s.hostPath(dir+"/"+name), err)
	}
	if err := unix.Fstatat(dfd, name, &placed, unix.AT_SYMLINK_NOFOLLOW); err != nil || got.Dev != placed.Dev || got.Ino != placed.Ino {
		return fmt.Errorf("perfmap: %s is not the library just placed there: %w; not loading it into process %d", s.hostPath(dir+"/"+name), errReplaced, s.t.PID)
	}
	return nil
}

// releaseLibrary removes the library directory unless another FromAgent still uses it. Whoever finishes
// last takes the directory's lock exclusively and removes it; one that finds it shared lets go of its own
// shared lock and tries again for a while, so that two finishing together do not both leave it.
func (s *agentSession) releaseLibrary(dfd int, dir, name string) {
	defer unix.Close(dfd)
	deadline := time.Now().Add(2 * time.Second)
	for unix.Flock(dfd, unix.LOCK_EX|unix.LOCK_NB) != nil {
		_ = unix.Flock(dfd, unix.LOCK_UN)
		if time.Now().After(deadline) {
			s.debug("left for another user", "path", s.hostPath(dir))
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	var st, now unix.Stat_t
	if unix.Fstat(dfd, &st) != nil || unix.Fstatat(s.tmp, dir, &now, unix.AT_SYMLINK_NOFOLLOW) != nil || now.Dev != st.Dev || now.Ino != st.Ino {
		return // removed by the last other user
	}
	_ = unix.Unlinkat(dfd, name, 0)
	if err := unix.Unlinkat(s.tmp, dir, unix.AT_REMOVEDIR); err != nil {
		s.debug("remove failed", "path", s.hostPath(dir), "err", err)
		return
	}
	s.debug("removed", "path", s.hostPath(dir))
}

// States of a library directory for openLibDir.
const (
	libDirOK       = iota
	libDirGone     // removed or replaced under us: try the same name again
	libDirUnusable // not ours, or locked too long: use another name
)

// openLibDir opens (creating it if needed) the library directory, shared-locked.
func (s *agentSession) openLibDir(dir string) (int, int, error) {
	err := unix.Mkdirat(s.tmp, dir, 0o755)
	fresh := err == nil
	if err != nil && !errors.Is(err, unix.EEXIST) {
		return -1, 0, fmt.Errorf("perfmap: create %s: %w", s.hostPath(dir), err)
	}
	if fresh {
		s.debug("created", "path", s.hostPath(dir))
	}
	dfd, err := unix.Openat(s.tmp, dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		switch {
		case errors.Is(err, unix.ENOENT):
			return -1, libDirGone, nil
		case errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR):
			return -1, libDirUnusable, nil // a symbolic link or a file planted there
		}
		return -1, 0, fmt.Errorf("perfmap: open %s: %w", s.hostPath(dir), err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(dfd, &st); err != nil {
		unix.Close(dfd)
		return -1, 0, fmt.Errorf("perfmap: stat %s: %w", s.hostPath(dir), err)
	}
	if fresh {
		if err := unix.Fchmod(dfd, 0o755); err != nil {
			unix.Close(dfd)
			return -1, 0, fmt.Errorf("perfmap: chmod %s: %w", s.hostPath(dir), err)
		}
	} else if int(st.Uid) != os.Geteuid() || st.Mode&0o022 != 0 {
		unix.Close(dfd)
		s.debug("not using", "path", s.hostPath(dir), "uid", st.Uid, "mode", fmt.Sprintf("%o", st.Mode&0o7777))
		return -1, libDirUnusable, nil
	}
	locked := false
	for range 50 {
		if unix.Flock(dfd, unix.LOCK_SH|unix.LOCK_NB) == nil {
			locked = true
			break
		}
		select {
		case <-s.ctx.Done():
			unix.Close(dfd)
			return -1, 0, s.ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	if !locked {
		unix.Close(dfd)
		return -1, libDirUnusable, nil
	}
	// Still the directory under that name? Its last user may have removed it before we locked it.
	var now unix.Stat_t
	if unix.Fstatat(s.tmp, dir, &now, unix.AT_SYMLINK_NOFOLLOW) != nil || now.Dev != st.Dev || now.Ino != st.Ino {
		unix.Close(dfd)
		return -1, libDirGone, nil
	}
	return dfd, libDirOK, nil
}

// placeLibrary makes dfd/name hold lib: an existing copy is kept when it is a regular file of ours with
// the same bytes; otherwise a new one is written beside it and renamed to the name. A name that is free
// is taken without replacing (two FromAgent placing the library at once: the second keeps the first's
// copy, so that the copy the first checks and loads stays in place); only a wrong file is replaced.
func (s *agentSession) placeLibrary(dfd int, dir, name string, lib []byte) error {
	for range 3 {
		exists := false
		if fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0); err == nil {
			exists = true
			f := os.NewFile(uintptr(fd), name)
			var st unix.Stat_t
			same := unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG && int(st.Uid) == os.Geteuid() &&
				st.Mode&0o022 == 0 && st.Size == int64(len(lib))
			if same {
				got, err := io.ReadAll(io.LimitReader(f, int64(len(lib))+1))
				same = err == nil && bytes.Equal(got, lib)
			}
			f.Close()
			if same {
				return nil
			}
		} else if !errors.Is(err, unix.ENOENT) {
			exists = true // a symbolic link (ELOOP), a socket (ENXIO), ...: replaced, never followed
		}
		write := rootfs.WriteNewFile
		if exists {
			write = rootfs.WriteFile
		}
		err := write(dfd, s.hostPath(dir), name, lib, -1, -1, 0o644)
		if err == nil {
			s.debug("created", "path", s.hostPath(dir+"/"+name))
			return nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("perfmap: %w", err)
		}
		// Placed by another FromAgent just now: look at theirs.
	}
	return fmt.Errorf("perfmap: %s keeps changing; not loading an agent from it", s.hostPath(dir+"/"+name))
}

func embeddedAgent() ([]byte, string, error) {
	name := "libjvmkit-perfmap-linux-" + runtime.GOARCH + ".so"
	lib, err := agentLibs.ReadFile("agent/" + name)
	if err != nil {
		return nil, "", fmt.Errorf("perfmap: agent: %w: this build has no agent library for linux/%s (perfmap/agent/%s was not built); run `make agent` on linux/%s and rebuild, or load another agent (AgentOptions.Library, gjmaps --agent PATH)",
			ErrNotSupported, runtime.GOARCH, name, runtime.GOARCH)
	}
	return lib, name, nil
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
