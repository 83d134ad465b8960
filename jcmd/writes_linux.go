package jcmd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/attach"
	"github.com/jvmkit/jvmkit/internal/procfs"
	"github.com/jvmkit/jvmkit/internal/rootfs"
)

// PrepareWrites finds the files that a diagnostic command line will have the JVM write (see
// plannedWrites) and makes each safe in the JVM's world before the line is sent (rootfs.Prepare): every
// directory on the way must be one that only root and the JVM's user can change, or a sticky one where
// the entries on the way belong to them; at a name in a sticky directory that others can write in, such
// as /tmp, a new empty file of the JVM's user replaces whatever is there (a symbolic link planted by
// another user above all) unless the JVM creates the file exclusively. A path that cannot be made safe
// is refused with an error wrapping attach.ErrPermission, and nothing is to be sent.
//
// A line that writes the JVM's perf map (Compiler.perfmap) also takes the JVM's map lock (LockMap),
// held until Close. JVMTI.agent_load's library is refused when anyone but root and the JVM's user could
// change it (rootfs.Process.CheckTrusted).
//
// A line that cannot be split into one command's words is refused (an error, nothing to send): the JVM
// runs each line of a request as a command of its own, none of them prepared here.
func (c *Client) PrepareWrites(ctx context.Context, line string) (*Writes, error) {
	words, err := SplitLine(line)
	if err == nil {
		err = ambiguousLine(line, words)
	}
	if err != nil {
		return nil, fmt.Errorf("jcmd: not sending %q: %w", excerpt(line), err)
	}
	if len(words) == 0 {
		return nil, nil // the JVM answers an empty line itself, and writes nothing
	}
	if words[0] == "JVMTI.agent_load" && len(words) > 1 {
		// The library (or a Java agent's jar) to load, as the JVM's parser reads the first argument.
		if a, err := parseArg(words[1]); err == nil && a.key != "" {
			if err := c.checkLibrary(ctx, words[0], a.key); err != nil {
				return nil, err
			}
		}
	}
	// The system properties, read at most once for the line (user.dir for relative names, java.io.tmpdir
	// for JFR's repository). A failed read is not tried again: both then take the safer default.
	props := sync.OnceValues(func() (map[string]string, error) { return c.SystemProperties(ctx) })
	ws, err := c.prepareFiles(ctx, words[0], words[1:], props)
	if err != nil || !setsUpJFR(words[0]) {
		return ws, err
	}
	if _, err := c.Describe(ctx, words[0]); errors.Is(err, ErrUnknownCommand) {
		return ws, nil // the JVM refuses the line: JFR is not set up
	}
	// JFR's repository last: a line refused above leaves the JVM as it was.
	note, err := c.guardJFRRepository(ctx, words[0], props)
	if err != nil {
		ws.Close()
		return nil, err
	}
	if note != "" {
		if ws == nil {
			ws = &Writes{}
		}
		ws.Notes = append(ws.Notes, note)
	}
	return ws, nil
}

// prepareFiles is PrepareWrites' work on the files of command name with arguments args.
func (c *Client) prepareFiles(ctx context.Context, name string, args []string, props func() (map[string]string, error)) (*Writes, error) {
	if !mayWrite(name, args) {
		return nil, nil
	}
	// The JVM's description of the command tells its arguments apart, and that it has the command at
	// all: nothing is prepared for a command the JVM refuses (JDK 11 has no Compiler.perfmap).
	cmd, err := c.Describe(ctx, name)
	switch {
	case errors.Is(err, ErrUnknownCommand):
		return nil, nil
	case err != nil && (fileRules(name) != nil || writesWithoutArguments(name)):
		return nil, fmt.Errorf("jcmd: %s: cannot tell which files it writes: %w", name, err)
	case err != nil:
		cmd = nil // a command not known to write files, whose arguments cannot be told apart
	}
	feature, _ := c.Feature(ctx)
	planned, err := plannedWrites(name, args, cmd, feature, c.Target().NSPID)
	if err != nil {
		return nil, err
	}
	planned = resolveJava(name, planned, props)
	return c.preparePlanned(ctx, name, planned)
}

