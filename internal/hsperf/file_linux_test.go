package hsperf

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestFind(t *testing.T) {
	tmp := t.TempDir()
	img := buildFile(sample()...)
	me := os.Getuid()
	writeFile(t, filepath.Join(tmp, "hsperfdata_me", "123"), img)
	writeFile(t, filepath.Join(tmp, "hsperfdata_me", "7"), img)
	writeFile(t, filepath.Join(tmp, "other", "55"), img)
	// Symlinks are refused for the file and for the directory.
	if err := os.Symlink(filepath.Join(tmp, "other", "55"), filepath.Join(tmp, "hsperfdata_me", "55")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(tmp, "other"), filepath.Join(tmp, "hsperfdata_link")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(tmp, "hsperfdata_me", "56"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Stale files of the same pid: the newer one wins among equally owned ones.
	writeFile(t, filepath.Join(tmp, "hsperfdata_a", "77"), img)
	writeFile(t, filepath.Join(tmp, "hsperfdata_b", "77"), img)
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(tmp, "hsperfdata_a", "77"), old, old); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		pid  int
		want string // relative to tmp; "" for fs.ErrNotExist
	}{
		{123, "hsperfdata_me/123"},
		{7, "hsperfdata_me/7"},
		{55, ""},
		{56, ""},
		{8, ""},
		{77, "hsperfdata_b/77"},
	} {
		got, err := Find(tmp, tc.pid, me)
		if tc.want == "" {
			if !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("Find(%d) = %q, %v; want fs.ErrNotExist", tc.pid, got, err)
			}
			continue
		}
		if err != nil || got != filepath.Join(tmp, tc.want) {
			t.Errorf("Find(%d) = %q, %v; want %s", tc.pid, got, err, tc.want)
		}
	}
	if _, err := Find(filepath.Join(tmp, "missing"), 1, me); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Find in a missing directory: %v", err)
	}
	if _, err := Find(tmp, 0, me); err == nil {
		t.Error("Find(pid 0) succeeded")
	}

	// Owner preference needs a file owned by somebody else.
	if me != 0 {
		t.Log("not root: owner preference not tested")
		return
	}
	other := filepath.Join(tmp, "hsperfdata_z", "77")
	writeFile(t, other, img)
	if err := os.Chown(other, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(filepath.Dir(other), 4242, 4242); err != nil {
		t.Fatal(err)
	}
	if got, err := Find(tmp, 77, 4242); err != nil || got != other {
		t.Errorf("Find(77, uid 4242) = %q, %v; want %s", got, err, other)
	}
	if got, err := Find(tmp, 77, 0); err != nil || got != filepath.Join(tmp, "hsperfdata_b", "77") {
		t.Errorf("Find(77, uid 0) = %q, %v", got, err)
	}
}

func TestReadFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	writeFile(t, good, buildFile(sample()...))
	d, err := ReadFile(ctx, good)
	if err != nil || d.JavaCommand() != "Sleeper" {
		t.Fatalf("ReadFile = %+v, %v", d, err)
	}

	link := filepath.Join(dir, "link")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(ctx, link); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("ReadFile(symlink) error = %v", err)
	}

	// The directory swapped for a link to another (between Find and a read): refused too.
	dirLink := filepath.Join(t.TempDir(), "hsperfdata_swapped")
	if err := os.Symlink(dir, dirLink); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(ctx, filepath.Join(dirLink, "good")); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("ReadFile(through a linked directory) error = %v", err)
	}

	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(ctx, fifo); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("ReadFile(fifo) error = %v", err)
	}

	if _, err := ReadFile(ctx, filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile(missing) error = %v", err)
	}

	bad := filepath.Join(dir, "bad")
	img := buildFile(sample()...)
	img = img[:len(img)-3]
	writeFile(t, bad, img)
	d, err = ReadFile(ctx, bad)
	var fe *FormatError
	if !errors.Is(err, ErrCorrupt) || !errors.As(err, &fe) || fe.Path != bad || d == nil || len(d.Entries) != len(sample())-1 {
		t.Errorf("ReadFile(truncated) = %v, %v", d, err)
	}
}

func TestReadFileNotAccessible(t *testing.T) {
	path := filepath.Join(t.TempDir(), "starting")
	img := buildFile(sample()...)
	img[7] = 0
	writeFile(t, path, img)

	// Gives up when the context ends, returning what it read.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	d, err := ReadFile(ctx, path)
	if !errors.Is(err, ErrNotAccessible) || !errors.Is(err, context.DeadlineExceeded) || d == nil || d.Accessible {
		t.Errorf("ReadFile = %v, %v; want data and ErrNotAccessible", d, err)
	}

	// Gives up by itself after a bounded number of tries.
	start := time.Now()
	if _, err := ReadFile(context.Background(), path); !errors.Is(err, ErrNotAccessible) {
		t.Errorf("ReadFile error = %v, want ErrNotAccessible", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("ReadFile took %v to give up", took)
	}

	// Succeeds once the JVM marks the file accessible.
	go func() {
		time.Sleep(60 * time.Millisecond)
		// Replace the file in one step, so that no read sees it half written.
		if os.WriteFile(path+".new", buildFile(sample()...), 0o600) == nil {
			os.Rename(path+".new", path)
		}
	}()
	d, err = ReadFile(context.Background(), path)
	if err != nil || !d.Accessible {
		t.Errorf("ReadFile after the JVM set accessible = %v, %v", d, err)
	}
}
