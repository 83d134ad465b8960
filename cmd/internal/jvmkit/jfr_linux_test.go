package jvmkit

import (
	"bytes"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jvmkit/jvmkit/cmd/internal/gjcmd"
	"github.com/jvmkit/jvmkit/internal/testutil"
)

func runGjcmd(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := gjcmd.Main(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestJfrLeaksContainer is the documented way to find a leak in a container from the node: start a
// recording with gjcmd, dump it with path-to-gc-roots=true and --copy-to (the JVM is pid 1 of its own
// pid and mount namespaces with a private /tmp, and writes inside them), and read the copy with
// jvmkit jfr leaks: the first chain goes through the static field Leak.LEAK to the leaked items.
func TestJfrLeaksContainer(t *testing.T) {
	testutil.MustHaveRoot(t)
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		if jdk.Feature < 17 {
			testutil.SkipJDK(t, jdk, "its chains end before the static field that holds them (see jfr's doc)")
		}
		j := testutil.StartJVM(t, jdk, testutil.JVMOptions{Main: "Leak", JVMArgs: []string{"-Xmx64m"}, Namespace: true})
		pid := strconv.Itoa(j.PID)
		if code, out, stderr := runGjcmd(pid, "JFR.start", "name=leak", "settings=profile"); code != 0 {
			t.Fatalf("JFR.start: %d %s %s", code, out, stderr)
		}
		dir := t.TempDir()
		rec := filepath.Join(dir, "leak.jfr")
		var report string
		for end := time.Now().Add(90 * time.Second); ; {
			code, out, stderr := runGjcmd("--copy-to", dir, "--overwrite", pid, "JFR.dump", "name=leak", "filename=leak.jfr", "path-to-gc-roots=true")
			if code != 0 || !strings.Contains(stderr, "/proc/"+pid+"/root/") {
				t.Fatalf("JFR.dump --copy-to: %d %s %s", code, out, stderr)
			}
			code, report, stderr = runJvmkit(t, nil, "jfr", "leaks", rec)
			if code != 0 {
				t.Fatalf("jfr leaks: %d %s", code, stderr)
			}
			first := strings.SplitN(report, "\n#2 ", 2)[0]
			if strings.Contains(first, ".LEAK (static) -> java.util.ArrayList") && strings.Contains(first, "Leak$LeakedItem") {
				break
			}
			if time.Now().After(end) {
				t.Fatalf("no leak chain through Leak.LEAK first after 90 s:\n%s", report)
			}
			time.Sleep(time.Second) // the sampler needs leaked objects that live long enough
		}
		t.Logf("%s", strings.SplitN(report, "\n#2 ", 2)[0])
	})
}