// resolveJava makes the relative paths of a command implemented in Java (JFR's, Thread.dump_to_file)
// absolute the way Java does, against the JVM's user.dir, which -Duser.dir may have set to another
// directory than its working directory (against which HotSpot's own commands resolve them). VM.cds
// has both: Java (CDS.java) writes the child JVM's output files against user.dir, HotSpot the archive,
// so both directories are prepared (Private: nothing is made in either). The name is joined as it is,
// not cleaned: ".." after a link is the kernel's to resolve, and Prepare walks it so.
func resolveJava(name string, planned []write, props func() (map[string]string, error)) []write {
	java, both := strings.HasPrefix(name, "JFR.") || name == "Thread.dump_to_file", name == "VM.cds"
	if !java && !both || !slices.ContainsFunc(planned, func(w write) bool { return !path.IsAbs(w.path) }) {
		return planned
	}
	m, err := props()
	if err != nil || !path.IsAbs(m["user.dir"]) {
		return planned // the working directory, as before
	}
	dir := strings.TrimSuffix(m["user.dir"], "/")
	for i := range len(planned) {
		if path.IsAbs(planned[i].path) {
			continue
		}
		if both {
			w := planned[i]
			w.path = dir + "/" + w.path
			planned = append(planned, w)
		} else {
			planned[i].path = dir + "/" + planned[i].path
		}
	}
	return planned
}

// PrepareOperation is PrepareWrites for a raw attach operation (jattach's) with its arguments:
// dumpheap has the JVM create its first argument exclusively (HeapDumper without overwrite), and
// inspectheap writes its second (JDK 16 and later) with fopen "w", following a link there. The other
// operations write no file named by the caller; a "jcmd" operation's command line goes through
// PrepareWrites.
func (c *Client) PrepareOperation(ctx context.Context, op string, args []string) (*Writes, error) {
	var planned []write
	switch {
	case op == "load" && len(args) > 1:
		// load <library> true: a path; false: a name, lib<name>.so in the JDK's lib directory (else the
		// linker's search path, never a directory of the caller's choosing). The instrument library's
		// options start with a Java agent's jar, whose classes the JVM loads.
		lib, isPath := args[0], args[1] == "true"
		if isPath {
			if err := c.checkLibrary(ctx, op, lib); err != nil {
				return nil, err
			}
		} else if strings.Contains(lib, "/") {
			return nil, fmt.Errorf("%w: load: %q is not a library name (no \"/\" with false: a name in the JDK's lib directory); give its path with true", attach.ErrPermission, lib)
		}
		if len(args) > 2 && (lib == "instrument" || strings.HasSuffix(lib, "/libinstrument.so")) {
			jar, _, _ := strings.Cut(args[2], "=")
			if err := c.checkLibrary(ctx, op, jar); err != nil {
				return nil, err
			}
		}
	case op == "dumpheap" && len(args) > 0 && args[0] != "":
		planned = append(planned, write{option: "dumpheap", path: args[0], mode: rootfs.Exclusive, perm: 0o600})
	case op == "inspectheap" && len(args) > 1 && args[1] != "":
		if feature, err := c.Feature(ctx); err != nil || feature >= 16 {
			planned = append(planned, write{option: "inspectheap", path: args[1], mode: rootfs.Follow, perm: 0o666})
		}
	}
	return c.preparePlanned(ctx, op, planned)
}

// checkLibrary refuses a library (or Java agent's jar) that the JVM is to load from path when anyone but
// root and the JVM's user could change what is there (rootfs.Process.CheckTrusted): another user's
// directory, link or file on the way would run their code in the JVM.
//
// The path must be absolute: the linker searches for a bare name in directories of its own, and Java
// resolves a relative jar against user.dir. A path through /proc is refused (/proc/self is the JVM's to
// the JVM, ours to us). A file that is not there is left to the JVM to report only where nobody else
// could make it first: the deepest directory of the path that exists must be private.
func (c *Client) checkLibrary(ctx context.Context, cmd, p string) error {
	t := c.Target()
	if !path.IsAbs(p) || p == "/proc" || strings.HasPrefix(path.Clean(p), "/proc/") {
		return fmt.Errorf("%w: %s: %q: give the absolute path of the file to load, outside /proc", attach.ErrPermission, cmd, p)
	}
	pr := c.process(ctx)
	err := pr.CheckTrusted(p)
	if errors.Is(err, os.ErrNotExist) {
		d := path.Dir(path.Clean(p)) // the deepest directory of the path that exists
		for d != "/" {
			fd, oerr := openInRoot(t, d, unix.O_PATH|unix.O_DIRECTORY, unix.RESOLVE_IN_ROOT)
			if oerr == nil {
				unix.Close(fd)
				break
			}
			d = path.Dir(d)
		}
		prep, perr := pr.Prepare(ctx, d, rootfs.PrivateDir, 0)
		if perr == nil {
			prep.Close()
			return nil // the JVM says it cannot load it; nobody else can put anything there
		}
		err = fmt.Errorf("%w: %s is not there, and other users could make it first: %w", rootfs.ErrUnsafe, p, perr)
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, rootfs.ErrUnsafe):
		return fmt.Errorf("%w: %s: not having JVM %d (uid %d) load %s: %w", attach.ErrPermission, cmd, t.PID, t.UID, p, err)
	}
	return fmt.Errorf("jcmd: %s: check %s: %w", cmd, p, err)
}

