package testutil

import (
	"bytes"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	// readyTimeout bounds the wait for a workload's "ready" line: JVM start-up on a loaded 2-core machine,
	// with a JDK's first CDS mapping, takes a few seconds at worst.
	readyTimeout = 60 * time.Second
	// termGrace is how long Stop waits for a SIGTERMed JVM, which removes its attach socket and hsperfdata
	// file on the way out, before it sends SIGKILL.
	termGrace = 2 * time.Second
)

// JVMOptions describe how StartJVM runs a workload.
type JVMOptions struct {
	JVMArgs   []string // options before the main class, e.g. "-Xrs", "-XX:+DisableAttachMechanism"
	Main      string   // main class, a compiled workload name; default "Sleeper"
	Args      []string // program arguments
	ClassPath string   // default: the class directory of Compile(t, jdk, Main)
	Dir       string   // working directory; default: a fresh 0755 directory in the work directory

	// UID and GID, when non-zero, run the JVM under these ids (setpriv --reuid/--regid --clear-groups).
	// Set both: with only UID the JVM keeps gid 0.
	UID, GID int

	// Namespace runs the JVM as pid 1 of new pid and mount namespaces with a private tmpfs on /tmp, the way
	// a container does. Dir must not be under /tmp (the tmpfs would hide it).
	Namespace bool

	// ReadOnlyCwd makes the working directory a read-only bind mount in a private mount namespace, so that
	// nobody, root included, can create a file there through the JVM's view of it (/proc/<pid>/cwd).
	ReadOnlyCwd bool

	// Container runs the JVM in a real container of that kind made from its JDK's root filesystem (the JDK must
	// have a Root): pid 1, a private /tmp, the root's files; with UID and GID (usually 1000, the root's user
	// "app") as that user, whose the working directory then is. It implies Namespace and excludes
	// ReadOnlyCwd. The container sees the working directory and the compiled workloads at their host paths
	// (bind mounts); ClassPath must be in the work directory. [JVM.Command] runs programs inside it.
	Container ContainerKind

	Env []string // extra environment, "KEY=value"; wins over inherited values

	// Umask, when set, is the JVM's file mode creation mask in octal ("077"), set by a shell that then
	// execs the rest of the command; not for a Container.
	Umask string

	// Ready, when set, replaces the wait for a "ready" line on stdout, for programs that print none (servers
	// from a distribution): StartJVM calls it every 100 ms until it returns nil, the JVM exits or the start
	// deadline passes. The JVM's PID is not known yet when it is called; Stdout and Stderr are.
	Ready func(j *JVM) error
}

// JVM is a running workload started by StartJVM.
type JVM struct {
	PID   int    // host pid of the java process
	NSPID int    // pid in its own pid namespace (== PID without Namespace)
	Dir   string // working directory, as the host sees it
	JDK   JDK

	t         testing.TB
	opts      JVMOptions
	argv      []string
	tools     map[string]string // the programs argv runs, by name
	container string            // the podman container's name
	cmd       *exec.Cmd         // java itself, or the unshare or podman run that runs it
	stdout    *output
	stderr    *output
	ready     chan struct{} // closed when stdout has a "ready" line
	done      chan struct{} // closed when cmd has been waited for
	waitErr   error         // cmd.Wait's result, valid after done
	startedAt time.Time     // just before cmd.Start: anything the JVM created is newer
	euid      int           // the JVM's effective uid
	hsperf    fileID        // the hsperfdata file the JVM maps, when it is in the host's /tmp

	mu       sync.Mutex
	pidfd    int // -1 until the java process is identified, and after Stop
	stopOnce sync.Once
}

// fileID identifies a file by device and inode, so that a path is removed only while it still names the same
// file.
type fileID struct {
	path     string
	dev, ino uint64
}

// Stdout returns everything the JVM printed on stdout so far.
func (j *JVM) Stdout() string { return j.stdout.String() }

// Stderr returns everything the JVM printed on stderr so far.
func (j *JVM) Stderr() string { return j.stderr.String() }

// Wait waits up to timeout for the JVM to exit on its own, such as after a signal the test sent, and returns
// its exit error: nil for status 0, an *exec.ExitError otherwise. It does not stop the JVM.
//
// With Namespace, the status is unshare's: it re-raises the signal that killed java, except SIGKILL, which it
// cannot reset to its default (util-linux 2.38): then it is "exit status 1", and Stderr ends with
// "unshare: sigprocmask unblock failed: Invalid argument". Note that signals from the host reach a
// namespaced JVM, which is pid 1 of its namespace, only if it has a handler for them: with -Xrs, only SIGKILL.
func (j *JVM) Wait(timeout time.Duration) error {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-j.done:
		return j.waitErr
	case <-timer.C:
		return fmt.Errorf("wait for JVM %d: still running after %v", j.PID, timeout)
	}
}

