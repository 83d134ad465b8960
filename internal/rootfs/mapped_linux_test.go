package rootfs_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/internal/procfs"
	"github.com/jvmkit/jvmkit/internal/rootfs"
	"github.com/jvmkit/jvmkit/internal/testutil"
)

// mapFile maps path into this process and returns the mapping as /proc/self/maps shows it.
func mapFile(t *testing.T, path string) procfs.Mapping {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := unix.Mmap(int(f.Fd()), 0, os.Getpagesize(), unix.PROT_READ, unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Munmap(b) })
	start := uint64(uintptr(unsafe.Pointer(&b[0])))
	maps, err := procfs.Default.Maps(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range maps {
		if m.Start == start {
			return m
		}
	}
	t.Fatalf("mapping of %s at %#x not in /proc/self/maps", path, start)
	return procfs.Mapping{}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustRead(t *testing.T, f *os.File) string {
	t.Helper()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return string(bytes.TrimRight(b, "\x00"))
}

func TestOpenMapped(t *testing.T) {
	testutil.MustHaveRoot(t) // following /proc/<pid>/map_files needs CAP_SYS_ADMIN
	dir := t.TempDir()
	pid := os.Getpid()
	open := func(t *testing.T, m procfs.Mapping, want, via string) {
		t.Helper()
		f, err := rootfs.OpenMapped(procfs.Default, pid, m)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if !strings.Contains(f.Name(), via) {
			t.Errorf("opened %s, want a path through %s", f.Name(), via)
		}
		if got := mustRead(t, f); got != want {
			t.Errorf("read %q, want %q", got, want)
		}
	}

	t.Run("root", func(t *testing.T) {
		p := filepath.Join(dir, "lib one.so")
		writeFile(t, p, "one")
		open(t, mapFile(t, p), "one", "/root/")
	})
	t.Run("deleted", func(t *testing.T) {
		p := filepath.Join(dir, "gone.so")
		writeFile(t, p, "gone")
		m := mapFile(t, p)
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		m.Deleted = true // as maps now shows it
		open(t, m, "gone", "/map_files/")
	})
	t.Run("replaced", func(t *testing.T) {
		// A JDK upgrade renames a new file over the mapped one; the old one stays linked elsewhere.
		p := filepath.Join(dir, "libjvm.so")
		writeFile(t, p, "old")
		m := mapFile(t, p)
		if err := os.Link(p, filepath.Join(dir, "old.so")); err != nil {
			t.Fatal(err)
		}
		writeFile(t, p+".new", "new")
		if err := os.Rename(p+".new", p); err != nil {
			t.Fatal(err)
		}
		open(t, m, "old", "/map_files/")
	})
	t.Run("chroot", func(t *testing.T) {
		// A chroot-entered process's maps show the host's full path, absent under its root.
		p := filepath.Join(dir, "chrooted.so")
		writeFile(t, p, "inside")
		m := mapFile(t, p)
		m.Path = "/var/lib/no-such-container-root" + p
		open(t, m, "inside", "/map_files/")
	})
	t.Run("fifo", func(t *testing.T) {
		// A FIFO planted at the path must not block the reader nor be read.
		p := filepath.Join(dir, "real.so")
		writeFile(t, p, "real")
		m := mapFile(t, p)
		fifo := filepath.Join(dir, "fifo.so")
		if err := unix.Mkfifo(fifo, 0o644); err != nil {
			t.Fatal(err)
		}
		m.Path = fifo
		open(t, m, "real", "/map_files/")
	})
	t.Run("symlink", func(t *testing.T) {
		// A link in the path (put there after the mapping: maps paths have none) is never followed.
		real := filepath.Join(dir, "real")
		if err := os.Mkdir(real, 0o755); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(real, "lib.so")
		writeFile(t, p, "linked")
		m := mapFile(t, p)
		if err := os.Symlink(real, filepath.Join(dir, "link")); err != nil {
			t.Fatal(err)
		}
		m.Path = filepath.Join(dir, "link", "lib.so")
		open(t, m, "linked", "/map_files/")
	})
	t.Run("gone", func(t *testing.T) {
		p := filepath.Join(dir, "unmapped.so")
		writeFile(t, p, "x")
		m := mapFile(t, p)
		m.Path = "/no/such/file.so"
		m.Start, m.End = 0x1000, 0x2000 // no mapping there
		_, err := rootfs.OpenMapped(procfs.Default, pid, m)
		if !errors.Is(err, os.ErrNotExist) {
			t.Errorf("err = %v, want one wrapping ErrNotExist", err)
		}
	})
	t.Run("anonymous", func(t *testing.T) {
		if _, err := rootfs.OpenMapped(procfs.Default, pid, procfs.Mapping{Start: 1, End: 2, Path: "[heap]"}); err == nil {
			t.Error("no error for [heap]")
		}
	})
}