// preparePlanned makes the planned writes of command name safe (see PrepareWrites).
func (c *Client) preparePlanned(ctx context.Context, name string, planned []write) (*Writes, error) {
	if len(planned) == 0 {
		return nil, nil
	}
	ws := &Writes{}
	for _, w := range planned {
		if w.path == "/tmp/perf-"+strconv.Itoa(c.Target().NSPID)+".map" {
			if err := foreignMap(c.Target(), name); err != nil {
				return nil, err
			}
		}
	}
	if name == "Compiler.perfmap" {
		var err error
		if ws.lock, err = LockMap(ctx, c.Target()); err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			// Without the lock a concurrent writer may make this run fail, never read a wrong map.
			ws.Notes = append(ws.Notes, fmt.Sprintf("running without the map lock: %v", err))
		}
	}
	pr := c.process(ctx)
	for _, w := range planned {
		mode := w.mode
		if w.dirOK && mode == rootfs.Follow {
			mode = rootfs.FollowOrDir
		}
		p, err := pr.Prepare(ctx, w.path, mode, jvmPerm(w.perm, c.Target().Status))
		if err != nil {
			ws.Close()
			return nil, c.prepareErr(name, w, err)
		}
		ws.items = append(ws.items, preparedWrite{w: w, p: p})
		if p.Note != "" {
			ws.Notes = append(ws.Notes, p.Note)
		}
	}
	return ws, nil
}

// prepareErr explains a path that cannot be prepared.
func (c *Client) prepareErr(cmd string, w write, err error) error {
	what := "the file"
	if w.option != "" {
		what = w.option
	}
	if errors.Is(err, rootfs.ErrUnsafe) {
		return fmt.Errorf("%w: %s: not asking JVM %d (uid %d) to write %s %s: %w", attach.ErrPermission, cmd, c.Target().PID, c.Target().UID, what, w.path, err)
	}
	if gerr := c.VM.Gone(); gerr != nil { // the JVM's root no longer opens once it has exited
		return fmt.Errorf("jcmd: %s: %w", cmd, gerr)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("jcmd: %s: %s %s: its directory does not exist in JVM %d's file system: %w", cmd, what, w.path, c.Target().PID, err)
	}
	return fmt.Errorf("jcmd: %s: prepare %s %s: %w", cmd, what, w.path, err)
}

// process is the JVM as rootfs sees it.
func (c *Client) process(ctx context.Context) *rootfs.Process {
	t := c.Target()
	cwd, _ := JVMCwd(ctx, t) // "" when the JVM's working directory has no path: shown by its /proc link then
	return rootfs.NewProcess(t.PID, t.UID, t.GID, t.Status.Groups, cwd)
}

// MapPID is the pid in the names of JVM t's perf map and map lock in its /tmp: its pid in its own
// namespace, except when its /tmp is the host's own while that pid is not its host pid (a pid namespace
// without a mount namespace of its own, unshare -Urp, or a container given the host's /tmp). There
// /tmp/perf-<nspid>.map is the map of host process <nspid>, another process, and any user can make such
// a namespace and choose its pid (ns_last_pid): the host pid is used, and foreign says so.
func MapPID(t *attach.Target) (pid int, foreign bool) {
	if t.NSPID == t.PID {
		return t.PID, false
	}
	dfd, err := openInRoot(t, "/tmp", unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return t.NSPID, false
	}
	defer unix.Close(dfd)
	var in, host unix.Stat_t
	if unix.Fstat(dfd, &in) != nil || unix.Stat("/tmp", &host) != nil || in.Dev != host.Dev || in.Ino != host.Ino {
		return t.NSPID, false
	}
	return t.PID, true
}

