package hsperf

import (
	"context"
	"flag"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/jvmkit/jvmkit/internal/testutil"
)

var capture = flag.Bool("capture", false,
	"TestLiveParity: store each JDK's hsperfdata file and jcmd output as testdata/<jdk>.{hsperfdata,jcmd} (then run -update)")

func names(d *Data) []string {
	var s []string
	for _, e := range d.Counters() {
		s = append(s, e.Name)
	}
	return s
}

// TestLiveParity compares our reading of a live JVM's hsperfdata file with what that JDK's own
// jcmd PerfCounter.print prints for it.
func TestLiveParity(t *testing.T) {
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		jcmd := jdk.Bin("jcmd")
		if _, err := os.Stat(jcmd); err != nil {
			testutil.Skipf(t, "%s has no jcmd: %v", jdk, err)
		}
		// Class path "." keeps java.class.path stable in the captured files, so the JVM runs in the
		// class directory.
		classes := testutil.Compile(t, jdk, "Sleeper")
		jvm := testutil.StartJVM(t, jdk, testutil.JVMOptions{
			JVMArgs:   []string{"-XX:+UsePerfData", "-Xmx64m"},
			Main:      "Sleeper",
			ClassPath: ".",
			Dir:       classes,
		})
		pid := jvm.PID
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()

		path, err := Find("/tmp", pid, os.Getuid())
		if err != nil {
			t.Fatal(err)
		}
		// A counter created between our read and jcmd's would make the name sets differ for
		// reasons that are not ours; read before and after jcmd and retry if the set moved.
		for attempt := 1; ; attempt++ {
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			before, err := ReadFile(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			out, err := exec.CommandContext(ctx, jcmd, strconv.Itoa(pid), "PerfCounter.print").Output()
			if err != nil {
				t.Fatalf("jcmd: %v", err)
			}
			after, err := ReadFile(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(names(before), names(after)) && attempt < 3 {
				t.Logf("counter set changed during attempt %d; again", attempt)
				continue
			}
			jc, err := parseJcmd(string(out))
			if err != nil {
				t.Fatal(err)
			}
			if len(before.Entries) != before.NumEntries {
				t.Errorf("%d entries, prologue says %d", len(before.Entries), before.NumEntries)
			}
			if before.JavaCommand() != "Sleeper" {
				t.Errorf("JavaCommand() = %q", before.JavaCommand())
			}
			if s, k := before.AttachSupported(); !s || !k {
				t.Errorf("AttachSupported() = %v, %v", s, k)
			}
			if before.VMVersion() == "" {
				t.Error("VMVersion() is empty")
			}
			compareWithJcmd(t, before, jc)
			if *capture {
				d, err := Parse(raw)
				if err != nil || !slices.Equal(names(d), names(before)) {
					t.Fatalf("raw copy differs from the compared read: %v", err)
				}
				if err := os.WriteFile("testdata/"+jdk.Name()+".hsperfdata", raw, 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile("testdata/"+jdk.Name()+".jcmd", out, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			return
		}
	})
}
