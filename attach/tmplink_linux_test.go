package attach_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/attach"
	"github.com/jvmkit/jvmkit/internal/testutil"
	"github.com/jvmkit/jvmkit/jcmd"
)

// TestTmpLinkOutOfRoot: a JVM in a root of its own (a chroot, as a container runtime or its user may make
// one) whose /tmp is a symbolic link with an absolute target. The JVM resolves that target inside its
// root; /proc/<pid>/root/tmp resolves it against the caller's root, where the same absolute path may
// name a directory of the host's. jvmkit, as root, created its trigger file there, watched it, looked
// for hsperfdata there and connected to a socket planted there. Attaching must use the JVM's own /tmp,
// and nothing may happen in the host's directory of that name (here a directory of the test's own).
func TestTmpLinkOutOfRoot(t *testing.T) {
	// base/host is the directory that the JVM's /tmp link names from the host's root; inside the JVM's
	// root the same path is the JVM's own /tmp. Not under /tmp: inside the root, /tmp is the link itself.
	var host string
	jvm, root := startInRoot(t, func(root, base string) error {
		host = filepath.Join(base, "host")
		for _, d := range []string{host, filepath.Join(root, host)} { // both look like a /tmp
			if err := os.MkdirAll(d, 0o755); err != nil {
				return err
			}
			if err := unix.Chmod(d, 0o1777); err != nil {
				return err
			}
		}
		return os.Symlink(host, filepath.Join(root, "tmp"))
	})
	pid := jvm.Cmd.Process.Pid
	own := filepath.Join(root, host) // the JVM's /tmp, seen from the host
	sock := ".java_pid" + strconv.Itoa(pid)

	// Everything that happens in the host's directory, while the test runs.
	ifd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(ifd)
	if _, err := unix.InotifyAddWatch(ifd, host, unix.IN_ALL_EVENTS); err != nil {
		t.Fatal(err)
	}
	var buf [4096]byte
	untouched := func(t *testing.T, after string) {
		t.Helper()
		if n, _ := unix.Read(ifd, buf[:]); n > 0 {
			t.Errorf("%s: the host's %s was read or changed: %s", after, host, inotifyEvents(buf[:n]))
		}
		if w := watchersOf(t, host, ifd); len(w) > 0 {
			t.Errorf("%s: the host's %s is watched: %s", after, host, strings.Join(w, "; "))
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts := &attach.Options{AttachTimeout: 5 * time.Second}
	t.Run("attach", func(t *testing.T) {
		vm, err := attach.Dial(ctx, pid, opts)
		if err != nil {
			untouched(t, "Dial")
			t.Fatalf("Dial: %v", err)
		}
		defer vm.Close()
		if out, err := vm.Jcmd(ctx, "VM.version"); err != nil || !strings.Contains(out, "JDK 17") {
			t.Errorf("VM.version: %q, %v", out, err)
		}
		var st unix.Stat_t
		if err := unix.Lstat(filepath.Join(own, sock), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFSOCK || st.Uid != otherUID {
			t.Errorf("the JVM's socket in its own /tmp %s: %v, mode %#o, uid %d", own, err, st.Mode, st.Uid)
		}
		if _, err := os.Lstat(filepath.Join(own, ".attach_pid"+strconv.Itoa(pid))); err == nil {
			t.Errorf("trigger file left in %s", own)
		}
		if strings.Contains(jvm.Stdout.String(), "Full thread dump") {
			t.Errorf("the JVM printed a thread dump: it found no trigger file")
		}
		untouched(t, "Dial and VM.version")
	})

	t.Run("inspect", func(t *testing.T) {
		j, err := jcmd.Inspect(ctx, pid)
		if err != nil {
			t.Fatalf("Inspect: %v", err)
		}
		if !j.Container || j.PerfData != "/proc/"+strconv.Itoa(pid)+"/root/tmp/hsperfdata_nobody/"+strconv.Itoa(pid) || j.Command != "Sleeper" {
			t.Errorf("Inspect: container %t, hsperfdata %q, command %q; want a container JVM with its hsperfdata", j.Container, j.PerfData, j.Command)
		}
		untouched(t, "Inspect")
	})

	// A listening socket of the JVM's user at the JVM's socket name in the host's directory.
	t.Run("planted", func(t *testing.T) {
		path := filepath.Join(host, sock)
		l, err := net.Listen("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if err := os.Chmod(path, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Lchown(path, otherUID, otherUID); err != nil {
			t.Fatal(err)
		}
		_, _ = unix.Read(ifd, buf[:]) // planting it is not the tool's doing
		vm, err := attach.Dial(ctx, pid, opts)
		if err == nil {
			_, err = vm.Jcmd(ctx, "VM.uptime")
			vm.Close()
		}
		if err != nil {
			t.Errorf("with a socket planted at the host's %s: %v", path, err)
		}
		// A connection made is in the listener's queue, even one closed since: accept without waiting.
		rc, err := l.(*net.UnixListener).SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		connected := false
		_ = rc.Control(func(fd uintptr) {
			if c, _, err := unix.Accept4(int(fd), unix.SOCK_CLOEXEC); err == nil {
				unix.Close(c)
				connected = true
			}
		})
		if connected {
			t.Errorf("attaching connected to the socket planted at the host's %s", path)
		}
		untouched(t, "Dial with a planted socket")
	})
}

// TestTmpLinkInRoot: relative links that stay inside the JVM's root (or whose ".." stops at its root, as
// for the JVM) are the JVM's /tmp too: attaching works through them.
func TestTmpLinkInRoot(t *testing.T) {
	for _, link := range []string{"srv/tmp", "../../srv/tmp"} {
		t.Run(strings.ReplaceAll(link, "/", "-"), func(t *testing.T) {
			jvm, root := startInRoot(t, func(root, _ string) error {
				own := filepath.Join(root, "srv", "tmp")
				if err := os.MkdirAll(own, 0o755); err != nil {
					return err
				}
				if err := unix.Chmod(own, 0o1777); err != nil {
					return err
				}
				return os.Symlink(link, filepath.Join(root, "tmp"))
			})
			pid := jvm.Cmd.Process.Pid
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			vm, err := attach.Dial(ctx, pid, nil)
			if err != nil {
				t.Fatalf("Dial: %v", err)
			}
			defer vm.Close()
			if out, err := vm.Jcmd(ctx, "VM.version"); err != nil || !strings.Contains(out, "JDK 17") {
				t.Errorf("VM.version: %q, %v", out, err)
			}
			if _, err := os.Lstat(filepath.Join(root, "srv", "tmp", ".java_pid"+strconv.Itoa(pid))); err != nil {
				t.Errorf("the JVM's socket: %v", err)
			}
			if j, err := jcmd.Inspect(ctx, pid); err != nil || j.PerfData == "" {
				t.Errorf("Inspect: hsperfdata %q, %v", j.PerfData, err)
			}
		})
	}
}

// TestTmpUnusable: a JVM whose root has no usable /tmp (none, a file, a link to nowhere in the root):
// attaching fails at once, naming the process and the path.
func TestTmpUnusable(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(tmp string) error
		want error
	}{
		{"missing", func(string) error { return nil }, fs.ErrNotExist},
		{"file", func(tmp string) error { return os.WriteFile(tmp, nil, 0o644) }, unix.ENOTDIR},
		{"dangling-link", func(tmp string) error { return os.Symlink("/nowhere", tmp) }, fs.ErrNotExist},
	} {
		t.Run(tc.name, func(t *testing.T) {
			jvm, _ := startInRoot(t, func(root, _ string) error { return tc.make(filepath.Join(root, "tmp")) })
			pid := jvm.Cmd.Process.Pid
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			vm, err := attach.Dial(ctx, pid, nil)
			if err == nil {
				vm.Close()
			}
			t.Logf("Dial: %v", err)
			want := fmt.Sprintf("/proc/%d/root/tmp", pid)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "process "+strconv.Itoa(pid)) {
				t.Errorf("Dial: %v; want %v naming process %d and %s", err, tc.want, pid, want)
			}
		})
	}
}

// TestTmpUnusableNotJVM: a process that is not a JVM, in a root without /tmp (a scratch container's Go
// program): that it is no JVM is what Dial says.
func TestTmpUnusableNotJVM(t *testing.T) {
	testutil.MustHaveRoot(t)
	unshare, chroot, sh := testutil.MustHaveTool(t, "unshare"), testutil.MustHaveTool(t, "chroot"), testutil.MustHaveTool(t, "sh")
	base, err := os.MkdirTemp("/var/tmp", "jvmkit-tmproot-*")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeNoMounts(t, base) })
	root := filepath.Join(base, "root")
	for _, d := range []string{root, root + "/usr"} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range []string{"bin", "lib", "lib64"} {
		if err := os.Symlink("usr/"+l, filepath.Join(root, l)); err != nil {
			t.Fatal(err)
		}
	}
	p := testutil.StartBackground(t, unix.SIGKILL, unshare, "--mount", "--propagation", "private", "--",
		sh, "-c", `mount --rbind /usr "$1/usr" && exec "$2" "$1" /bin/sh -c 'echo ready && exec sleep 1000'`, "sh", root, chroot)
	p.WaitFor(t, "ready", 10*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if vm, err := attach.Dial(ctx, p.Cmd.Process.Pid, nil); !errors.Is(err, attach.ErrNotJVM) {
		if err == nil {
			vm.Close()
		}
		t.Errorf("Dial: %v; want ErrNotJVM", err)
	}
}

