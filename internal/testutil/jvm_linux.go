package testutil

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/internal/procfs"
)

// StartJVM starts a workload on jdk, waits until it printed "ready" and returns it. The JVM starts with
// default dispositions for every signal, whatever the test binary inherited; StartJVM fails the test if
// SIGQUIT is nevertheless ignored. A cleanup stops the JVM (see Stop).
func StartJVM(t testing.TB, jdk JDK, opts JVMOptions) *JVM {
	t.Helper()
	j, java := launchJVM(t, jdk, opts)
	j.awaitStart(t, java)
	return j
}

// launchJVM starts the JVM's process and returns it with the launcher's path as the JVM will see it;
// awaitStart waits until it is ready. Several JVMs launched before the first wait start side by side.
func launchJVM(t testing.TB, jdk JDK, opts JVMOptions) (*JVM, string) {
	t.Helper()
	SkipInShort(t, "a JVM")
	if opts.Main == "" {
		opts.Main = "Sleeper"
	}
	privileged := opts.UID != 0 || opts.GID != 0 || opts.Namespace || opts.ReadOnlyCwd || jdk.Root != ""
	if privileged {
		MustHaveRoot(t)
	}
	tools := map[string]string{"env": MustHaveTool(t, "env")}
	if opts.Umask != "" {
		if opts.Container != "" {
			t.Fatalf("start JVM: Umask is not for a container")
		}
		tools["sh"] = MustHaveTool(t, "sh")
	}
	if opts.UID != 0 || opts.GID != 0 {
		tools["setpriv"] = MustHaveTool(t, "setpriv")
	}
	// What /proc/<pid>/exe of the JVM will say: the launcher's real path as the JVM's mount namespace sees it.
	java := filepath.Join(jdk.JavaHome(), "bin", "java")
	if opts.Container != "" {
		if opts.ReadOnlyCwd {
			t.Fatalf("start JVM: ReadOnlyCwd is not for a container")
		}
		prepareContainer(t, jdk, &opts, tools)
		java = containerExe(jdk, opts.Container)
	} else if mountNamespace(jdk, opts) {
		for _, name := range []string{"unshare", "sh", "mount"} {
			tools[name] = MustHaveTool(t, name)
		}
	}
	if jdk.Root == "" {
		var err error
		if java, err = filepath.EvalSymlinks(jdk.Bin("java")); err != nil {
			t.Fatalf("start JVM: %v", err)
		}
	}
	var err error
	if opts.ClassPath == "" {
		opts.ClassPath = Compile(t, jdk, opts.Main)
	}
	dir := opts.Dir
	if dir == "" {
		dir = newRunDir(t, "jvm-*")
		// Registered before the JVM's own cleanup, so it runs after it (cleanups run last in, first out).
		t.Cleanup(func() { _ = os.RemoveAll(dir) })
	} else if dir, err = filepath.Abs(dir); err != nil {
		t.Fatalf("start JVM: %v", err)
	}
	if opts.Namespace && (dir == "/tmp" || strings.HasPrefix(dir, "/tmp/")) {
		t.Fatalf("start JVM: Dir %s is under /tmp, which the namespace hides behind its own tmpfs", dir)
	}

	j := &JVM{
		Dir:    dir,
		JDK:    jdk,
		t:      t,
		opts:   opts,
		tools:  tools,
		stdout: new(output),
		stderr: new(output),
		ready:  make(chan struct{}),
		done:   make(chan struct{}),
		pidfd:  -1,
	}
	env := javaEnv(opts.Env)
	if opts.Container != "" {
		if opts.Dir == "" && (opts.UID != 0 || opts.GID != 0) {
			// The container's user owns its working directory, as an image's WORKDIR would be.
			if err := os.Chown(dir, opts.UID, opts.GID); err != nil {
				t.Fatalf("start JVM: %v", err)
			}
		}
		if opts.Container == Podman {
			j.container = containerName(t)
			env = javaEnv(nil) // podman's own; the JVM's is in --env
		}
		j.argv = containerCommand(t, tools, jdk, dir, opts, j.container)
	} else {
		j.argv = jvmCommand(tools, jdk, dir, opts)
	}
	j.stdout.ready = j.ready
	cmd := exec.Command(j.argv[0], j.argv[1:]...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdout = j.stdout
	cmd.Stderr = j.stderr
	// If the test binary dies, so does the JVM: the kernel kills our direct child (java, or unshare, which
	// passes it on to java with --kill-child). setpriv re-arms it for java after the uid change, which clears
	// the parent-death signal.
	cmd.SysProcAttr = &unix.SysProcAttr{Pdeathsig: unix.SIGKILL}
	cmd.WaitDelay = 5 * time.Second
	j.cmd = cmd

	j.startedAt = time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s", j.describe("start: %v", err))
	}
	track(j)
	t.Cleanup(j.Stop)
	go func() {
		j.waitErr = cmd.Wait()
		close(j.done)
	}()
	return j, java
}

