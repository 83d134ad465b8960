package testutil

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// ForEachContainerJDK runs f as a subtest "<kind>/<jdk>" for every container kind and every JDK of a root
// filesystem (jdk21-trixie, jdk25-trixie): the real-container tier. $JVMKIT_TEST_JDKS narrows the JDKs when it
// names some; "all" and "host" leave them all (the tier exists for these JDKs). It needs root, and podman with
// runc for the podman kind; with CI set, a missing one (or a JDK that the set-up provides) fails the test.
// The kinds run side by side (each kind's subtest is parallel); an f that calls t.Parallel lets the JDKs of
// a kind do so too, up to go test's -parallel.
func ForEachContainerJDK(t *testing.T, f func(t *testing.T, kind ContainerKind, jdk JDK)) {
	t.Helper()
	MustHaveRoot(t)
	jdks := rootfsJDKs(t)
	for _, kind := range ContainerKinds {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			for _, jdk := range jdks {
				t.Run(jdk.Name(), func(t *testing.T) { f(t, kind, jdk) })
			}
		})
	}
}

// rootfsJDKs returns the JDKs of root filesystems, with their tool wrappers.
func rootfsJDKs(t testing.TB) []JDK {
	t.Helper()
	SkipInShort(t, "JDKs of a root filesystem")
	d := discover()
	sel := strings.TrimSpace(os.Getenv(TestJDKsEnv))
	if sel == "host" || sel == "" {
		sel = "all"
	}
	if os.Getenv("CI") != "" {
		if missing := missingSetupJDKs(d.jdks, sel, cacheDir()); len(missing) > 0 {
			t.Fatalf("CI is set, and scripts/setup should have provided %s: run scripts/setup", strings.Join(missing, ", "))
		}
	}
	selected, err := selectJDKs(d.jdks, sel)
	if err != nil {
		t.Fatalf("%v", err)
	}
	var jdks []JDK
	for _, jdk := range selected {
		if jdk.Root != "" {
			jdk.tools = rootTools(t, jdk)
			jdks = append(jdks, jdk)
		}
	}
	if len(jdks) == 0 {
		Skipf(t, "test needs a JDK of a root filesystem (scripts/setup builds %s/trixie-rootfs)", cacheDir())
	}
	return jdks
}

// prepareContainer checks what a container of opts.Container needs and returns the tools its command uses.
func prepareContainer(t testing.TB, jdk JDK, opts *JVMOptions, tools map[string]string) {
	t.Helper()
	MustHaveRoot(t)
	if jdk.Root == "" {
		t.Fatalf("start JVM: a %s container needs a JDK of a root filesystem, not %s", opts.Container, jdk)
	}
	switch opts.Container {
	case Podman:
		tools["podman"] = MustHaveTool(t, "podman")
		MustHaveTool(t, "runc")
		prunePodman(t, tools["podman"])
	case PivotRoot, Chroot:
		for _, name := range []string{"unshare", "sh", "mount", "pivot_root"} {
			tools[name] = MustHaveTool(t, name)
		}
	default:
		t.Fatalf("start JVM: unknown container kind %q", opts.Container)
	}
	// Everything that only a namespaced JVM does (its /tmp is private, it is pid 1) applies.
	opts.Namespace = true
}

// containerMounts builds the container's view inside a new mount namespace, from the positional parameters
// "$1" working directory, "$2" root filesystem, "$3" the per-binary work directory (under /var/tmp). The root
// is bind-mounted onto itself read-only (it is shared by every test); the container gets its own proc, a tmpfs
// /tmp and /var/tmp, the work directory read-only (compiled workloads) and its working directory read-write,
// both at their host paths. The root's /dev holds the device nodes that debootstrap made.
const containerMounts = `mount --bind "$2" "$2" && mount -o remount,bind,ro "$2" && ` +
	`mount -t proc proc "$2/proc" && ` +
	`mount -t tmpfs -o mode=1777 jvmkit-tmp "$2/tmp" && ` +
	`mount -t tmpfs -o mode=1777 jvmkit-vartmp "$2/var/tmp" && ` +
	`mkdir -p "$2$3" && mount --bind -o ro "$3" "$2$3" && mount --bind "$1" "$2$1" && `

