package jcmd_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/attach"
	"github.com/jvmkit/jvmkit/internal/procfs"
	"github.com/jvmkit/jvmkit/internal/testutil"
	"github.com/jvmkit/jvmkit/jcmd"
)

func TestHostPath(t *testing.T) {
	target := &attach.Target{PID: 7, Root: "/proc/7/root"}
	for path, want := range map[string]string{
		"/tmp/x.jfr":        "/proc/7/root/tmp/x.jfr",
		"/":                 "/proc/7/root/",
		"/../../etc/x":      "/proc/7/root/etc/x",
		"/app/./d/../x.jfr": "/proc/7/root/app/x.jfr",
	} {
		if got := jcmd.HostPath(target, path); got != want {
			t.Errorf("HostPath(%q) = %q, want %q", path, got, want)
		}
	}
}

// jvmDir makes a working directory for a JVM outside /tmp (which a namespaced JVM does not share), owned
// by uid so that the JVM can write its files there.
func jvmDir(t *testing.T, uid int) string {
	t.Helper()
	dir, err := os.MkdirTemp("/var/tmp", "jvmkit-files-*")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, uid, uid); err != nil {
		t.Fatal(err)
	}
	return dir
}

func dialVM(t *testing.T, ctx context.Context, pid int) *attach.VM {
	t.Helper()
	vm, err := attach.Dial(ctx, pid, nil)
	if err != nil {
		t.Fatalf("attach %d: %v", pid, err)
	}
	t.Cleanup(func() { _ = vm.Close() })
	return vm
}

func resolveTarget(t *testing.T, pid int) *attach.Target {
	t.Helper()
	target, err := attach.Resolve(pid)
	if err != nil {
		t.Fatal(err)
	}
	return target
}