// awaitStart waits until a JVM of launchJVM is ready, and identifies it.
func (j *JVM) awaitStart(t testing.TB, java string) {
	t.Helper()
	if err := j.waitReady(); err != nil {
		_ = j.identify(java) // best effort, so that Stop can stop it gracefully and clean up after it
		t.Fatalf("%s", j.describe("%v", err))
	}
	if err := j.identify(java); err != nil {
		t.Fatalf("%s", j.describe("%v", err))
	}
	if _, ignored, err := SigQuitState(j.PID); err != nil {
		t.Fatalf("%s", j.describe("%v", err))
	} else if ignored {
		t.Fatalf("%s", j.describe("SIGQUIT is ignored: the JVM inherited SIG_IGN despite env --default-signal"))
	}
}

// waitReady waits until the JVM printed "ready", or until opts.Ready says it is ready.
func (j *JVM) waitReady() error {
	timer := time.NewTimer(readyTimeout)
	defer timer.Stop()
	if j.opts.Ready == nil {
		select {
		case <-j.ready:
			return nil
		case <-j.done:
			return fmt.Errorf("exited before printing ready: %w", j.exitErr())
		case <-timer.C:
			return fmt.Errorf("did not print ready within %v", readyTimeout)
		}
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		if last = j.opts.Ready(j); last == nil {
			return nil
		}
		select {
		case <-j.done:
			return fmt.Errorf("exited before it was ready (%w): %w", last, j.exitErr())
		case <-timer.C:
			return fmt.Errorf("not ready within %v: %w", readyTimeout, last)
		case <-tick.C:
		}
	}
}

// exitErr is cmd.Wait's result after the JVM exited, never nil: an exit with status 0 is no less unexpected
// before the JVM was ready.
func (j *JVM) exitErr() error {
	if j.waitErr == nil {
		return errors.New("exit status 0")
	}
	return j.waitErr
}

// jvmCommand returns the command line that runs java with opts, wrapped as needed:
//
//	[unshare ... -- sh -c 'mounts && cd DIR && exec "$@"' sh DIR] [sh -c 'umask ...'] [setpriv ...] env --default-signal java ...
//
// env is the last wrapper so that nothing between it and java can change a disposition. The shell gets the
// directory and the command as positional parameters, so nothing needs quoting.
func jvmCommand(tools map[string]string, jdk JDK, dir string, opts JVMOptions) []string {
	var argv []string
	if mountNamespace(jdk, opts) {
		argv = append(argv, tools["unshare"])
		if opts.Namespace {
			// --mount-proc implies --mount; unshare makes the new mount tree private, so the tmpfs and the
			// bind mount stay invisible to the host. --kill-child: a killed unshare takes the namespace along.
			argv = append(argv, "--pid", "--fork", "--kill-child", "--mount-proc")
		} else {
			argv = append(argv, "--mount")
		}
		// "$1" is the working directory, "$2" the JDK's root filesystem (or nothing).
		var script strings.Builder
		if jdk.Root != "" {
			script.WriteString(userlandScript)
		}
		if opts.Namespace {
			script.WriteString(`mount -t tmpfs -o mode=1777 jvmkit-tmp /tmp && `)
		}
		if opts.ReadOnlyCwd {
			script.WriteString(`mount --bind -o ro "$1" "$1" && `)
		}
		script.WriteString(`cd "$1" && shift 2 && exec "$@"`)
		argv = append(argv, "--", tools["sh"], "-c", script.String(), "sh", dir, jdk.Root)
	}
	if opts.Umask != "" {
		argv = append(argv, tools["sh"], "-c", `umask "$0" && exec "$@"`, opts.Umask)
	}
	if opts.UID != 0 || opts.GID != 0 {
		argv = append(argv, tools["setpriv"])
		if opts.UID != 0 {
			argv = append(argv, fmt.Sprintf("--reuid=%d", opts.UID))
		}
		if opts.GID != 0 {
			argv = append(argv, fmt.Sprintf("--regid=%d", opts.GID))
		}
		argv = append(argv, "--clear-groups", "--pdeathsig=KILL")
	}
	// Without a signal list, env resets every signal to SIG_DFL. A child inherits SIG_IGN across exec (a
	// non-interactive shell ignores SIGINT and SIGQUIT in its background jobs), and HotSpot keeps ignoring an
	// inherited SIGINT, SIGTERM or SIGHUP: such a JVM would not even stop on SIGTERM.
	argv = append(argv, tools["env"], "--default-signal", filepath.Join(jdk.JavaHome(), "bin", "java"))
	if !opts.Namespace && opts.UID == 0 && !opts.ReadOnlyCwd && !hasTmpdir(opts.JVMArgs) {
		// JFR keeps its repository under java.io.tmpdir: in the JVM's own directory it goes away with
		// the test even when the JVM had to be killed before its shutdown hook ran. (A namespaced JVM's
		// /tmp is a private tmpfs; a JVM under another uid cannot write its root-owned directory.)
		argv = append(argv, "-Djava.io.tmpdir="+dir)
	}
	argv = append(argv, vmArgs(opts.JVMArgs)...)
	argv = append(argv, "-cp", opts.ClassPath, opts.Main)
	return append(argv, opts.Args...)
}

