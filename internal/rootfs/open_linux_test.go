package rootfs_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/internal/rootfs"
)

// TestReadHead: the start of a regular file inside a root, whole when shorter than the buffer; links
// resolved inside the root, as its process would; a FIFO or a directory refused before any read (a FIFO
// read would block).
func TestReadHead(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	write := func(dir, name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(root, "release", `JAVA_VERSION="17.0.15"`+"\n")
	write(outside, "release", `JAVA_VERSION="8"`+"\n")
	write(root, "long", string(make([]byte, 3000)))
	// An absolute link: inside the root it names the root's file, never the caller's.
	if err := os.Symlink("/release", filepath.Join(root, "abs")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "release"), filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}

	buf := make([]byte, 1024)
	for _, c := range []struct {
		path, want string
		n          int
	}{
		{path: "/release", want: `JAVA_VERSION="17.0.15"` + "\n"},
		{path: "/abs", want: `JAVA_VERSION="17.0.15"` + "\n"},
		{path: "/long", n: len(buf)},
	} {
		n, err := rootfs.ReadHead(root, c.path, buf)
		switch {
		case err != nil:
			t.Errorf("%s: %v", c.path, err)
		case c.want != "" && string(buf[:n]) != c.want:
			t.Errorf("%s: read %q, want %q", c.path, buf[:n], c.want)
		case c.n != 0 && n != c.n:
			t.Errorf("%s: read %d bytes, want %d", c.path, n, c.n)
		}
	}
	// A link out of the root resolves inside it, where there is no such file.
	if n, err := rootfs.ReadHead(root, "/out", buf); err == nil {
		t.Errorf("/out: read %q from outside the root", buf[:n])
	}
	for _, p := range []string{"/fifo", "/dir"} {
		if _, err := rootfs.ReadHead(root, p, buf); !errors.Is(err, rootfs.ErrNotRegular) {
			t.Errorf("%s: %v, want ErrNotRegular", p, err)
		}
	}
}