// checkCopy checks a file CopyOut made: owned by the caller, the given mode and size.
func checkCopy(t *testing.T, path string, size int64, mode fs.FileMode) {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		t.Fatalf("copy: %v", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || int(st.Uid) != os.Geteuid() || int(st.Gid) != os.Getegid() ||
		fs.FileMode(st.Mode&0o7777) != mode || st.Size != size {
		t.Errorf("copy %s: mode %o uid %d gid %d size %d; want regular, mode %o, uid %d, gid %d, size %d",
			path, st.Mode, st.Uid, st.Gid, st.Size, mode, os.Geteuid(), os.Getegid(), size)
	}
}

// inJVM stats a file through OpenInJVM and reads its first bytes.
func inJVM(t *testing.T, target *attach.Target, path string) (st *unix.Stat_t, head []byte) {
	t.Helper()
	f, err := jcmd.OpenInJVM(target, path)
	if err != nil {
		t.Fatalf("OpenInJVM(%s): %v", path, err)
	}
	defer f.Close()
	st = new(unix.Stat_t)
	if err := unix.Fstat(int(f.Fd()), st); err != nil {
		t.Fatal(err)
	}
	head = make([]byte, 18)
	n, _ := io.ReadFull(f, head)
	return st, head[:n]
}

// TestJVMFiles makes JVMs write files with relative names, finds them as the JVM names them and copies
// them out: plain, in a pid+mount namespace with a private /tmp, and there as another user.
func TestJVMFiles(t *testing.T) {
	testutil.MustHaveRoot(t)
	// The JVM's zone, not ours, is in %t: make them differ.
	const zone = "Asia/Kolkata"
	loc, err := time.LoadLocation(zone)
	if err != nil {
		testutil.Skipf(t, "time zone data: %v", err)
	}
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		for _, v := range []struct {
			name string
			ns   bool
			uid  int
		}{{"plain", false, 0}, {"namespace", true, 0}, {"namespace-uid", true, 65534}} {
			t.Run(v.name, func(t *testing.T) {
				dir := jvmDir(t, v.uid)
				j := testutil.StartJVM(t, jdk, testutil.JVMOptions{
					Dir: dir, Namespace: v.ns, UID: v.uid, GID: v.uid, Env: []string{"TZ=" + zone},
					// JFR's repository lives in java.io.tmpdir: keep it out of the host's /tmp.
					JVMArgs: []string{"-Djava.io.tmpdir=" + dir},
				})
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				vm := dialVM(t, ctx, j.PID)
				target := resolveTarget(t, j.PID)
				if v.ns && target.NSPID != 1 {
					t.Fatalf("nspid %d, want 1", target.NSPID)
				}
				cwd, err := jcmd.JVMCwd(ctx, target)
				if err != nil || cwd != dir {
					t.Fatalf("JVMCwd = %q, %v; want %q", cwd, err, dir)
				}
				out := t.TempDir()

				// GC.heap_dump: %p since JDK 24.
				const hdName = "rel_%p.hprof"
				reply, err := vm.Jcmd(ctx, "GC.heap_dump "+hdName)
				if err != nil || !strings.Contains(reply, "Heap dump file created") {
					t.Fatalf("GC.heap_dump: %q, %v", reply, err)
				}
				p, tm := jcmd.FileNameExpansion(jdk.Feature, "GC.heap_dump")
				hd := jcmd.ExpandPath(hdName, target.NSPID, cwd, time.Now().In(loc), p, tm)
				wantHD := dir + "/rel_%p.hprof"
				if jdk.Feature >= 24 {
					wantHD = dir + "/rel_" + strconv.Itoa(j.NSPID) + ".hprof"
				}
				if hd != wantHD {
					t.Errorf("heap dump path %q, want %q", hd, wantHD)
				}
				st, head := inJVM(t, target, hd)
				size := st.Size
				if int(st.Uid) != v.uid || string(head) != "JAVA PROFILE 1.0.2" {
					t.Errorf("heap dump %s: owner %d, starts with %q", hd, st.Uid, head)
				}
				final, n, err := jcmd.CopyOut(ctx, target, hd, out, false)
				if err != nil || final != filepath.Join(out, filepath.Base(hd)) || n != size {
					t.Fatalf("CopyOut(heap dump) = %q, %d, %v; want %d bytes in %s", final, n, err, size, out)
				}
				checkCopy(t, final, size, 0o600)

				// JFR.dump: %p and %t since JDK 18; JDK 17 writes the name as it is.
				if _, err := vm.Jcmd(ctx, "JFR.start name=t"); err != nil {
					t.Fatalf("JFR.start: %v", err)
				}
				for _, name := range []string{"x_%p.jfr", "t_%t.jfr"} {
					before := time.Now().In(loc)
					reply, err := vm.Jcmd(ctx, "JFR.dump name=t filename="+name)
					after := time.Now().In(loc)
					p, tm := jcmd.FileNameExpansion(jdk.Feature, "JFR.dump")
					if err != nil {
						t.Fatalf("JFR.dump filename=%s: %q, %v", name, reply, err)
					}
					if !p && strings.Contains(reply, "Conversion = ") {
						// JDK 17.0.15 writes the file under the literal name, then uses that name as a
						// format string in its report: status 0, and the output is only the message of
						// an UnknownFormatConversionException.
						t.Logf("JDK %d: JFR.dump filename=%s replies %q", jdk.Feature, name, reply)
					}
					var path string
					for s := before.Truncate(time.Second).Add(-time.Second); !s.After(after.Add(time.Second)); s = s.Add(time.Second) {
						path = jcmd.ExpandPath(name, target.NSPID, cwd, s, p, tm)
						if _, err := os.Lstat(jcmd.HostPath(target, path)); err == nil {
							break
						}
					}
					if _, reported, ok := strings.Cut(reply, "written to:"); ok && strings.TrimSpace(reported) != path {
						t.Errorf("JFR.dump reports %q, ExpandPath gives %q", strings.TrimSpace(reported), path)
					}
					switch {
					case name == "x_%p.jfr" && p && path != dir+"/x_"+strconv.Itoa(j.NSPID)+".jfr":
						t.Errorf("JFR file %q: %%p is not the JVM's own pid %d", path, j.NSPID)
					case name == "x_%p.jfr" && !p && path != dir+"/x_%p.jfr":
						t.Errorf("JFR file %q: want the name verbatim", path)
					case name == "t_%t.jfr" && tm && strings.Contains(path, "%"):
						t.Errorf("JFR file %q: %%t not expanded", path)
					}
					final, n, err := jcmd.CopyOut(ctx, target, path, out, false)
					if err != nil {
						t.Fatalf("CopyOut(%s): %v (files: %v)", path, err, listDir(t, dir))
					}
					st, _ := inJVM(t, target, path)
					checkCopy(t, final, st.Size, fs.FileMode(st.Mode&0o666))
					if n != st.Size {
						t.Errorf("copied %d bytes of %d", n, st.Size)
					}
					summary, err := exec.Command(jdk.Bin("jfr"), "summary", final).CombinedOutput()
					if err != nil || !bytes.Contains(summary, []byte("jdk.ActiveRecording")) {
						t.Errorf("jfr summary %s: %v\n%s", final, err, summary)
					}
				}
				if v.ns {
					// The same relative name, resolved against the host's view instead: the JVM's /tmp is
					// private, so a file it writes there is only reachable through its root.
					if _, err := vm.Jcmd(ctx, "JFR.dump name=t filename=/tmp/private.jfr"); err != nil {
						t.Fatal(err)
					}
					if _, err := os.Stat("/tmp/private.jfr"); err == nil {
						t.Error("/tmp/private.jfr exists on the host")
					}
					if _, n, err := jcmd.CopyOut(ctx, target, "/tmp/private.jfr", out, false); err != nil || n == 0 {
						t.Errorf("CopyOut(/tmp/private.jfr): %d, %v", n, err)
					}
				}
			})
		}
	})
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// startHelper runs a process that a test inspects, with default signal dispositions like the harness's
// JVMs, and kills it in a cleanup. Unlike testutil.StartProcess it does not check that SIGQUIT reaches
// it: these processes are not victims, and chains such as unshare, sh, chroot block signals for a moment.
func startHelper(t *testing.T, name string, args ...string) *exec.Cmd {
	t.Helper()
	env := testutil.MustHaveTool(t, "env")
	cmd := exec.Command(env, append([]string{"--default-signal", testutil.MustHaveTool(t, name)}, args...)...)
	cmd.SysProcAttr = &unix.SysProcAttr{Pdeathsig: unix.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

// childProcess waits for the only child of pid, and for it to run name (its comm).
func childProcess(t *testing.T, pid int, name string) int {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		kids, err := procfs.Default.Children(pid)
		if err != nil || len(kids) != 1 {
			continue
		}
		if comm, err := os.ReadFile(procfs.Default.Path(kids[0], "comm")); err == nil && strings.TrimSpace(string(comm)) == name {
			return kids[0]
		}
	}
	t.Fatalf("process %d has no child %s", pid, name)
	return 0
}

// waitComm waits until process pid runs name (after its execs).
func waitComm(t *testing.T, pid int, name string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if comm, err := os.ReadFile(procfs.Default.Path(pid, "comm")); err == nil && strings.TrimSpace(string(comm)) == name {
			return
		}
	}
	t.Fatalf("process %d does not run %s", pid, name)
}