// mountNamespace reports whether the JVM starts in a mount namespace of its own.
func mountNamespace(jdk JDK, opts JVMOptions) bool {
	return opts.Namespace || opts.ReadOnlyCwd || jdk.Root != ""
}

// findJava waits for the java process among what StartJVM started: the started process itself once env and
// setpriv exec'd into java, or with Namespace the only child of unshare.
func (j *JVM) findJava(java string) (int, error) {
	wrapper := j.cmd.Process.Pid
	deadline := time.Now().Add(10 * time.Second)
	for {
		pid := wrapper
		if j.opts.Namespace {
			pid = 0
			// unshare is single-threaded, so the children of its main thread are all of its children.
			if kids, err := procfs.Default.Children(wrapper); err == nil && len(kids) == 1 {
				pid = kids[0]
			}
		}
		if pid != 0 {
			if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && exe == java {
				return pid, nil
			}
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("find the java process (%s) under pid %d: not found", java, wrapper)
		}
		select {
		case <-j.done: // the wrapper, and so java, has exited: nothing left to find
			return 0, fmt.Errorf("find the java process (%s) under pid %d: exited", java, wrapper)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// identify finds the java process (with Namespace: the child of unshare; else the started process itself,
// once env and setpriv have exec'd into java), opens a pidfd for it and reads what Stop needs.
func (j *JVM) identify(java string) error {
	find := j.findJava
	if j.opts.Container == Podman {
		find = j.identifyPodman
	}
	pid, err := find(java)
	if err != nil {
		return err
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return fmt.Errorf("pidfd_open %d: %w", pid, err)
	}
	// Still java after the pidfd was opened: the pidfd refers to it, not to a recycled pid.
	if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err != nil || exe != java {
		unix.Close(fd)
		return fmt.Errorf("java process %d exited during start-up", pid)
	}
	st, err := readStatus(pid)
	if err != nil {
		unix.Close(fd)
		return err
	}
	j.mu.Lock()
	j.pidfd = fd
	j.mu.Unlock()
	j.PID = pid
	j.NSPID = st.NSPID()
	j.euid = st.EUID()

	// The hsperfdata file is found through the JVM's own mapping of it, so that only this JVM's file is ever
	// removed. In a namespace it lives in the private tmpfs, which disappears with the JVM.
	if !j.opts.Namespace {
		if maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid)); err == nil {
			if path := parseHsperfdata(maps, j.NSPID); path != "" {
				seen, err1 := statID(fmt.Sprintf("/proc/%d/root%s", pid, path))
				host, err2 := statID(path)
				if err1 == nil && err2 == nil && seen.dev == host.dev && seen.ino == host.ino {
					j.hsperf = host
				}
			}
		}
	}
	return nil
}

// Alive reports whether the java process still runs (it exists and is not a zombie).
func (j *JVM) Alive() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.pidfd < 0 {
		return false
	}
	exited, err := pidfdWait(j.pidfd, 0)
	return err == nil && !exited
}

// Stop stops the JVM, as the cleanup registered by StartJVM does; it is idempotent. While the JVM runs it
// removes the attach trigger files (.attach_pid<nspid> in its cwd and /tmp) and the attach socket
// (/tmp/.java_pid<nspid>) that belong to it, reached through /proc/<pid>/cwd and /proc/<pid>/root. Then it
// sends SIGTERM, which makes HotSpot remove its socket and hsperfdata file itself, and SIGKILL after 2 s.
// After the JVM is gone, it removes its hsperfdata file if it is still there. If the JVM died before Stop,
// it also removes the trigger files and the socket for its pid that appeared after it started, unless
// another process has that pid by now.
func (j *JVM) Stop() {
	j.stopOnce.Do(func() { j.stop(j.t.Errorf) })
}

