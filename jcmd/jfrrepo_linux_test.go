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

// TestJFRRepositoryNotPlanted: a JVM's first disk recording makes its JFR repository,
// <tmpdir>/<yyyy_MM_dd_HH_mm_ss>_<pid>, and JFR takes a symbolic link planted at that name. Another user
// (nobody) plants links to a directory of theirs at the names of the coming minute in /tmp; JFR.start
// through the client must leave that directory alone and make the repository in a private directory
// of the JVM's user. A JVM whose java.io.tmpdir only its user can write keeps its repository there.
func TestJFRRepositoryNotPlanted(t *testing.T) {
	testutil.MustHaveRoot(t)
	testutil.ForEachJDK(t, func(t *testing.T, jdk testutil.JDK) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		t.Run("shared tmpdir", func(t *testing.T) {
			j := testutil.StartJVM(t, jdk, testutil.JVMOptions{JVMArgs: []string{"-Djava.io.tmpdir=/tmp"}})
			theirs := filepath.Join(t.TempDir(), "theirs")
			if err := os.Mkdir(theirs, 0o777); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(theirs, 65534, 65534); err != nil {
				t.Fatal(err)
			}
			_ = os.Chmod(filepath.Dir(theirs), 0o755)
			// The names of the coming minute (and the last seconds, for a clock read a little earlier).
			now := time.Now()
			for s := -3; s < 60; s++ {
				for _, tz := range []*time.Location{time.UTC, time.Local} {
					link := fmt.Sprintf("/tmp/%s_%d", now.Add(time.Duration(s)*time.Second).In(tz).Format("2006_01_02_15_04_05"), j.PID)
					if err := os.Symlink(theirs, link); err != nil && !os.IsExist(err) {
						t.Fatal(err)
					}
					if err := os.Lchown(link, 65534, 65534); err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { _ = os.Remove(link) })
				}
			}
			c := dialClient(t, j.PID)
			var out strings.Builder
			notes, err := c.RunWriting(ctx, &out, "JFR.start name=planted")
			if err != nil || !strings.Contains(out.String(), "Started recording") {
				t.Fatalf("JFR.start: %v\n%s", err, out.String())
			}
			defer func() { _, _ = c.Run(ctx, "JFR.stop name=planted") }()
			want := fmt.Sprintf("/tmp/jvmkit-jfr-%d", os.Geteuid())
			if len(notes) != 1 || !strings.Contains(notes[0], want) {
				t.Errorf("notes %q, want one naming %s", notes, want)
			}
			conf, err := c.Run(ctx, "JFR.configure")
			if err != nil || !strings.Contains(conf, "Repository path: "+want+"/") {
				t.Errorf("JFR.configure after JFR.start: %v\n%s", err, conf)
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
