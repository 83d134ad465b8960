package hsperf

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"
)

var capture = flag.Bool("capture", false,
	"TestLiveParity: store each JDK's hsperfdata file and jcmd output as testdata/<jdk>.{hsperfdata,jcmd} (then run -update)")

// mustHaveJDK skips when the JDK at home is missing, and fails instead when CI is set, so that a
// CI image that lost its JDK does not silently turn the parity test off.
func mustHaveJDK(t *testing.T, home string) {
	t.Helper()
	for _, tool := range []string{"java", "javac", "jcmd"} {
		if _, err := os.Stat(filepath.Join(home, "bin", tool)); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("JDK tool missing (CI is set, so this fails): %v", err)
			}
			t.Skipf("JDK tool missing: %v", err)
		}
	}
}

// startSleeper compiles and starts testdata/Sleeper.java and returns its pid once it is ready.
// Cleanup closes its stdin, on which it exits normally (deleting its hsperfdata file); it is
// killed, by its pid only, if it does not.
func startSleeper(t *testing.T, home string) int {
	t.Helper()
	dir := t.TempDir()
	src, err := filepath.Abs("testdata/Sleeper.java")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(filepath.Join(home, "bin", "javac"), "-d", dir, src).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	cmd := exec.Command(filepath.Join(home, "bin", "java"), "-XX:+UsePerfData", "-Xmx64m", "-cp", ".", "Sleeper")
	cmd.Dir = dir // class path "." keeps java.class.path stable in the captured files
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() {
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err == nil && line != "ready\n" {
			err = fmt.Errorf("first line %q", line)
		}
		exited <- err
	}()
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Logf("Sleeper %d ignored EOF; killing it", cmd.Process.Pid)
			cmd.Process.Kill()
			<-done
		}
	})
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("Sleeper did not say ready: %v\n%s", err, stderr.Bytes())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("Sleeper not ready after 30s\n%s", stderr.Bytes())
	}
	return cmd.Process.Pid
}

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
	for _, jdk := range []struct {
		name, home string
		required   bool
	}{
		{"jdk17", "/usr/lib/jvm/java-17-openjdk-amd64", true},
		{"jdk25", "/usr/lib/jvm/temurin-25-jdk-amd64", false},
	} {
		t.Run(jdk.name, func(t *testing.T) {
			if !jdk.required {
				if _, err := os.Stat(jdk.home); err != nil {
					t.Skipf("optional JDK not installed: %v", err)
				}
			}
			mustHaveJDK(t, jdk.home)
			pid := startSleeper(t, jdk.home)
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
				out, err := exec.CommandContext(ctx, filepath.Join(jdk.home, "bin", "jcmd"), strconv.Itoa(pid), "PerfCounter.print").Output()
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
					if err := os.WriteFile("testdata/"+jdk.name+".hsperfdata", raw, 0o644); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile("testdata/"+jdk.name+".jcmd", out, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				return
			}
		})
	}
}
