package attach

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestOpenTmpNoFollow: on kernels without openat2, a /tmp that is a directory is opened, a link is
// refused, whatever it names.
func TestOpenTmpNoFollow(t *testing.T) {
	root := t.TempDir()
	if _, err := openTmpNoFollow(root); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), root+"/tmp") {
		t.Errorf("no tmp: %v", err)
	}
	if err := os.Mkdir(filepath.Join(root, "srv"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("srv", filepath.Join(root, "tmp")); err != nil {
		t.Fatal(err)
	}
	if _, err := openTmpNoFollow(root); !errors.Is(err, errors.ErrUnsupported) || !strings.Contains(err.Error(), root+"/tmp") {
		t.Errorf("tmp a link: %v", err)
	}
	if err := os.Remove(filepath.Join(root, "tmp")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "tmp"), 0o1777); err != nil {
		t.Fatal(err)
	}
	fd, err := openTmpNoFollow(root)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	var a, b unix.Stat_t
	if err := unix.Fstat(fd, &a); err != nil || unix.Stat(filepath.Join(root, "tmp"), &b) != nil || a.Ino != b.Ino || a.Dev != b.Dev {
		t.Errorf("opened another directory than %s/tmp: %v", root, err)
	}
}

// TestShownErr: an error about paths below a Dir's Path names them below the directory's name, and
// still is the error it wraps.
func TestShownErr(t *testing.T) {
	d := &Dir{fd: 7, name: "/proc/42/root/tmp"}
	err := d.ShownErr(fmt.Errorf("no file under %s, nor %s/x, nor in /proc/self/fd/71/y: %w", d.Path(), d.Path(), fs.ErrNotExist))
	want := "no file under /proc/42/root/tmp, nor /proc/42/root/tmp/x, nor in /proc/self/fd/71/y: file does not exist"
	if err.Error() != want || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ShownErr: %q (is ErrNotExist: %t), want %q", err, errors.Is(err, fs.ErrNotExist), want)
	}
	if d.ShownErr(nil) != nil {
		t.Errorf("ShownErr(nil) is not nil")
	}
	if got := d.Shown(d.Path() + "/hsperfdata_app/1"); got != "/proc/42/root/tmp/hsperfdata_app/1" {
		t.Errorf("Shown: %q", got)
	}
	if got := d.Shown("/proc/self/fd/70/x"); got != "/proc/self/fd/70/x" {
		t.Errorf("Shown of a path elsewhere: %q", got)
	}
}
