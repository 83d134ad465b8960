package faults_test

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/internal/testutil"
)

// TestAgentSharedTmp: the JVMTI agent is loaded by a path in the JVM's /tmp, and the JVM runs whatever
// that path names when it opens it. Where another user can change that path (a /tmp every user may write
// without the sticky bit, as a Kubernetes emptyDir mounted at /tmp is, or a /tmp another user owns), that
// user can rename gjmaps' library directory away between the copy and the JVM's dlopen and put their own
// under its name: a root JVM so ran uid 65534's library (review of issue 16, by hand: an inotify-driven
// swap won the race on the first try). gjmaps must refuse to load the agent from such a /tmp, and load
// it once the /tmp is sticky again.
func TestAgentSharedTmp(t *testing.T) {
	testutil.MustHaveRoot(t)
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		// A root JVM, as pid 1 of its own namespaces with a private /tmp whose mode the test sets.
		j := testutil.StartJVM(t, jdk, testutil.JVMOptions{JVMArgs: []string{"-Xmx64m"}, Namespace: true})
		pid := strconv.Itoa(j.PID)
		tmp := j.HostPath("/tmp")
		t.Cleanup(func() { os.Remove("/tmp/perf-" + pid + ".map") })
		setTmp := func(t *testing.T, uid int, mode uint32) {
			t.Helper()
			if err := os.Chown(tmp, uid, uid); err != nil {
				t.Fatal(err)
			}
			if err := unix.Chmod(tmp, mode); err != nil { // raw bits: os.Chmod drops 0o1000
				t.Fatal(err)
			}
		}
		for _, c := range []struct {
			name string
			uid  int
			mode uint32
			say  string
		}{
			{"world-writable-not-sticky", 0, 0o777, "not sticky"},
			{"group-writable-not-sticky", 0, 0o775, "not sticky"},
			{"owned-by-another-user", otherUID, 0o755, "uid 65534 owns"},
			{"owned-by-another-user-sticky", otherUID, 0o1777, "uid 65534 owns"},
		} {
			t.Run(c.name, func(t *testing.T) {
				setTmp(t, c.uid, c.mode)
				defer setTmp(t, 0, 0o1777)
				r := tool(t, "gjmaps", "-p", pid, "--strategy", "agent")
				if r.code != 1 || !strings.Contains(r.stderr, "not loading an agent") || !strings.Contains(r.stderr, c.say) {
					t.Errorf("want exit 1 refusing the agent (%q); got %s", c.say, r)
				}
				if loaded(t, j.PID) {
					t.Fatalf("the JVM mapped jvmkit's agent from its /tmp (mode %#o, uid %d)", c.mode, c.uid)
				}
				entries, err := os.ReadDir(tmp)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range entries {
					if strings.HasPrefix(e.Name(), ".jvmkit-agent-") {
						t.Errorf("left %s/%s behind", tmp, e.Name())
					}
				}
				if !j.Alive() {
					t.Fatal("the JVM died")
				}
			})
		}
		// Control: the same JVM with a sticky /tmp of root's takes the agent.
		if r := tool(t, "gjmaps", "-p", pid, "--strategy", "agent"); r.code != 0 || !strings.Contains(r.stdout, "entries") {
			t.Errorf("control (/tmp 1777 root): want the agent loaded; got %s", r)
		}
		if !loaded(t, j.PID) {
			t.Errorf("control: gjmaps succeeded but the JVM has no jvmkit agent mapped")
		}
	})
}

// loaded reports whether process pid has jvmkit's agent library mapped.
func loaded(t *testing.T, pid int) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/maps")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains(string(b), "libjvmkit-perfmap-linux-")
}