func (j *JVM) forceStop() string {
	var problems []string
	j.stopOnce.Do(func() {
		j.stop(func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) })
	})
	return fmt.Sprintf("%s %v", j, problems)
}

func (j *JVM) stop(errorf func(format string, args ...any)) {
	defer untrack(j)
	alive := j.Alive()
	if alive {
		for _, err := range j.removeAttachFiles() {
			errorf("stop %s: %v", j, err)
		}
		j.signal(unix.SIGTERM)
		if !j.waitExit(termGrace) {
			j.signal(unix.SIGKILL)
			if !j.waitExit(10 * time.Second) {
				errorf("stop %s: still running 10s after SIGKILL", j)
			}
		}
	} else {
		// Not identified yet (it did not start) or already dead: kill what is left of the wrapper.
		_ = j.cmd.Process.Kill()
	}
	// unshare exits as soon as its child has, podman run once it removed the container; a plain java is the
	// process waited for.
	select {
	case <-j.done:
	case <-time.After(10 * time.Second):
		_ = j.cmd.Process.Kill()
		select {
		case <-j.done:
		case <-time.After(10 * time.Second):
			errorf("stop %s: pid %d not reaped", j, j.cmd.Process.Pid)
		}
	}
	if j.container != "" {
		// podman run --rm removes the container when it sees it exit; not when podman run itself was killed.
		if err := j.removeContainer(); err != nil {
			errorf("stop %s: %v", j, err)
		}
	}
	j.mu.Lock()
	if j.pidfd >= 0 {
		unix.Close(j.pidfd)
		j.pidfd = -1
	}
	j.mu.Unlock()
	if j.PID != 0 {
		for _, err := range j.removeLeftovers(!alive) {
			errorf("stop %s: %v", j, err)
		}
	}
}

func (j *JVM) signal(sig unix.Signal) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.pidfd >= 0 {
		_ = unix.PidfdSendSignal(j.pidfd, sig, nil, 0)
	}
}

func (j *JVM) waitExit(d time.Duration) bool {
	j.mu.Lock()
	fd := j.pidfd
	j.mu.Unlock()
	if fd < 0 {
		return true
	}
	exited, err := pidfdWait(fd, d)
	return err != nil || exited
}

