package rootfs_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/internal/rootfs"
	"github.com/jvmkit/jvmkit/internal/testutil"
)

// TestOpenOutputDir: a tool's own output directory is resolved as with fs.protected_symlinks on: another
// user's link in sticky /tmp is refused, the caller's own is followed, as are links elsewhere and the
// kernel's /proc/<pid>/root.
func TestOpenOutputDir(t *testing.T) {
	testutil.MustHaveRoot(t)
	target := t.TempDir()
	same := func(fd int, want string) bool {
		var a, b unix.Stat_t
		return unix.Fstat(fd, &a) == nil && unix.Stat(want, &b) == nil && a.Dev == b.Dev && a.Ino == b.Ino
	}
	link := func(owner int) string {
		p := filepath.Join("/tmp", "jvmkit-outdir-"+strconv.Itoa(os.Getpid())+"-"+strconv.Itoa(owner))
		os.Remove(p)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
		if err := os.Lchown(p, owner, owner); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(p) })
		return p
	}
	theirs, ours := link(65534), link(0)
	if fd, err := rootfs.OpenOutputDir(theirs+"/", unix.O_PATH); err == nil || !errors.Is(err, rootfs.ErrUnsafe) {
		if err == nil {
			unix.Close(fd)
		}
		t.Errorf("another user's link in /tmp: %v, want ErrUnsafe", err)
	}
	for _, c := range []struct{ dir, want string }{
		{ours, target},
		{"/proc/self/root/tmp", "/tmp"},
		{"/proc/" + strconv.Itoa(os.Getpid()) + "/cwd", "."},
		{target + "/../" + filepath.Base(target), target},
	} {
		fd, err := rootfs.OpenOutputDir(c.dir, unix.O_RDONLY)
		if err != nil {
			t.Errorf("%s: %v", c.dir, err)
			continue
		}
		if !same(fd, c.want) {
			t.Errorf("%s: opened another directory than %s", c.dir, c.want)
		}
		unix.Close(fd)
	}
	// Relative names are resolved from the working directory, by the same rule.
	t.Chdir("/tmp")
	if fd, err := rootfs.OpenOutputDir(filepath.Base(theirs)+"/.", unix.O_PATH); err == nil || !errors.Is(err, rootfs.ErrUnsafe) {
		if err == nil {
			unix.Close(fd)
		}
		t.Errorf("another user's link in /tmp, relative: %v, want ErrUnsafe", err)
	}
	if fd, err := rootfs.OpenOutputDir(filepath.Base(ours), unix.O_PATH); err != nil || !same(fd, target) {
		t.Errorf("own link in /tmp, relative: %v", err)
	} else {
		unix.Close(fd)
	}
	// A link elsewhere (a directory only root can write) is followed whoever owns it.
	elsewhere := filepath.Join(t.TempDir(), "l")
	if err := os.Symlink(target, elsewhere); err != nil {
		t.Fatal(err)
	}
	_ = os.Lchown(elsewhere, 65534, 65534)
	if fd, err := rootfs.OpenOutputDir(elsewhere, unix.O_PATH); err != nil || !same(fd, target) {
		t.Errorf("a link in a private directory: %v", err)
	} else {
		unix.Close(fd)
	}
}

// TestCheckOutputPseudoFS: an output in /proc or sysfs is refused before the task, which would otherwise
// run to its end and then fail to create its temporary file there; an ordinary directory passes.
func TestCheckOutputPseudoFS(t *testing.T) {
	for _, p := range []string{"/proc/version", "/proc/self/x.svg", "/sys/kernel/x.folded"} {
		if err := rootfs.CheckOutput(p); err == nil || !strings.Contains(err.Error(), "where no file can be created") {
			t.Errorf("CheckOutput(%s) = %v, want a refusal naming the file system", p, err)
		}
	}
	if err := rootfs.CheckOutput(filepath.Join(t.TempDir(), "x.svg")); err != nil {
		t.Errorf("CheckOutput in a temporary directory: %v", err)
	}
}
