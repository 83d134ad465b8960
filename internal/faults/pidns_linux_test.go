package faults_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/internal/testutil"
)

// TestPidNamespaceSharedTmp: any user can run a JVM in a pid namespace of their own that keeps the host's
// /tmp (unshare -Urp) and choose its pid there (ns_last_pid) to be the host pid of a root JVM. The map
// name inside that JVM's /tmp, /tmp/perf-<nspid>.map, is then the root JVM's map on the host: gjmaps on
// the other user's JVM replaced the root JVM's map with its own (and --clean removed it). gjmaps must
// write and clean only /tmp/perf-<hostpid>.map for such a JVM, and leave the root JVM's map as it was.
func TestPidNamespaceSharedTmp(t *testing.T) {
	testutil.MustHaveRoot(t)
	testutil.MustHaveTool(t, "setpriv")
	testutil.MustHaveTool(t, "unshare")
	jdk := testutil.JDK17(t)

	victim := testutil.StartJVM(t, jdk, testutil.JVMOptions{JVMArgs: []string{"-Xmx64m"}})
	victimMap := "/tmp/perf-" + strconv.Itoa(victim.PID) + ".map"
	t.Cleanup(func() { os.Remove(victimMap) })
	if r := tool(t, "gjmaps", "-p", strconv.Itoa(victim.PID), "--strategy", "vmstructs"); r.code != 0 {
		t.Fatalf("the root JVM's own map: %s", r)
	}
	before, beforeSt := readMap(t, victimMap)

	// The other user's JVM, whose pid in its namespace is the root JVM's host pid.
	cp := testutil.Compile(t, jdk, "Sleeper")
	script := `echo "$1" > /proc/sys/kernel/ns_last_pid && sh -c 'exec "$0" -Xmx64m -cp "$1" Sleeper' "$2" "$3"`
	startOther(t, "unshare", "-Urmp", "--kill-child", "--mount-proc", "sh", "-c", script, "sh", strconv.Itoa(victim.PID-1), jdk.Bin("java"), cp)
	other := findNSPID(t, victim.PID, cp)
	otherMap := "/tmp/perf-" + strconv.Itoa(other) + ".map"
	t.Cleanup(func() { os.Remove(otherMap) })
	t.Logf("root JVM %d; uid %d's JVM %d is %d in its pid namespace, with the host's /tmp", victim.PID, otherUID, other, victim.PID)

	r := tool(t, "gjmaps", "-p", strconv.Itoa(other), "--strategy", "vmstructs")
	if r.code != 0 || !strings.Contains(r.stdout, otherMap) || strings.Contains(r.stdout, victimMap) {
		t.Errorf("want exit 0 writing %s only; got %s", otherMap, r)
	}
	intact := func(what string) {
		t.Helper()
		after, afterSt := readMap(t, victimMap)
		if !bytes.Equal(before, after) || afterSt.Ino != beforeSt.Ino || afterSt.Uid != 0 {
			t.Errorf("%s on uid %d's JVM replaced the root JVM's map %s (%d bytes, inode %d -> %d bytes, inode %d, uid %d)",
				what, otherUID, victimMap, len(before), beforeSt.Ino, len(after), afterSt.Ino, afterSt.Uid)
		}
	}
	intact("gjmaps --strategy vmstructs")
	// JDK 17 to 21 write their map only at /tmp/perf-<nspid>.map, here the root JVM's: the JVM must not
	// be asked to (gjmaps --strategy jcmd, gjcmd Compiler.perfmap).
	o := strconv.Itoa(other)
	for _, args := range [][]string{{"gjmaps", "-p", o, "--strategy", "jcmd"}, {"gjcmd", o, "Compiler.perfmap"}} {
		r := tool(t, args[0], args[1:]...)
		if r.code == 0 || !strings.Contains(r.stderr, "shares the host's /tmp") {
			t.Errorf("want a non-zero exit saying the JVM shares the host's /tmp; got %s", r)
		}
		intact(strings.Join(args, " "))
	}
	r = tool(t, "gjmaps", "-p", strconv.Itoa(other), "--clean")
	if _, err := os.Lstat(victimMap); err != nil || strings.Contains(r.stdout, victimMap) {
		t.Errorf("gjmaps --clean on uid %d's JVM removed the root JVM's map: %v\n%s", otherUID, err, r)
	}
	if !victim.Alive() {
		t.Fatal("the root JVM died")
	}
}

func readMap(t *testing.T, path string) ([]byte, unix.Stat_t) {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b, st
}

// findNSPID returns the host pid of the java process whose pid in its own namespace is nspid and whose
// command line names the class path cp.
func findNSPID(t *testing.T, nspid int, cp string) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		dirs, _ := filepath.Glob("/proc/[0-9]*")
		for _, d := range dirs {
			status, err := os.ReadFile(d + "/status")
			if err != nil {
				continue
			}
			for line := range strings.SplitSeq(string(status), "\n") {
				f := strings.Fields(line)
				if len(f) == 3 && f[0] == "NSpid:" && f[2] == strconv.Itoa(nspid) {
					cmdline, _ := os.ReadFile(d + "/cmdline")
					if bytes.Contains(cmdline, []byte(cp)) {
						pid, _ := strconv.Atoi(f[1])
						return pid
					}
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no process with pid %d in its namespace runs %s", nspid, cp)
	return 0
}