// removeAttachFiles removes, while the JVM runs, the attach files that provably belong to it.
func (j *JVM) removeAttachFiles() []error {
	var errs []error
	proc := fmt.Sprintf("/proc/%d", j.PID)
	trigger := fmt.Sprintf(".attach_pid%d", j.NSPID)

	// A trigger for this nspid, newer than the JVM, in the JVM's own cwd or /tmp, was made for this JVM.
	err := j.removeIfNewer(filepath.Join(proc, "cwd", trigger), unix.S_IFREG, -1)
	if errors.Is(err, unix.EROFS) {
		// ReadOnlyCwd: the JVM's view of its cwd is read-only; the host's view of the same directory is not.
		err = j.removeIfNewer(filepath.Join(j.Dir, trigger), unix.S_IFREG, -1)
	}
	errs = appendErr(errs, err)
	errs = appendErr(errs, j.removeIfNewer(filepath.Join(proc, "root", "tmp", trigger), unix.S_IFREG, -1))

	// The socket is the JVM's if the JVM holds it open.
	socket := fmt.Sprintf("/tmp/.java_pid%d", j.NSPID)
	if owned, err := holdsSocket(j.PID, socket); err != nil {
		errs = append(errs, err)
	} else if owned {
		if err := os.Remove(filepath.Join(proc, "root", socket)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errs
}

// removeLeftovers removes, after the JVM is gone, what it left behind: its hsperfdata file (SIGKILL, or -Xrs
// and SIGTERM, skip HotSpot's cleanup) and, when it died before Stop (so that removeAttachFiles could not
// check what it held), the attach files for its pid that appeared after it started.
func (j *JVM) removeLeftovers(diedOnItsOwn bool) []error {
	var errs []error
	if j.hsperf.path != "" {
		if id, err := statID(j.hsperf.path); err == nil && id == j.hsperf {
			errs = appendErr(errs, os.Remove(j.hsperf.path))
		}
	}
	if !j.opts.Namespace && j.opts.Container == "" {
		// The perf map's lock (jcmd.LockMap) outlives its holders by design; left for a pid that a later
		// JVM reuses, it reads as that JVM's leftover.
		errs = appendErr(errs, j.removeIfNewer(fmt.Sprintf("/tmp/.perf-%d.map.lock", j.PID), unix.S_IFREG, -1))
	}
	if !diedOnItsOwn {
		return errs
	}
	errs = appendErr(errs, j.removeIfNewer(filepath.Join(j.Dir, fmt.Sprintf(".attach_pid%d", j.NSPID)), unix.S_IFREG, -1))
	if j.opts.Namespace {
		return errs // its /tmp was a tmpfs that is gone
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", j.PID)); err == nil {
		return errs // the pid is in use again: whatever is there may be the new process's
	}
	errs = appendErr(errs, j.removeIfNewer(fmt.Sprintf("/tmp/.attach_pid%d", j.PID), unix.S_IFREG, -1))
	errs = appendErr(errs, j.removeIfNewer(fmt.Sprintf("/tmp/.java_pid%d", j.PID), unix.S_IFSOCK, j.euid))
	return errs
}

// removeIfNewer removes path if it is of the given kind (unix.S_IFREG, unix.S_IFSOCK), was modified after the
// JVM started and, when uid >= 0, is owned by uid. A missing file is no error.
func (j *JVM) removeIfNewer(path string, kind uint32, uid int) error {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ESRCH) {
			return nil
		}
		return &fs.PathError{Op: "lstat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != kind {
		return nil
	}
	// A second of slack: file times come from a coarse clock that lags time.Now.
	if time.Unix(st.Mtim.Unix()).Before(j.startedAt.Add(-time.Second)) {
		return nil
	}
	if uid >= 0 && int(st.Uid) != uid {
		return nil
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func appendErr(errs []error, err error) []error {
	if err != nil {
		return append(errs, err)
	}
	return errs
}

// StartProcess starts a non-Java victim, such as StartProcess(t, "sleep", "1000"), with every signal at its
// default disposition, and fails the test if SIGQUIT is ignored or blocked anyway. Tests use it to prove that
// attaching never signals a process that is not a JVM: with the default disposition SIGQUIT would kill it.
// A cleanup kills it.
func StartProcess(t testing.TB, name string, args ...string) *exec.Cmd {
	t.Helper()
	path := MustHaveTool(t, name)
	envPath := MustHaveTool(t, "env")
	env, err := filepath.EvalSymlinks(envPath)
	if err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	cmd := exec.Command(envPath, append([]string{"--default-signal", path}, args...)...)
	// Its own directory: a victim killed by SIGQUIT may dump core into its cwd.
	cmd.Dir = newRunDir(t, "proc-*")
	cmd.SysProcAttr = &unix.SysProcAttr{Pdeathsig: unix.SIGKILL}
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	v := &victim{cmd: cmd}
	track(v)
	t.Cleanup(func() {
		if problem := v.stop(); problem != "" {
			t.Errorf("%s", problem)
		}
	})

	pid := cmd.Process.Pid
	for deadline := time.Now().Add(10 * time.Second); ; {
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		if err != nil {
			t.Fatalf("start %s: %v", name, err)
		}
		if exe != env {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("start %s: env did not exec it within 10s", name)
		}
		time.Sleep(5 * time.Millisecond)
	}
	st, err := readStatus(pid)
	if err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	if quit := int(unix.SIGQUIT); st.Ignores(quit) || st.Blocks(quit) {
		t.Fatalf("start %s: SIGQUIT is ignored or blocked (SigIgn %016x, SigBlk %016x): a test with this victim "+
			"would prove nothing", name, st.SigIgn, st.SigBlk)
	}
	return cmd
}

type victim struct {
	cmd     *exec.Cmd
	once    sync.Once
	problem string
}

func (v *victim) stop() string {
	v.once.Do(func() {
		defer untrack(v)
		_ = v.cmd.Process.Kill() // by pidfd: never hits a recycled pid
		var exitErr *exec.ExitError
		if err := v.cmd.Wait(); err != nil && !errors.As(err, &exitErr) {
			v.problem = fmt.Sprintf("stop %s: %v", v.cmd, err)
		}
	})
	return v.problem
}

func (v *victim) forceStop() string {
	return fmt.Sprintf("process %d (%s) %s", v.cmd.Process.Pid, v.cmd, v.stop())
}

func hasTmpdir(args []string) bool {
	for _, a := range args {
		if strings.HasPrefix(a, "-Djava.io.tmpdir=") {
			return true
		}
	}
	return false
}
