package jcmd_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jvmkit/jvmkit/internal/testutil"
)

// plantRepositoryLinks has another user (nobody) plant symbolic links at the names JFR gives the
// repository of JVM pid in /tmp, <yyyy_MM_dd_HH_mm_ss>_<pid>, for the coming minute (and the last seconds,
// for a clock read a little earlier), pointing to an empty directory of theirs, which it returns.
func plantRepositoryLinks(t *testing.T, pid int) string {
	t.Helper()
	theirs := filepath.Join(t.TempDir(), "theirs")
	if err := os.Mkdir(theirs, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(theirs, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(filepath.Dir(theirs), 0o755)
	now := time.Now()
	for s := -3; s < 60; s++ {
		for _, tz := range []*time.Location{time.UTC, time.Local} {
			link := fmt.Sprintf("/tmp/%s_%d", now.Add(time.Duration(s)*time.Second).In(tz).Format("2006_01_02_15_04_05"), pid)
			if err := os.Symlink(theirs, link); err != nil && !os.IsExist(err) {
				t.Fatal(err)
			}
			if err := os.Lchown(link, 65534, 65534); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.Remove(link) })
		}
	}
	return theirs
}

// TestJFRRepositoryNotPlanted: JFR's first use in a JVM, any JFR command but JFR.configure, sets up its
// repository in java.io.tmpdir: it makes <yyyy_MM_dd_HH_mm_ss>_<pid> there, takes a symbolic link planted
// at that name, and deletes the directory it points to again (and a disk recording writes there). Another
// user (nobody) plants links to an empty directory of theirs at the names of the coming minute in /tmp.
//   - Sent raw (VM.Jcmd, no guard), JFR.check has the JVM delete that directory: the hazard is real
//     (JDK 17 and later; JDK 11's JFR.check sets nothing up).
//   - Through the client, JFR.start, JFR.check (two runs at once) and JFR.start disk=false leave it alone
//     and set the repository up in a private directory of the JVM's user, with a note.
//
// A JVM whose java.io.tmpdir only its user can write keeps its repository there.
func TestJFRRepositoryNotPlanted(t *testing.T) {
	testutil.MustHaveRoot(t)
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		want := fmt.Sprintf("/tmp/jvmkit-jfr-%d", os.Geteuid())
		t.Run("unguarded", func(t *testing.T) {
			j := testutil.StartJVM(t, jdk, testutil.JVMOptions{JVMArgs: []string{"-Djava.io.tmpdir=/tmp"}})
			theirs := plantRepositoryLinks(t, j.PID)
			c := dialClient(t, j.PID)
			if _, err := c.VM.Jcmd(ctx, "JFR.check"); err != nil {
				t.Fatalf("JFR.check: %v", err)
			}
			_, err := os.Stat(theirs)
			switch {
			case jdk.Feature < 17: // JDK 11's JFR.check sets up no repository (measured): the guard only costs a round trip
				if err != nil {
					t.Errorf("raw JFR.check on %s removed the planted links' directory (%v): JDK 11 did not", jdk, err)
				}
			case !os.IsNotExist(err):
				t.Errorf("raw JFR.check through a planted link: the directory it points to is still there (%v); the guard's premise no longer holds on %s", err, jdk)
			}
		})
		for _, tc := range []struct{ line, recording string }{
			{"JFR.start name=planted", "planted"}, {"JFR.check", ""}, {"JFR.start name=memory disk=false", "memory"},
		} {
			line := tc.line
			t.Run("shared tmpdir/"+line, func(t *testing.T) {
				j := testutil.StartJVM(t, jdk, testutil.JVMOptions{JVMArgs: []string{"-Djava.io.tmpdir=/tmp"}})
				theirs := plantRepositoryLinks(t, j.PID)
				c := dialClient(t, j.PID)
				var out strings.Builder
				var notes []string
				var err error
				if tc.recording == "" {
					// Two runs at once, as two users' gjcmd could: each may find no repository yet, both
					// guard, neither may have JFR set one up in /tmp, and at least one says where it went.
					var other strings.Builder
					var otherNotes []string
					var otherErr error
					oc := dialClient(t, j.PID)
					done := make(chan struct{})
					go func() {
						defer close(done)
						otherNotes, otherErr = oc.RunWriting(ctx, &other, line)
					}()
					notes, err = c.RunWriting(ctx, &out, line)
					<-done
					if otherErr != nil {
						t.Fatalf("%s, run beside another: %v\n%s", line, otherErr, other.String())
					}
					for _, n := range otherNotes {
						if !strings.Contains(n, want) {
							t.Errorf("the other run's note %q does not name %s", n, want)
						}
					}
					if len(notes) == 0 {
						notes = otherNotes
					}
				} else {
					notes, err = c.RunWriting(ctx, &out, line)
				}
				if err != nil || (strings.HasPrefix(line, "JFR.start") && !strings.Contains(out.String(), "Started recording")) {
					t.Fatalf("%s: %v\n%s", line, err, out.String())
				}
				if tc.recording != "" {
					defer func() { _, _ = c.Run(ctx, "JFR.stop name="+tc.recording) }()
				}
				if len(notes) != 1 || !strings.Contains(notes[0], want) {
					t.Errorf("notes %q, want one naming %s", notes, want)
				}
				conf, err := c.Run(ctx, "JFR.configure")
				if err != nil || !strings.Contains(conf, "Repository path: "+want+"/") {
					t.Errorf("JFR.configure after %s: %v\n%s", line, err, conf)
				}
				if entries, err := os.ReadDir(theirs); err != nil || len(entries) != 0 {
					t.Errorf("the planted links' directory: %v, %v (want it there and empty)", entries, err)
				}
				// A second recording finds the repository set and changes nothing.
				out.Reset()
				notes, err = c.RunWriting(ctx, &out, "JFR.start name=second")
				if err != nil || len(notes) != 0 {
					t.Errorf("second JFR.start: %v, notes %q\n%s", err, notes, out.String())
				}
				_, _ = c.Run(ctx, "JFR.stop name=second")
			})
		}
		// A repository made in /tmp before (here by a raw JFR.start) and then removed, as a tmp cleaner
		// would while no recording runs: JFR would make it again, in /tmp, taking a planted link.
		t.Run("lost repository", func(t *testing.T) {
			j := testutil.StartJVM(t, jdk, testutil.JVMOptions{JVMArgs: []string{"-Djava.io.tmpdir=/tmp"}})
			c := dialClient(t, j.PID)
			if _, err := c.VM.Jcmd(ctx, "JFR.start name=raw"); err != nil {
				t.Fatalf("raw JFR.start: %v", err)
			}
			if _, err := c.VM.Jcmd(ctx, "JFR.stop name=raw"); err != nil {
				t.Fatalf("raw JFR.stop: %v", err)
			}
			conf, err := c.Run(ctx, "JFR.configure")
			repo := ""
			for line := range strings.Lines(conf) {
				if v, ok := strings.CutPrefix(line, "Repository path:"); ok {
					repo = strings.TrimSpace(v)
				}
			}
			if err != nil || !strings.HasPrefix(repo, "/tmp/") {
				t.Fatalf("JFR.configure after a raw JFR.start: %v\n%s", err, conf)
			}
			// While it is there, a JFR command leaves it where it is.
			var out strings.Builder
			if notes, err := c.RunWriting(ctx, &out, "JFR.check"); err != nil || len(notes) != 0 {
				t.Errorf("JFR.check with the repository %s there: %v, notes %q", repo, err, notes)
			}
			if err := os.RemoveAll(repo); err != nil {
				t.Fatal(err)
			}
			theirs := plantRepositoryLinks(t, j.PID)
			notes, err := c.RunWriting(ctx, &out, "JFR.start name=again")
			if err != nil {
				t.Fatalf("JFR.start: %v\n%s", err, out.String())
			}
			defer func() { _, _ = c.Run(ctx, "JFR.stop name=again") }()
			if len(notes) != 1 || !strings.Contains(notes[0], want) {
				t.Errorf("notes %q, want one naming %s", notes, want)
			}
			if entries, err := os.ReadDir(theirs); err != nil || len(entries) != 0 {
				t.Errorf("the planted links' directory: %v, %v (want it there and empty)", entries, err)
			}
			if conf, err := c.Run(ctx, "JFR.configure"); err != nil || !strings.Contains(conf, "Repository path: "+want+"/") {
				t.Errorf("JFR.configure after JFR.start: %v\n%s", err, conf)
			}
		})
		t.Run("private tmpdir", func(t *testing.T) {
			tmp := t.TempDir() // root's, mode 0700
			j := testutil.StartJVM(t, jdk, testutil.JVMOptions{JVMArgs: []string{"-Djava.io.tmpdir=" + tmp}})
			c := dialClient(t, j.PID)
			var out strings.Builder
			notes, err := c.RunWriting(ctx, &out, "JFR.start name=private")
			if err != nil || len(notes) != 0 {
				t.Fatalf("JFR.start: %v, notes %q\n%s", err, notes, out.String())
			}
			defer func() { _, _ = c.Run(ctx, "JFR.stop name=private") }()
			conf, err := c.Run(ctx, "JFR.configure")
			if err != nil || !strings.Contains(conf, "Repository path: "+tmp+"/") {
				t.Errorf("JFR.configure after JFR.start: %v\n%s", err, conf)
			}
		})
	})
}