// PrintCompilation is the JVM option [JVM.WaitCompiled] reads: the JVM logs each method the JIT compiled.
// StartJVM sends that log to stderr (-XX:+DisplayVMOutputToStderr): on stdout the VM writes its lines in
// pieces, and the workload's "ready" landed inside one, where StartJVM did not see it.
const PrintCompilation = "-XX:+PrintCompilation"

// vmArgs are the JVM options of a workload as the command line gives them: args, and the VM's own output
// to stderr when it logs compilations.
func vmArgs(args []string) []string {
	if slices.Contains(args, PrintCompilation) {
		return append(slices.Clone(args), "-XX:+DisplayVMOutputToStderr")
	}
	return args
}

// compiledLine matches a line of -XX:+PrintCompilation: timestamp, compile id, attributes (%: on-stack
// replacement, s: synchronized, !: has handlers, b: blocking, n: native), tier level, Class::method.
var compiledLine = regexp.MustCompile(`^\s*\d+\s+\d+\s+([%sb!n ]*)\s(\d)\s+(\S+::\S+)`)

// compiledAt returns the tier level at which a line of -XX:+PrintCompilation says method was compiled; false
// for any other line, an on-stack replacement, and a method made not entrant.
func compiledAt(line, method string) (int, bool) {
	m := compiledLine.FindStringSubmatch(line)
	if m == nil || strings.Contains(m[1], "%") || m[3] != method || strings.Contains(line, "made not entrant") {
		return 0, false
	}
	return int(m[2][0] - '0'), true
}

// WaitCompiled waits until the JVM's JIT compiled method ("Class::name", as -XX:+PrintCompilation names it)
// at tier level (4: C2; 1-3: C1) or above, as the JVM itself logs it, instead of sleeping for a while: the
// JVM must run with [PrintCompilation]. On-stack-replacement compilations do not count (their code runs
// only for the loop it replaced). The test fails if the JVM exits or the time runs out first.
func (j *JVM) WaitCompiled(t testing.TB, method string, level int, timeout time.Duration) {
	t.Helper()
	if !slices.Contains(j.opts.JVMArgs, PrintCompilation) {
		t.Fatalf("WaitCompiled(%s): %s runs without %s", method, j, PrintCompilation)
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	seen := 0 // bytes of stderr already scanned, up to the last complete line
	for {
		out := j.Stderr()
		for _, line := range strings.SplitAfter(out[seen:], "\n") {
			if !strings.HasSuffix(line, "\n") {
				break
			}
			seen += len(line)
			if l, ok := compiledAt(line, method); ok && l >= level {
				return
			}
		}
		select {
		case <-j.done:
			t.Fatalf("%s exited before compiling %s at level %d", j, method, level)
		case <-deadline.C:
			t.Fatalf("%s did not compile %s at level %d within %v", j, method, level, timeout)
		case <-tick.C:
		}
	}
}

// String describes the JVM for failure messages.
func (j *JVM) String() string {
	return fmt.Sprintf("JVM %d (nspid %d, %s, %s)", j.PID, j.NSPID, j.opts.Main, j.JDK.Name())
}

// describe formats a failure with the command line and the captured output.
func (j *JVM) describe(format string, args ...any) string {
	return fmt.Sprintf("%s: %s\ncommand: %q\nstdout:\n%s\nstderr:\n%s",
		j.JDK.Name(), fmt.Sprintf(format, args...), j.argv, indent(j.Stdout()), indent(j.Stderr()))
}

func indent(s string) string {
	if s == "" {
		return "\t(empty)"
	}
	return "\t" + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n\t")
}

// output captures a stream of the JVM; it is safe for concurrent use. When ready is set, it is closed at the
// first line that reads "ready".
type output struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	scanned int
	ready   chan struct{}
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf.Write(p)
	for o.ready != nil {
		rest := o.buf.Bytes()[o.scanned:]
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			break
		}
		o.scanned += i + 1
		if string(bytes.TrimSpace(rest[:i])) == "ready" {
			close(o.ready)
			o.ready = nil
		}
	}
	return len(p), nil
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}