// otherUID runs the JVMs of startInRoot.
const otherUID = 65534

// startInRoot starts JDK 17's java, a Sleeper, as otherUID in a chroot of its own: a directory with the
// host's /usr and /etc and a /proc, its working directory that root (root's, mode 0755, so that attaching
// puts the trigger file in /tmp). tmp makes the root's /tmp, given the root and a directory of the test's
// outside it. It returns the JVM (its pid is the one started: unshare and sh exec) and the root.
func startInRoot(t *testing.T, tmp func(root, base string) error) (*testutil.Background, string) {
	t.Helper()
	testutil.MustHaveRoot(t)
	tools := map[string]string{}
	for _, name := range []string{"unshare", "chroot", "mount", "sh"} {
		tools[name] = testutil.MustHaveTool(t, name)
	}
	jdk := testutil.JDK17(t)
	if !strings.HasPrefix(jdk.Home, "/usr/") {
		testutil.Skipf(t, "the chroot has the host's /usr only; %s is elsewhere", jdk)
	}
	cp := testutil.Compile(t, jdk, "Sleeper")
	base, err := os.MkdirTemp("/var/tmp", "jvmkit-tmproot-*")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeNoMounts(t, base) }) // after the JVM is killed (cleanups run last first)
	root := filepath.Join(base, "root")
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"", "usr", "etc", "proc", "app"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range []string{"bin", "lib", "lib64"} {
		if err := os.Symlink("usr/"+l, filepath.Join(root, l)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.CopyFS(filepath.Join(root, "app"), os.DirFS(cp)); err != nil {
		t.Fatal(err)
	}
	if err := tmp(root, base); err != nil {
		t.Fatal(err)
	}
	// The mounts are in the JVM's own mount namespace, private: they end with it.
	script := `mount --rbind /usr "$1/usr" && mount --rbind /etc "$1/etc" && mount -t proc proc "$1/proc" && ` +
		`exec "$2" --userspec=` + strconv.Itoa(otherUID) + ":" + strconv.Itoa(otherUID) + ` "$1" "$3" -Xmx64m -cp /app Sleeper`
	jvm := testutil.StartBackground(t, unix.SIGKILL, tools["unshare"], "--mount", "--propagation", "private", "--",
		tools["sh"], "-c", script, "sh", root, tools["chroot"], jdk.Bin("java"))
	jvm.WaitFor(t, "ready", 30*time.Second)
	pid := jvm.Cmd.Process.Pid
	if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err != nil || !strings.HasSuffix(exe, "/bin/java") {
		t.Fatalf("process %d is %q, %v; want the JVM", pid, exe, err)
	}
	return jvm, root
}

// removeNoMounts removes dir and everything under it on dir's own file system, and fails the test at
// anything on another one (a mount point left mounted) instead of removing through it.
func removeNoMounts(t *testing.T, dir string) {
	t.Helper()
	var top unix.Stat_t
	if err := unix.Lstat(dir, &top); err != nil {
		t.Errorf("clean up: %v", err)
		return
	}
	var remove func(path string) error
	remove = func(path string) error {
		var st unix.Stat_t
		if err := unix.Lstat(path, &st); err != nil {
			return err
		}
		if st.Dev != top.Dev {
			return fmt.Errorf("%s is on another file system (still mounted?); not removed", path)
		}
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			entries, err := os.ReadDir(path)
			if err != nil {
				return err
			}
			for _, e := range entries {
				if err := remove(filepath.Join(path, e.Name())); err != nil {
					return err
				}
			}
		}
		return os.Remove(path)
	}
	if err := remove(dir); err != nil {
		t.Errorf("clean up: %v", err)
	}
}