// containerCommand returns the command line that starts java in a container of opts.Container:
//
//	podman --runtime runc run --rm --name N ... --rootfs ROOT:O env --default-signal java ...
//	unshare --pid --fork --kill-child --mount -- sh -c 'mounts; pivot_root; cd DIR; exec "$@"' ... java ...
//	unshare --pid --fork --kill-child --mount -- sh -c 'mounts; exec chroot ROOT "$@"' ... env -C DIR java ...
func containerCommand(t testing.TB, tools map[string]string, jdk JDK, dir string, opts JVMOptions, name string) []string {
	t.Helper()
	work := workDir(t)
	if !strings.HasPrefix(work, varTmp+"/") || !strings.HasPrefix(dir, work+"/") {
		t.Fatalf("start JVM: a container's working directory must be in the work directory %s, not %s", work, dir)
	}
	for _, entry := range filepath.SplitList(opts.ClassPath) {
		if entry != work && !strings.HasPrefix(entry, work+"/") {
			t.Fatalf("start JVM: class path entry %s is not in the work directory %s, which is all a container sees", entry, work)
		}
	}
	java := filepath.Join(jdk.JavaHome(), "bin", "java")
	jvm := append([]string{java}, vmArgs(opts.JVMArgs)...)
	jvm = append(jvm, "-cp", opts.ClassPath, opts.Main)
	jvm = append(jvm, opts.Args...)

	if opts.Container == Podman {
		var nofile, nproc unix.Rlimit
		_ = unix.Getrlimit(unix.RLIMIT_NOFILE, &nofile)
		_ = unix.Getrlimit(unix.RLIMIT_NPROC, &nproc)
		argv := []string{tools["podman"], "--runtime", "runc", "run", "--rm", "--name", name,
			"--label", ownerLabel + "=" + owner(t),
			// No network: the JVM needs loopback only, and podman's network set-up is the slowest part.
			"--network", "none",
			// podman's defaults (nofile and nproc 1048576) are above our hard limits, and runc may only lower
			// them without CAP_SYS_RESOURCE; conmon itself runs with nproc 32768.
			"--ulimit", fmt.Sprintf("nofile=%d:%d", nofile.Cur, nofile.Max),
			"--ulimit", fmt.Sprintf("nproc=%d:%d", min(nproc.Cur, 32768), min(nproc.Max, 32768)),
			"--tmpfs", "/tmp",
			"--volume", work + ":" + work + ":ro", "--volume", dir + ":" + dir, "--workdir", dir,
		}
		if opts.UID != 0 || opts.GID != 0 {
			argv = append(argv, "--user", fmt.Sprintf("%d:%d", opts.UID, opts.GID))
		}
		for _, kv := range opts.Env {
			argv = append(argv, "--env", kv)
		}
		argv = append(argv, "--rootfs", jdk.Root+":O", "env", "--default-signal")
		return append(argv, jvm...)
	}

	argv := []string{tools["unshare"], "--pid", "--fork", "--kill-child", "--mount", "--", tools["sh"], "-c"}
	var inner []string
	if opts.UID != 0 || opts.GID != 0 {
		inner = append(inner, "setpriv")
		if opts.UID != 0 {
			inner = append(inner, fmt.Sprintf("--reuid=%d", opts.UID))
		}
		if opts.GID != 0 {
			inner = append(inner, fmt.Sprintf("--regid=%d", opts.GID))
		}
		inner = append(inner, "--clear-groups", "--pdeathsig=KILL")
	}
	inner = append(inner, "env", "--default-signal")
	switch opts.Container {
	case PivotRoot:
		// pivot_root(".", ".") stacks the old root on the new one; the lazy unmount detaches it.
		argv = append(argv, containerMounts+`cd "$2" && pivot_root . . && umount -l . && cd "$1" && shift 3 && exec "$@"`)
	case Chroot:
		// chroot(1) changes to / in the new root; env --chdir goes to the working directory after that.
		argv = append(argv, containerMounts+`r=$2 && shift 3 && exec chroot "$r" "$@"`)
		inner = append(inner, "--chdir="+dir)
	}
	argv = append(argv, "sh", dir, jdk.Root, work)
	argv = append(argv, inner...)
	return append(argv, jvm...)
}