// foreignMap refuses to have JVM t write /tmp/perf-<nspid>.map when that name is another process's
// map (MapPID).
func foreignMap(t *attach.Target, what string) error {
	if _, foreign := MapPID(t); !foreign {
		return nil
	}
	return fmt.Errorf("%w: %s: JVM %d is pid %d in its own pid namespace but shares the host's /tmp, where /tmp/perf-%d.map is the map of host process %d; not asking the JVM to write it (gjmaps --strategy vmstructs writes /tmp/perf-%d.map)",
		attach.ErrPermission, what, t.PID, t.NSPID, t.NSPID, t.NSPID, t.PID)
}

// mapLockWait bounds the wait for another writer of the same JVM's map.
const mapLockWait = 60 * time.Second

// LockMap takes the lock that serialises the writers of JVM t's perf map: a flock on
// /tmp/.perf-<nspid>.map.lock in the JVM's /tmp (created safely, owned by the JVM's user, mode 0600;
// see rootfs.Lock), waiting up to a minute for another writer. Close releases it and removes the lock
// file (rootfs.Unlock); the death of the process releases it too. A read-only /tmp gives a nil lock
// and no error.
//
// gjmaps holds it while it builds and places a JVM's map, and gjcmd while the JVM runs
// Compiler.perfmap: the JVM writes its map in place (JDK 17 to 21 always at /tmp/perf-<nspid>.map), so
// two such writes at once would leave each reader half of the other's map.
func LockMap(ctx context.Context, t *attach.Target) (*MapLock, error) {
	dfd, err := openInRoot(t, "/tmp", unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	// The lock file is the JVM's user's: only where that user could have made it (rootfs.MayCreate).
	if err := rootfs.MayCreate(dfd, HostPath(t, "/tmp"), t.UID, t.GID, t.Status.Groups); err != nil {
		unix.Close(dfd)
		return nil, fmt.Errorf("jcmd: JVM %d: no map lock: %w", t.PID, err)
	}
	ctx, cancel := context.WithTimeout(ctx, mapLockWait)
	defer cancel()
	pid, _ := MapPID(t)
	name := ".perf-" + strconv.Itoa(pid) + ".map.lock"
	f, err := rootfs.Lock(ctx, dfd, HostPath(t, "/tmp"), name, t.UID, t.GID)
	if err != nil {
		unix.Close(dfd)
		if errors.Is(err, unix.EROFS) {
			return nil, nil
		}
		return nil, fmt.Errorf("jcmd: JVM %d: %w", t.PID, err)
	}
	return &MapLock{release: func() {
		rootfs.Unlock(dfd, name, f)
		unix.Close(dfd)
	}}, nil
}

// PerfMapData has the JVM write its perf map (Compiler.perfmap, JDK 17 and later) into a new file made
// for it and returns what the JVM wrote, read back from that very file, complete (every line ended)
// and unchanged while it was read: never a file someone else put at the name, never a map of an earlier
// run. From JDK 22 the file is /tmp/.jvmkit-perfmap-<random>.map in the JVM's /tmp, removed afterwards;
// before, the JVM writes only /tmp/perf-<nspid>.map, where a new file of the JVM's user replaces
// whatever was there (so that a JVM that does not run as root can write it, and a link planted there
// is never followed); it is removed afterwards when nothing was there before, and otherwise left
// holding the JVM's map.
//
// The caller holds LockMap. A JVM that cannot write the file says so only in its own log (JDK 17 to 21
// report success anyway); PerfMapData then fails with an error wrapping rootfs.ErrNotWritten's text.
func (c *Client) PerfMapData(ctx context.Context) ([]byte, *File, error) {
	t := c.Target()
	feature, err := c.Feature(ctx)
	if err != nil {
		return nil, nil, err
	}
	if feature < 17 {
		return nil, nil, noPerfMap(feature)
	}
	if feature < 22 {
		if err := foreignMap(t, "Compiler.perfmap"); err != nil {
			return nil, nil, err
		}
		// Before JDK 22 the map the JVM writes is the one perf reads, replaced by an empty file until the
		// JVM fills it: a JVM that cannot run now (a paused container) would leave it empty.
		if why := procfs.Default.Held(t.PID); why != "" {
			return nil, nil, fmt.Errorf("%w: JVM %d is %s; its map /tmp/perf-%d.map was left as it is", attach.ErrNoListener, t.PID, why, t.NSPID)
		}
	}
	path, line := "/tmp/perf-"+strconv.Itoa(t.NSPID)+".map", "Compiler.perfmap"
	if feature >= 22 {
		path = "/tmp/" + perfMapPrefix + rootfs.RandomHex(8) + ".map"
		line += " " + path
		// Maps of runs that were killed (SIGKILL) before they removed theirs.
		if dfd, err := openInRoot(t, "/tmp", unix.O_PATH|unix.O_DIRECTORY, 0); err == nil {
			if rootfs.MayCreate(dfd, HostPath(t, "/tmp"), t.UID, t.GID, t.Status.Groups) == nil {
				rootfs.RemoveStale(dfd, perfMapPrefix, ".map", t.UID)
			}
			unix.Close(dfd)
		}
	}
	w := write{path: path, mode: rootfs.Fresh, perm: 0o666}
	p, err := c.process(ctx).Prepare(ctx, path, rootfs.Fresh, jvmPerm(w.perm, t.Status))
	if err != nil {
		return nil, nil, c.prepareErr("Compiler.perfmap", w, err)
	}
	defer p.Close()
	f := &File{Path: p.Path, HostPath: p.HostPath()}
	if p.Note != "" {
		f.Notes = append(f.Notes, p.Note)
	}
	remove := func() {
		if !p.Replaced || feature >= 22 {
			p.Remove()
		}
	}
	f.Output, err = c.Run(ctx, line)
	if err == nil {
		err = p.Written()
		if errors.Is(err, rootfs.ErrNotWritten) {
			err = fmt.Errorf("jcmd: Compiler.perfmap: JVM %d (JDK %d) reported success but did not write its map: %w; its own log (stdout) says why", t.PID, feature, err)
		}
	}
	if err != nil {
		remove()
		return nil, f, err
	}
	data, err := rootfs.ReadStable(p.File())
	remove()
	if err != nil {
		return nil, f, fmt.Errorf("jcmd: Compiler.perfmap: read %s: %w", f.HostPath, err)
	}
	return data, f, nil
}

// perfMapPrefix names the files PerfMapData has a JDK 22+ JVM write its map into.
const perfMapPrefix = ".jvmkit-perfmap-"

// setsUpJFR tells the commands whose first use in a JVM sets JFR up, and with it the base of its disk
// repository: every JFR command but JFR.configure, which only prints or sets that base. (jdk.jfr's
// PlatformRecorder, made by the first of them, calls Repository.ensureRepository, disk recording or not.)
func setsUpJFR(name string) bool {
	return strings.HasPrefix(name, "JFR.") && name != "JFR.configure"
}

// guardJFRRepository keeps a JFR command (setsUpJFR) from having the JVM make its JFR repository where
// another user can put something in its way. JFR's first use in a JVM, any JFR command but
// JFR.configure (JFR.check and a JFR.start with disk=false too), sets the repository's base to
// java.io.tmpdir and probes it: it makes a directory named <yyyy_MM_dd_HH_mm_ss>_<pid> there (jdk.jfr's
// Repository.setBasePath), takes whatever is at that name if it is a directory, a symbolic link to one
// included (Files.isDirectory follows links), and deletes it again through its real path: another
// user's choice of an empty directory goes. The first disk recording makes it once more and writes its
// chunks there. A user who plants links at the names of the coming seconds gets the recording
// (environment, properties, arguments) or has the JVM delete or create files where the links point.
// Measured on JDK 17: a planted link made the JVM, run as root, delete the directory it pointed to.
//
// A repository that is gone is the same hazard: JFR makes <base>/<time>_<pid> again when its
// repository no longer exists (removed by a tmp cleaner while no recording ran, say), and the private
// base of an earlier guard may be gone, another user's link at its name.
//
// So when the JVM's repository is still to be made (JFR.configure says "Repository path: N/A" before
// JFR's first use, the base then being java.io.tmpdir; after it, the repository: it is still there or
// is to be made again in its base) in a directory other users can write in, the base is first set to a
// directory of the JVM's user that nobody else can write in, <tmpdir>/jvmkit-jfr-<uid> (JFR.configure
// repositorypath=), where JFR makes its repository. A repository that is there is left where it is:
// JFR's own readers (a RecordingStream on it, an emergency dump) expect it there. It returns a note
// saying so, or "" when nothing was needed. name is the command, for messages; props gives the JVM's
// system properties.
func (c *Client) guardJFRRepository(ctx context.Context, name string, props func() (map[string]string, error)) (string, error) {
	out, err := c.Run(ctx, "JFR.configure")
	if err != nil {
		return "", nil // the command itself reports what is wrong with JFR
	}
	repo, ok := jfrRepositoryPath(out)
	if !ok {
		return "", nil
	}
	base, what := "", "has no JFR repository yet and would make one in"
	if repo != "N/A" {
		// There means a directory of the JVM's user (or root's) at the name, not a link: JFR follows
		// one planted at a lost repository's name (Files.exists) and writes its chunks where it points.
		there := false
		if fd, err := openInRoot(c.Target(), repo, unix.O_PATH|unix.O_NOFOLLOW, unix.RESOLVE_IN_ROOT); err == nil {
			var st unix.Stat_t
			there = unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR && (st.Uid == 0 || int(st.Uid) == c.Target().UID)
			unix.Close(fd)
		}
		if there {
			return "", nil // JFR writes its chunks into it; moved, its readers would lose it
		}
		base, what = path.Dir(repo), "has lost its JFR repository "+repo+" and would make it again in"
	}
	tmp := "/tmp"
	if m, err := props(); err == nil && m["java.io.tmpdir"] != "" {
		tmp = m["java.io.tmpdir"]
	}
	if base == "" {
		base = tmp
	}
	pr := c.process(ctx)
	if p, err := pr.Prepare(ctx, base, rootfs.PrivateDir, 0); err == nil {
		p.Close()
		return "", nil // only the JVM's user and root can put anything there
	}
	t := c.Target()
	dir, err := pr.MakePrivateDir(strings.TrimSuffix(tmp, "/"), "jvmkit-jfr-"+strconv.Itoa(t.UID))
	if err != nil {
		return "", fmt.Errorf("%w: %s: JVM %d %s %s, where other users can put a link in its way, and no private directory could be made in %s for it: %w; set one first: JFR.configure repositorypath=<a directory only uid %d can write>",
			attach.ErrPermission, name, t.PID, what, base, tmp, err, t.UID)
	}
	var b lineBuilder
	b.cmd("JFR.configure")
	b.str("repositorypath", dir)
	line, err := b.line()
	if err != nil {
		return "", err
	}
	out, err = c.Run(ctx, line)
	if err != nil {
		return "", fmt.Errorf("jcmd: %s: set JFR's repository to %s first: %w", name, dir, err)
	}
	if repo, ok := jfrRepositoryPath(out); !ok || !strings.HasPrefix(repo, strings.TrimSuffix(dir, "/")+"/") {
		return "", fmt.Errorf("%w: %s: JVM %d did not take %s as its JFR repository (%s); not running a JFR command that would make one in %s",
			attach.ErrPermission, name, t.PID, dir, strings.TrimSpace(out), tmp)
	}
	return fmt.Sprintf("set JFR's repository to %s (JFR.configure repositorypath=) before %s: JFR would have made it in %s, where other users can plant a link at the name it makes", dir, name, base), nil
}

// jfrRepositoryPath returns the value of the "Repository path:" line of JFR.configure's output.
func jfrRepositoryPath(out string) (string, bool) {
	for line := range strings.Lines(out) {
		if v, ok := strings.CutPrefix(line, "Repository path:"); ok {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

// CheckCopyNames checks, before line is sent, that the files it will have the JVM write (see writtenNow)
// can be copied to dst with CopyOut: in a directory dst, that no file of the same name is in the way
// unless overwrite is set, or the file there is the very one the JVM writes (a copy into the JVM's own
// directory). CheckCopyDest checks dst itself.
func (c *Client) CheckCopyNames(ctx context.Context, line, dst string, overwrite bool) error {
	paths, err := c.writtenNow(ctx, line)
	if err != nil {
		return nil // the preparation of the writes says why, or the JVM does
	}
	t := c.Target()
	for _, p := range paths {
		// The JVM's file at that name now, if any: a copy onto it is no copy (CopyOut's errSameFile).
		var src *unix.Stat_t
		jvmPath := p
		if !path.IsAbs(jvmPath) {
			if cwd, err := JVMCwd(ctx, t); err == nil {
				jvmPath = path.Join(cwd, jvmPath)
			}
		}
		if st, err := statInRoot(t, jvmPath, 0); err == nil && path.IsAbs(jvmPath) {
			src = &st
		}
		dirFd, _, _, err := openCopyDest(dst, p, overwrite, src, true)
		switch {
		case err == nil:
			unix.Close(dirFd)
		case !errors.Is(err, errSameFile):
			return err
		}
	}
	return nil
}