// watchersOf lists this process's inotify watches on dir (from /proc/self/fdinfo) but those of inotify
// descriptor except.
func watchersOf(t *testing.T, dir string, except int) []string {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	// fdinfo shows the inode in hex and the device as the kernel's dev_t (major << 20 | minor).
	want := fmt.Sprintf("ino:%x sdev:%x ", st.Ino, unix.Major(st.Dev)<<20|unix.Minor(st.Dev))
	entries, err := os.ReadDir("/proc/self/fdinfo")
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, e := range entries {
		if e.Name() == strconv.Itoa(except) {
			continue
		}
		f, err := os.Open("/proc/self/fdinfo/" + e.Name())
		if err != nil {
			continue
		}
		s := bufio.NewScanner(f)
		for s.Scan() {
			if line := s.Text(); strings.HasPrefix(line, "inotify ") && strings.Contains(line, want) {
				found = append(found, "fd "+e.Name()+": "+line)
			}
		}
		f.Close()
	}
	return found
}

// inotifyEvents describes a buffer of inotify events.
func inotifyEvents(b []byte) string {
	var out []string
	for len(b) >= unix.SizeofInotifyEvent {
		mask := uint32(b[4]) | uint32(b[5])<<8 | uint32(b[6])<<16 | uint32(b[7])<<24
		n := int(uint32(b[12]) | uint32(b[13])<<8 | uint32(b[14])<<16 | uint32(b[15])<<24)
		end := min(unix.SizeofInotifyEvent+n, len(b))
		name := strings.TrimRight(string(b[unix.SizeofInotifyEvent:end]), "\x00")
		out = append(out, fmt.Sprintf("%s %#x", name, mask))
		b = b[end:]
	}
	return strings.Join(out, ", ")
}