// containerExe is what /proc/<pid>/exe says for the java of a container: the path in the namespace's root,
// which for chroot is the host's root, so the full path.
func containerExe(jdk JDK, kind ContainerKind) string {
	if kind == Chroot {
		return filepath.Join(jdk.Home, "bin", "java")
	}
	return filepath.Join(jdk.JavaHome(), "bin", "java")
}

// identifyPodman finds the container's java: podman knows the host pid of the container's first process.
func (j *JVM) identifyPodman(java string) (int, error) {
	deadline := time.Now().Add(30 * time.Second)
	var last string
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		out, err := exec.CommandContext(ctx, j.tools["podman"], "inspect", "--format", "{{.State.Pid}}", j.container).CombinedOutput()
		cancel()
		last = strings.TrimSpace(string(out))
		if pid, perr := strconv.Atoi(last); err == nil && perr == nil && pid > 0 {
			if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && exe == java {
				return pid, nil
			}
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("find the java process of container %s (podman inspect: %s)", j.container, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ContainerID returns the id podman gives the JVM's container (64 hex digits), "" for a JVM that is not in a
// podman container: the oracle for what jvmkit reads from the JVM's cgroup.
func (j *JVM) ContainerID(t testing.TB) string {
	t.Helper()
	if j.opts.Container != Podman {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, j.tools["podman"], "inspect", "--format", "{{.Id}}", j.container).CombinedOutput()
	id := strings.TrimSpace(string(out))
	if err != nil || len(id) != 64 {
		t.Fatalf("podman inspect %s: %v: %s", j.container, err, out)
	}
	return id
}

// Pause pauses the JVM's podman container (podman pause: its cgroup's freezer) and returns what unpauses
// it, which the test's cleanup also does.
func (j *JVM) Pause(t testing.TB) (unpause func()) {
	t.Helper()
	if j.opts.Container != Podman {
		t.Fatalf("Pause: %s is not in a podman container", j)
	}
	run := func(verb string) error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, j.tools["podman"], verb, j.container).CombinedOutput()
		if err != nil {
			return fmt.Errorf("podman %s %s: %w: %s", verb, j.container, err, out)
		}
		return nil
	}
	// runc's cgroup v1 freezer gives up ("unable to freeze") when a task does not freeze within its
	// retries, which a busy machine can make happen; runc thaws the cgroup again then, so the pause is
	// tried anew, a few times.
	err := run("pause")
	for try := 1; err != nil && strings.Contains(err.Error(), "unable to freeze") && try < 4; try++ {
		t.Logf("%v; trying again (%d)", err, try)
		err = run("pause")
	}
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	unpause = func() {
		once.Do(func() {
			if err := run("unpause"); err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(unpause)
	return unpause
}

// removeContainer removes the podman container after the JVM is gone (podman run --rm usually has).
func (j *JVM) removeContainer() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, j.tools["podman"], "rm", "--force", "--ignore", "--time", "0", j.container).CombinedOutput()
	if err != nil {
		return fmt.Errorf("podman rm %s: %w: %s", j.container, err, out)
	}
	return nil
}

// Command returns a command that runs a program inside the JVM's namespaces and root, as the JVM's user: the
// container's own view, such as its own jcmd as an oracle,
//
//	j.Command(ctx, filepath.Join(j.JDK.JavaHome(), "bin", "jcmd"), "1", "VM.version")
//
// With podman it is `podman exec --user UID:GID NAME ...`, else `nsenter --target PID --mount --pid --root
// --wd --setuid UID --setgid GID -- ...`. name is a path in the JVM's root.
func (j *JVM) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	st, err := readStatus(j.PID)
	uid, gid := j.euid, 0
	if err == nil {
		gid = st.EGID()
	}
	var argv []string
	if j.opts.Container == Podman {
		argv = []string{j.tools["podman"], "exec", "--user", fmt.Sprintf("%d:%d", uid, gid), j.container, name}
	} else {
		argv = []string{"nsenter", "--target", strconv.Itoa(j.PID), "--mount", "--pid", "--root", "--wd",
			"--setuid", strconv.Itoa(uid), "--setgid", strconv.Itoa(gid), "--", name}
	}
	cmd := exec.CommandContext(ctx, argv[0], append(argv[1:], args...)...)
	cmd.Env = javaEnv(nil)
	return cmd
}

// HostPath returns the host's path of a file that the JVM sees at path: through /proc/<pid>/root.
func (j *JVM) HostPath(path string) string {
	return filepath.Join(fmt.Sprintf("/proc/%d/root", j.PID), path)
}

// ownerLabel marks the podman containers of a test binary with its owner record ("pid starttime"), so that a
// later binary removes those of one that died, and never anyone else's.
const ownerLabel = "jvmkit.test.owner"

var (
	ownerOnce   sync.Once
	ownerText   string
	containerNo atomic.Int64
	pruneOnce   sync.Once
)

func owner(t testing.TB) string {
	ownerOnce.Do(func() {
		rec, err := ownerRecord(os.Getpid())
		if err != nil {
			t.Fatalf("testutil: %v", err)
		}
		ownerText = strings.ReplaceAll(strings.TrimSpace(rec), " ", "-")
	})
	return ownerText
}

// containerName is a name no other test binary uses: this binary's owner record and a counter.
func containerName(t testing.TB) string {
	return fmt.Sprintf("jvmkit-test-%s-%d", owner(t), containerNo.Add(1))
}

// prunePodman removes, once per test binary, the containers of test binaries that died without removing
// theirs (the kernel kills a JVM started by unshare with its test binary; conmon keeps a podman container).
func prunePodman(t testing.TB, podman string) {
	pruneOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, err := range pruneStaleContainers(ctx, podman) {
			fmt.Fprintf(os.Stderr, "testutil: %v\n", err)
		}
	})
}

// pruneStaleContainers removes the containers labelled with the owner record of a process that is gone (or
// whose pid is another process's now) and returns what it could not remove. Listing errors are left to the
// podman run that follows.
func pruneStaleContainers(ctx context.Context, podman string) []error {
	out, err := exec.CommandContext(ctx, podman, "ps", "--all", "--filter", "label="+ownerLabel,
		"--format", `{{.Names}} {{index .Labels "`+ownerLabel+`"}}`).Output()
	if err != nil {
		return nil
	}
	var errs []error
	for line := range strings.Lines(string(out)) {
		name, label, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok || !strings.HasPrefix(name, "jvmkit-test-") {
			continue
		}
		pidText, _, _ := strings.Cut(label, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil {
			continue
		}
		if rec, err := ownerRecord(pid); err == nil && strings.ReplaceAll(strings.TrimSpace(rec), " ", "-") == label {
			continue // its test binary still runs
		} else if err != nil && !processGone(err) {
			continue
		}
		if out, err := exec.CommandContext(ctx, podman, "rm", "--force", "--ignore", "--time", "0", name).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("remove the stale container %s: %w: %s", name, err, bytes.TrimSpace(out)))
		}
	}
	return errs
}
