package faults_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/internal/testutil"
)

// TestBoundTmp: any user can make a user and mount namespace of their own (unshare -Urm) and bind-mount
// there, at their JVM's /tmp or at any path an operator may name, a directory they can see but not
// write, such as a root-owned 0755 one (/etc). jvmkit, run as root, reaches that directory through
// /proc/<pid>/root: it made uid 65534's lock file in it (every gjmaps strategy), its map (the default
// strategy) and the files it prepares for the JVM to write (gjcmd JFR.dump filename= in a sticky
// directory only root's group may write). Nothing may be created there but what the JVM's own user could
// create; the commands must say why they refuse, and work again once the JVM's /tmp is its own.
func TestBoundTmp(t *testing.T) {
	testutil.MustHaveRoot(t)
	for _, name := range []string{"setpriv", "unshare", "nsenter", "mount"} {
		testutil.MustHaveTool(t, name)
	}
	jdk := testutil.JDK17(t)
	cp := testutil.Compile(t, jdk, "Sleeper")
	base := testutil.RunDir(t, "boundtmp-*")
	mkdir := func(name string, uid int, mode uint32) string {
		t.Helper()
		dir := filepath.Join(base, name)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(dir, uid, uid); err != nil {
			t.Fatal(err)
		}
		if err := unix.Chmod(dir, mode); err != nil { // raw bits: os.Chmod drops 0o1000
			t.Fatal(err)
		}
		return dir
	}
	own := mkdir("own", otherUID, 0o755) // the JVM's own /tmp
	for _, d := range []string{"v", "s"} {
		if err := os.Mkdir(filepath.Join(own, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	victim := mkdir("victim", 0, 0o755)  // root's, as /etc
	shared := mkdir("sticky", 0, 0o1770) // root's group's sticky directory
	for _, d := range []string{victim, shared} {
		if err := os.WriteFile(filepath.Join(d, "keep"), []byte("root's file\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	before := map[string]string{victim: snapshot(t, victim), shared: snapshot(t, shared)}
	unchanged := func(t *testing.T, after string) {
		t.Helper()
		for d, b := range before {
			if now := snapshot(t, d); now != b {
				t.Errorf("after %s, root's directory %s changed:\nbefore:\n%s\nafter:\n%s", after, d, b, now)
			}
		}
	}

	// uid 65534's JVM: /tmp its own, root's directories at /tmp/v and /tmp/s, working directory /.
	script := `mount --bind "$1" /tmp && mount --bind "$2" /tmp/v && mount --bind "$3" /tmp/s && cd / && exec "$4" -Xmx64m -cp "$5" Sleeper`
	pid := startOther(t, "unshare", "-Urm", "sh", "-c", script, "sh", own, victim, shared, jdk.Bin("java"), cp)
	p := strconv.Itoa(pid)
	hostMap := "/tmp/perf-" + p + ".map"
	t.Cleanup(func() { os.Remove(hostMap) })
	t.Cleanup(func() { os.Remove("/.attach_pid" + p) })

	refused := func(t *testing.T, r result, why string) {
		t.Helper()
		if r.code == 0 || !strings.Contains(r.stdout+r.stderr, why) {
			t.Errorf("want a non-zero exit saying %q; got %s", why, r)
		}
		unchanged(t, strings.Join(r.args, " "))
	}
	mayNot := "uid " + strconv.Itoa(otherUID) + " may not create files in"

	// Files gjcmd makes, or asks the JVM to make, in root's directories.
	if r := tool(t, "gjcmd", p, "JFR.start", "name=bound"); r.code != 0 {
		t.Fatalf("JFR.start: %s", r)
	}
	for _, dir := range []string{"/tmp/v", "/tmp/s"} {
		t.Run("gjcmd"+strings.ReplaceAll(dir, "/", "-"), func(t *testing.T) {
			refused(t, tool(t, "gjcmd", p, "JFR.dump", "name=bound", "filename="+dir+"/rec.jfr"), mayNot)
			refused(t, tool(t, "gjcmd", p, "GC.heap_dump", dir+"/heap.hprof"), mayNot)
		})
	}
	// Control: the same commands into the JVM's own /tmp.
	if r := tool(t, "gjcmd", p, "JFR.dump", "name=bound", "filename=/tmp/rec.jfr"); r.code != 0 || !exists(filepath.Join(own, "rec.jfr")) {
		t.Errorf("control: JFR.dump into the JVM's own /tmp: %s", r)
	}
	if r := tool(t, "gjmaps", "-p", p, "--strategy", "jcmd"); r.code != 0 || !exists(filepath.Join(own, "perf-"+p+".map")) {
		t.Errorf("control: gjmaps --strategy jcmd with the JVM's own /tmp: %s", r)
	}

	// Root's 0755 directory at the JVM's /tmp (mounted the way its user could mount it).
	if out, err := exec.Command("nsenter", "-t", p, "-m", "mount", "--bind", victim, "/tmp").CombinedOutput(); err != nil {
		t.Fatalf("mount %s at the JVM's /tmp: %v: %s", victim, err, out)
	}
	for _, strategy := range []string{"vmstructs", "jcmd", "agent"} {
		t.Run("gjmaps-"+strategy, func(t *testing.T) {
			os.Remove(hostMap)
			r := tool(t, "gjmaps", "-p", p, "--strategy", strategy)
			refused(t, r, mayNot)
			if strategy == "vmstructs" && !exists(hostMap) {
				t.Errorf("the host's own %s was not written: %s", hostMap, r)
			}
		})
	}
	if r := tool(t, "gjmaps", "-p", p, "--clean"); r.code != 0 && r.code != 1 {
		t.Errorf("gjmaps --clean: %s", r)
	}
	unchanged(t, "gjmaps --clean")
	if exists("/.attach_pid" + p) {
		t.Errorf("an attach trigger was left in the host's /")
	}

	// Control: the JVM's own /tmp again.
	if out, err := exec.Command("nsenter", "-t", p, "-m", "umount", "/tmp").CombinedOutput(); err != nil {
		t.Fatalf("unmount the JVM's /tmp: %v: %s", err, out)
	}
	if r := tool(t, "gjmaps", "-p", p); r.code != 0 || !exists(filepath.Join(own, "perf-"+p+".map")) {
		t.Errorf("control: gjmaps with the JVM's own /tmp: %s", r)
	}
	unchanged(t, "the controls")
	if err := unix.Kill(pid, 0); err != nil {
		t.Fatalf("the JVM died: %v", err)
	}
}

// startOther starts a command as otherUID, without supplementary groups, and waits until it prints
// "ready" (a Sleeper's first line); it returns the command's pid, which the test's cleanup kills.
func startOther(t *testing.T, args ...string) int {
	t.Helper()
	cmd := exec.Command("setpriv", append([]string{"--reuid=" + strconv.Itoa(otherUID), "--regid=" + strconv.Itoa(otherUID), "--clear-groups", "--"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		ok := false
		for sc.Scan() {
			if !ok && strings.TrimSpace(sc.Text()) == "ready" {
				ok = true
				ready <- true
			}
		}
		if !ok {
			ready <- false
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	select {
	case ok := <-ready:
		if !ok {
			testutil.Skipf(t, "uid %d could not start a JVM in namespaces of its own (%s; unprivileged user namespaces, ns_last_pid): %s", otherUID, strings.Join(args, " "), stderr.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("uid %d's JVM did not start: %s", otherUID, stderr.String())
	}
	return cmd.Process.Pid
}

// snapshot describes a directory and its entries (inode, owner, mode, times, size, content), for telling
// that nothing in it changed.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, ". ino %d uid %d mode %#o mtime %d.%d\n", st.Ino, st.Uid, st.Mode, st.Mtim.Sec, st.Mtim.Nsec)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if err := unix.Lstat(p, &st); err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(p)
		fmt.Fprintf(&b, "%s ino %d uid %d mode %#o size %d sha256 %x\n", e.Name(), st.Ino, st.Uid, st.Mode, st.Size, sha256.Sum256(data))
	}
	return b.String()
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