// TestJVMCwdPrivateTmp runs a JVM whose working directory exists only in its own mount namespace, on
// a private tmpfs, like a container's WORKDIR: readlink /proc/<pid>/cwd gives the JVM's view, which the
// host cannot open, and the JVM's files are only reachable through its root.
func TestJVMCwdPrivateTmp(t *testing.T) {
	testutil.MustHaveRoot(t)
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		classes := testutil.Compile(t, jdk, "Sleeper")
		java, err := filepath.EvalSymlinks(jdk.Bin("java"))
		if err != nil {
			t.Fatal(err)
		}
		cmd := startHelper(t, "unshare", "--pid", "--fork", "--kill-child", "--mount-proc", "--",
			"sh", "-c", `mount -t tmpfs -o mode=1777 jvmkit-tmp /tmp && mkdir /tmp/work && cd /tmp/work && exec "$@"`,
			"sh", java, "-cp", classes, "Sleeper")
		pid := childProcess(t, cmd.Process.Pid, "java")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var vm *attach.VM
		for {
			// The JVM may still be starting: Dial refuses it until it handles SIGQUIT.
			if vm, err = attach.Dial(ctx, pid, nil); err == nil {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("attach %d: %v", pid, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		defer vm.Close()
		target := resolveTarget(t, pid)
		if link, err := os.Readlink(target.Cwd); err != nil || link != "/tmp/work" {
			t.Errorf("readlink %s = %q, %v", target.Cwd, link, err)
		}
		cwd, err := jcmd.JVMCwd(ctx, target)
		if err != nil || cwd != "/tmp/work" {
			t.Fatalf("JVMCwd = %q, %v; want /tmp/work", cwd, err)
		}
		if _, err := vm.Jcmd(ctx, "GC.heap_dump rel.hprof"); err != nil {
			t.Fatal(err)
		}
		path := jcmd.ExpandPath("rel.hprof", target.NSPID, cwd, time.Now(), false, false)
		if _, err := os.Stat(path); err == nil {
			t.Fatalf("%s exists on the host", path)
		}
		final, n, err := jcmd.CopyOut(ctx, target, path, t.TempDir(), false)
		if err != nil || n < 1<<20 {
			t.Fatalf("CopyOut: %d, %v", n, err)
		}
		checkCopy(t, final, n, 0o600)
	})
}

// TestJVMCwdUnreachable covers working directories that a path cannot name, and a chroot, with plain
// processes: JVMCwd looks at /proc only.
func TestJVMCwdUnreachable(t *testing.T) {
	testutil.MustHaveRoot(t)
	ctx := context.Background()

	t.Run("chroot", func(t *testing.T) {
		// A chroot in a private mount namespace: /proc/<pid>/root reads as the chroot directory, cwd as
		// a path below it.
		chroot := testutil.MustHaveTool(t, "chroot")
		root, err := os.MkdirTemp("/var/tmp", "jvmkit-chroot-*")
		if err != nil {
			t.Fatal(err)
		}
		// Removed entry by entry, never recursively: usr is a bind mount of the host's /usr while
		// the process lives (in its own mount namespace only, but still).
		t.Cleanup(func() {
			for _, p := range []string{"app/dir", "app", "usr", "bin", "lib", "lib64", ""} {
				if err := os.Remove(filepath.Join(root, p)); err != nil && !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("clean up: %v", err)
				}
			}
		})
		for _, d := range []string{"usr", "app/dir"} {
			if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		for _, l := range []string{"bin", "lib", "lib64"} {
			if err := os.Symlink("usr/"+l, filepath.Join(root, l)); err != nil {
				t.Fatal(err)
			}
		}
		cmd := startHelper(t, "unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
			`mount --rbind /usr "$1/usr" && exec "$2" "$1" /bin/sh -c 'cd /app/dir && exec sleep 1000'`,
			"sh", root, chroot)
		waitComm(t, cmd.Process.Pid, "sleep")
		target := resolveTarget(t, cmd.Process.Pid)
		if link, err := os.Readlink(target.Cwd); err != nil || link != root+"/app/dir" {
			t.Errorf("readlink %s = %q, %v", target.Cwd, link, err)
		}
		if cwd, err := jcmd.JVMCwd(ctx, target); err != nil || cwd != "/app/dir" {
			t.Errorf("JVMCwd = %q, %v; want /app/dir", cwd, err)
		}
	})

	t.Run("deleted", func(t *testing.T) {
		dir, err := os.MkdirTemp("/var/tmp", "jvmkit-cwd-*")
		if err != nil {
			t.Fatal(err)
		}
		cmd := startHelper(t, "sh", "-c", `cd "$1" && exec sleep 1000`, "sh", dir)
		waitComm(t, cmd.Process.Pid, "sleep")
		if err := os.Remove(dir); err != nil {
			t.Fatal(err)
		}
		if cwd, err := jcmd.JVMCwd(ctx, resolveTarget(t, cmd.Process.Pid)); !errors.Is(err, jcmd.ErrUnreachable) {
			t.Errorf("JVMCwd = %q, %v; want ErrUnreachable", cwd, err)
		}
	})

	t.Run("overmounted", func(t *testing.T) {
		// The process entered dir, then a tmpfs was mounted on dir: the path now names the tmpfs.
		dir, err := os.MkdirTemp("/var/tmp", "jvmkit-cwd-*")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Remove(dir) })
		cmd := startHelper(t, "unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
			`cd "$1" && mount -t tmpfs jvmkit-over "$1" && exec sleep 1000`, "sh", dir)
		waitComm(t, cmd.Process.Pid, "sleep")
		target := resolveTarget(t, cmd.Process.Pid)
		if link, err := os.Readlink(target.Cwd); err != nil || link != dir {
			t.Errorf("readlink %s = %q, %v", target.Cwd, link, err)
		}
		if cwd, err := jcmd.JVMCwd(ctx, target); !errors.Is(err, jcmd.ErrUnreachable) {
			t.Errorf("JVMCwd = %q, %v; want ErrUnreachable", cwd, err)
		}
	})

	t.Run("gone", func(t *testing.T) {
		cmd := startHelper(t, "sleep", "1000")
		target := resolveTarget(t, cmd.Process.Pid)
		if err := cmd.Process.Signal(unix.SIGKILL); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			if st, err := procfs.Default.Status(target.PID); err != nil || st.Dead() {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("sleep did not die")
			}
		}
		if cwd, err := jcmd.JVMCwd(ctx, target); !errors.Is(err, attach.ErrProcessGone) {
			t.Errorf("JVMCwd = %q, %v; want ErrProcessGone", cwd, err)
		}
		if _, err := jcmd.OpenInJVM(target, "/etc/hostname"); !errors.Is(err, attach.ErrProcessGone) {
			t.Errorf("OpenInJVM: %v; want ErrProcessGone", err)
		}
	})
}

// TestOpenInJVMSymlinks plants symbolic links in a namespaced JVM's private /tmp that point at a file
// that exists only on the host. Opening them through /proc/<pid>/root escapes to the host; OpenInJVM
// resolves them inside the JVM's root, as the JVM would.
func TestOpenInJVMSymlinks(t *testing.T) {
	testutil.MustHaveRoot(t)
	j := testutil.StartJVM(t, testutil.JDK17(t), testutil.JVMOptions{Namespace: true})
	target := resolveTarget(t, j.PID)
	inside := func(p string) string { return jcmd.HostPath(target, p) }

	// t.TempDir is in the host's /tmp, which the JVM's private /tmp hides.
	hostDir := t.TempDir()
	secret := filepath.Join(hostDir, "secret")
	if err := os.WriteFile(secret, []byte("host only"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(inside(secret)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the JVM sees the host's %s: %v", secret, err)
	}
	links := map[string]string{
		"/tmp/evil":     secret,                                                  // absolute
		"/tmp/evil-rel": strings.Repeat("../", 8) + secret[1:],                   // up and out
		"/tmp/evil-dir": hostDir,                                                 // a directory on the way
		"/tmp/magic":    "/proc/" + strconv.Itoa(os.Getpid()) + "/root" + secret, // a /proc magic link
	}
	for name, to := range links {
		if err := os.Symlink(to, inside(name)); err != nil {
			t.Fatal(err)
		}
	}
	// What the bug looks like: plain open follows the absolute link to the host.
	// If it did not, this test would prove nothing.
	if b, err := os.ReadFile(inside("/tmp/evil")); err != nil || string(b) != "host only" {
		t.Fatalf("plain open of %s: %q, %v; want the host's %s", inside("/tmp/evil"), b, err, secret)
	}
	for _, p := range []string{"/tmp/evil", "/tmp/evil-rel", "/tmp/evil-dir/secret", "/tmp/magic"} {
		f, err := jcmd.OpenInJVM(target, p)
		if err == nil {
			b, _ := io.ReadAll(f)
			f.Close()
			t.Errorf("OpenInJVM(%s) opened a file: %q", p, b)
		} else if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, unix.ELOOP) && !errors.Is(err, unix.EXDEV) {
			t.Errorf("OpenInJVM(%s): %v", p, err)
		}
	}

	// The same links resolve inside the JVM: give the JVM a file at the host file's path.
	if err := os.MkdirAll(inside(hostDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(inside(secret), []byte("in the JVM"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/tmp/evil", "/tmp/evil-rel", "/tmp/evil-dir/secret"} {
		f, err := jcmd.OpenInJVM(target, p)
		if err != nil {
			t.Errorf("OpenInJVM(%s): %v", p, err)
			continue
		}
		b, _ := io.ReadAll(f)
		f.Close()
		if string(b) != "in the JVM" {
			t.Errorf("OpenInJVM(%s) read %q", p, b)
		}
	}

	// A file the JVM's user did not write (another user's), or one with a second name, is not read: the
	// JVM's user could have put a link there to a file that only root can read.
	if err := os.WriteFile(inside("/tmp/theirs"), []byte("theirs"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(inside("/tmp/theirs"), 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(inside("/tmp/linked"), []byte("linked"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(inside("/tmp/linked"), inside("/tmp/linked2")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/tmp/theirs", "/tmp/linked"} {
		if f, err := jcmd.OpenInJVM(target, p); !errors.Is(err, attach.ErrPermission) {
			if f != nil {
				f.Close()
			}
			t.Errorf("OpenInJVM(%s): %v; want attach.ErrPermission", p, err)
		}
	}

	// Not regular files: a FIFO must not block, a directory is no file either.
	if err := unix.Mkfifo(inside("/tmp/fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/tmp/fifo", "/tmp"} {
		if _, err := jcmd.OpenInJVM(target, p); !errors.Is(err, jcmd.ErrNotRegular) {
			t.Errorf("OpenInJVM(%s): %v; want ErrNotRegular", p, err)
		}
	}
	if _, err := jcmd.OpenInJVM(target, "tmp/evil"); err == nil {
		t.Error("OpenInJVM accepts a relative path")
	}
}

// TestCopyOut covers what CopyOut refuses and what it leaves behind.
func TestCopyOut(t *testing.T) {
	testutil.MustHaveRoot(t)
	j := testutil.StartJVM(t, testutil.JDK17(t), testutil.JVMOptions{Namespace: true, UID: 65534, GID: 65534})
	target := resolveTarget(t, j.PID)
	ctx := context.Background()

	data := make([]byte, 3<<20+17)
	_, _ = rand.Read(data)
	src := jcmd.HostPath(target, "/tmp/data.bin")
	if err := os.WriteFile(src, data, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(src, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	content := func(p string) string {
		t.Helper()
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(b, data) {
			return "data"
		}
		return string(b)
	}
	onlyFiles := func(dir string, want ...string) {
		t.Helper()
		if got := listDir(t, dir); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s holds %q, want %q", dir, got, want)
		}
	}

	dir := t.TempDir()
	final, n, err := jcmd.CopyOut(ctx, target, "/tmp/data.bin", dir, false)
	if err != nil || final != filepath.Join(dir, "data.bin") || n != int64(len(data)) {
		t.Fatalf("CopyOut = %q, %d, %v", final, n, err)
	}
	checkCopy(t, final, int64(len(data)), 0o640)
	if content(final) != "data" {
		t.Error("the copy differs")
	}

	// An existing destination: kept without overwrite, replaced with it.
	if err := os.WriteFile(final, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, dst := range []string{dir, final} {
		if _, _, err := jcmd.CopyOut(ctx, target, "/tmp/data.bin", dst, false); !errors.Is(err, fs.ErrExist) {
			t.Errorf("CopyOut to existing %s: %v; want fs.ErrExist", dst, err)
		}
	}
	if content(final) != "old" {
		t.Error("the existing file was changed")
	}
	if _, _, err := jcmd.CopyOut(ctx, target, "/tmp/data.bin", final, true); err != nil || content(final) != "data" {
		t.Errorf("CopyOut with overwrite: %v", err)
	}
	onlyFiles(dir, "data.bin")

	// The JVM's file itself as the destination (--copy-to the directory it wrote in): a file of the
	// caller's is there already; another user's is not the caller's copy (refused as any existing file).
	srcDir := filepath.Dir(src)
	for _, dst := range []string{srcDir, src} {
		if _, _, err := jcmd.CopyOut(ctx, target, "/tmp/data.bin", dst, false); !errors.Is(err, fs.ErrExist) {
			t.Errorf("CopyOut to another user's file itself (%s): %v; want fs.ErrExist", dst, err)
		}
	}
	// The caller's own JVM (root's, as the caller): its file is the caller's, and already where the copy
	// would go.
	own := testutil.StartJVM(t, testutil.JDK17(t), testutil.JVMOptions{})
	ownTarget := resolveTarget(t, own.PID)
	ownName := fmt.Sprintf("jvmkit-copyout-%d.bin", own.PID)
	ownSrc := jcmd.HostPath(ownTarget, "/tmp/"+ownName)
	if err := os.WriteFile(ownSrc, data, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(ownSrc) })
	for _, dst := range []string{filepath.Dir(ownSrc), ownSrc} {
		if f, n, err := jcmd.CopyOut(ctx, ownTarget, "/tmp/"+ownName, dst, false); err != nil || n != int64(len(data)) || f != ownSrc {
			t.Errorf("CopyOut to the caller's file itself (%s): %q, %d, %v", dst, f, n, err)
		}
	}
	if content(ownSrc) != "data" {
		t.Error("copying the file onto itself changed it")
	}

	// A new name in an existing directory.
	if final, _, err := jcmd.CopyOut(ctx, target, "/tmp/data.bin", filepath.Join(dir, "renamed"), false); err != nil || final != filepath.Join(dir, "renamed") {
		t.Errorf("CopyOut to a new name: %q, %v", final, err)
	}
	onlyFiles(dir, "data.bin", "renamed")

	// Symbolic links: as dst (to a directory, with or without a trailing slash), as the final name.
	victimDir := t.TempDir()
	links := t.TempDir()
	if err := os.Symlink(victimDir, filepath.Join(links, "todir")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(victimDir, "victim"), filepath.Join(links, "data.bin")); err != nil {
		t.Fatal(err)
	}
	for _, dst := range []string{filepath.Join(links, "todir"), filepath.Join(links, "todir") + "/", links, filepath.Join(links, "data.bin")} {
		for _, overwrite := range []bool{false, true} {
			if _, _, err := jcmd.CopyOut(ctx, target, "/tmp/data.bin", dst, overwrite); !errors.Is(err, jcmd.ErrSymlink) {
				t.Errorf("CopyOut to %s (overwrite %v): %v; want ErrSymlink", dst, overwrite, err)
			}
		}
	}
	onlyFiles(victimDir)
	onlyFiles(links, "data.bin", "todir")

	// Failures leave nothing behind: a cancelled context (checked between chunks, after the temporary
	// file exists), a missing source, a missing destination directory.
	empty := t.TempDir()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := jcmd.CopyOut(cancelled, target, "/tmp/data.bin", empty, false); !errors.Is(err, context.Canceled) {
		t.Errorf("CopyOut with a cancelled context: %v", err)
	}
	if _, _, err := jcmd.CopyOut(ctx, target, "/tmp/missing", empty, false); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("CopyOut of a missing file: %v", err)
	}
	if _, _, err := jcmd.CopyOut(ctx, target, "/tmp/data.bin", filepath.Join(empty, "no", "such"), false); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("CopyOut into a missing directory: %v", err)
	}
	if _, _, err := jcmd.CopyOut(ctx, target, "/tmp/data.bin", filepath.Join(empty, "nodir")+"/", false); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("CopyOut into a missing directory (trailing slash): %v", err)
	}
	onlyFiles(empty)

	// A destination directory the copy cannot be written to.
	ro := t.TempDir()
	if err := os.WriteFile(filepath.Join(ro, "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := jcmd.CopyOut(ctx, target, "/tmp/data.bin", filepath.Join(ro, "f")+"/", false); !errors.Is(err, unix.ENOTDIR) {
		t.Errorf("CopyOut into a file with a trailing slash: %v", err)
	}
	onlyFiles(ro, "f")
}
