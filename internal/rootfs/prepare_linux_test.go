package rootfs_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/internal/rootfs"
	"github.com/jvmkit/jvmkit/internal/testutil"
)

// The writer in these tests is uid 1000; uid 65534 is the other user who plants things. The tests run
// as root and chown what they create, which leaves the same files a real other user would.
const (
	writerUID = 1000
	otherUID  = 65534
)

// world is a directory tree for one test: a private root-owned base with a sticky shared directory (like
// /tmp), a shared directory without the sticky bit, and a victim file that must never change.
type world struct {
	base, sticky, open, victim string
	pr                         *rootfs.Process
}

func newWorld(t *testing.T) *world {
	t.Helper()
	testutil.MustHaveRoot(t)
	base := t.TempDir()
	w := &world{base: base, sticky: filepath.Join(base, "tmp"), open: filepath.Join(base, "open"), victim: filepath.Join(base, "victim")}
	mkdir(t, w.sticky, 0o1777, 0)
	mkdir(t, w.open, 0o777, 0)
	if err := os.WriteFile(w.victim, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.pr = &rootfs.Process{Root: "/", Cwd: base, CwdPath: base, UID: writerUID, GID: writerUID}
	return w
}

func mkdir(t *testing.T, dir string, mode uint32, uid int) {
	t.Helper()
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	// Chmod after Mkdir: the umask would take the shared bits away.
	if err := unix.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(dir, uid, uid); err != nil {
		t.Fatal(err)
	}
}

// plant puts kind at path as the other user.
func (w *world) plant(t *testing.T, path, kind string) {
	t.Helper()
	var err error
	switch kind {
	case "symlink":
		err = os.Symlink(w.victim, path)
	case "hardlink":
		err = os.Link(w.victim, path)
	case "fifo":
		err = unix.Mkfifo(path, 0o666)
	case "file":
		err = os.WriteFile(path, []byte("other user's"), 0o666)
	case "dir":
		err = os.Mkdir(path, 0o777)
	default:
		t.Fatalf("plant %s", kind)
	}
	if err == nil && kind != "hardlink" {
		err = os.Lchown(path, otherUID, otherUID)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func (w *world) victimIntact(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile(w.victim)
	if err != nil || string(b) != "precious" {
		t.Errorf("victim changed: %q, %v", b, err)
	}
}

// writeAsJVM writes through the name the way JDK 17's Compiler.perfmap does (fopen "w": O_CREAT|O_TRUNC,
// following links).
func writeAsJVM(t *testing.T, path, data string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(data); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func TestPrepareReplacesPlanted(t *testing.T) {
	for _, kind := range []string{"symlink", "hardlink", "fifo", "file"} {
		t.Run(kind, func(t *testing.T) {
			w := newWorld(t)
			name := filepath.Join(w.sticky, "perf-1.map")
			w.plant(t, name, kind)
			p, err := w.pr.Prepare(context.Background(), name, rootfs.Follow, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			if !strings.Contains(p.Note, "uid") || !strings.Contains(p.Note, "replaced") {
				t.Errorf("note %q does not say what was replaced", p.Note)
			}
			var st unix.Stat_t
			if err := unix.Lstat(name, &st); err != nil {
				t.Fatal(err)
			}
			if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Uid != writerUID || st.Nlink != 1 || st.Size != 0 {
				t.Errorf("prepared file: mode %o uid %d links %d size %d; want an empty regular file of uid %d", st.Mode, st.Uid, st.Nlink, st.Size, writerUID)
			}
			if err := p.Written(); !errors.Is(err, rootfs.ErrNotWritten) {
				t.Errorf("Written before the write: %v, want ErrNotWritten", err)
			}
			writeAsJVM(t, name, "0x1 0x2 f\n")
			if err := p.Written(); err != nil {
				t.Errorf("Written after the write: %v", err)
			}
			data, err := rootfs.ReadStable(p.File())
			if err != nil || string(data) != "0x1 0x2 f\n" {
				t.Errorf("read back %q, %v", data, err)
			}
			w.victimIntact(t)
		})
	}
}

func TestPrepareRefuses(t *testing.T) {
	w := newWorld(t)
	evilDir := filepath.Join(w.sticky, "evil")
	w.plant(t, evilDir, "dir")
	evilLink := filepath.Join(w.sticky, "evil-link")
	if err := os.Symlink(w.base, evilLink); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(evilLink, otherUID, otherUID); err != nil {
		t.Fatal(err)
	}
	w.plant(t, filepath.Join(w.sticky, "dir-in-the-way"), "dir")
	// Root's directories that the writer may not create files in, as a bind mount in the writer's
	// world may show them (MayCreate): nothing is made there for it, and it is not asked to make anything.
	rootDir, rootSticky := filepath.Join(w.base, "etc"), filepath.Join(w.base, "group-tmp")
	mkdir(t, rootDir, 0o755, 0)
	mkdir(t, rootSticky, 0o1770, 0)
	cases := []struct {
		path string
		mode rootfs.Mode
		want string
	}{
		{filepath.Join(w.open, "x.jfr"), rootfs.Follow, "not sticky"},
		{filepath.Join(evilDir, "x.jfr"), rootfs.Follow, "directory owned by uid 65534 in sticky"},
		{filepath.Join(evilDir, "x.hprof"), rootfs.Exclusive, "directory owned by uid 65534 in sticky"},
		{filepath.Join(evilLink, "x.jfr"), rootfs.Follow, "symbolic link owned by uid 65534"},
		{filepath.Join(w.sticky, "x.log"), rootfs.Private, "every user can write"},
		{w.sticky, rootfs.PrivateDir, "every user can write"},
		{filepath.Join(w.sticky, "dir-in-the-way"), rootfs.Follow, "directory owned by uid 65534"},
		{filepath.Join(rootDir, "perf-1.map"), rootfs.Fresh, "uid 1000 may not create files in"},
		{filepath.Join(rootDir, "x.jfr"), rootfs.Follow, "uid 1000 may not create files in"},
		{filepath.Join(rootDir, "x.hprof"), rootfs.Exclusive, "uid 1000 may not create files in"},
		{filepath.Join(rootSticky, "x.jfr"), rootfs.Follow, "uid 1000 may not create files in"},
		{filepath.Join(rootSticky, "x.log"), rootfs.Append, "uid 1000 may not create files in"},
	}
	for _, c := range cases {
		p, err := w.pr.Prepare(context.Background(), c.path, c.mode, 0o644)
		if err == nil {
			p.Close()
			t.Errorf("Prepare(%s, %d): nil error, want ErrUnsafe", c.path, c.mode)
			continue
		}
		if !errors.Is(err, rootfs.ErrUnsafe) || !errors.Is(err, os.ErrPermission) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Prepare(%s, %d): %v; want ErrUnsafe saying %q", c.path, c.mode, err, c.want)
		}
	}
	for _, d := range []string{rootDir, rootSticky} {
		if names, err := os.ReadDir(d); err != nil || len(names) != 0 {
			t.Errorf("%s: %v %v; want it empty", d, names, err)
		}
	}
	w.victimIntact(t)
}

func TestPrepareAllows(t *testing.T) {
	w := newWorld(t)
	private := filepath.Join(w.base, "private")
	mkdir(t, private, 0o755, writerUID)
	trusted := filepath.Join(w.base, "link-to-private")
	if err := os.Symlink("private", trusted); err != nil {
		t.Fatal(err)
	}
	own := filepath.Join(w.sticky, "own.log")
	if err := os.WriteFile(own, []byte("old lines\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(own, writerUID, writerUID); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		path, wantPath string
		mode           rootfs.Mode
		made           bool // a file was made for the writer
	}{
		{filepath.Join(private, "x.jfr"), filepath.Join(private, "x.jfr"), rootfs.Follow, false},
		{filepath.Join(trusted, "x.jfr"), filepath.Join(private, "x.jfr"), rootfs.Follow, false},
		{"private/../private/x.jfr", filepath.Join(private, "x.jfr"), rootfs.Follow, false},
		{filepath.Join(w.sticky, "new.jfr"), filepath.Join(w.sticky, "new.jfr"), rootfs.Follow, true},
		{filepath.Join(w.open, "x.hprof"), filepath.Join(w.open, "x.hprof"), rootfs.Exclusive, false},
		{filepath.Join(private, "x.log"), filepath.Join(private, "x.log"), rootfs.Private, false},
		{private, private, rootfs.PrivateDir, false},
		{own, own, rootfs.Append, true},
		{trusted, private, rootfs.FollowOrDir, false},
	}
	for _, c := range cases {
		p, err := w.pr.Prepare(context.Background(), c.path, c.mode, 0o644)
		if err != nil {
			t.Errorf("Prepare(%s, %d): %v", c.path, c.mode, err)
			continue
		}
		if p.Path != c.wantPath || (p.File() != nil) != c.made || p.Note != "" {
			t.Errorf("Prepare(%s, %d): path %s, made %v, note %q; want %s, %v, no note", c.path, c.mode, p.Path, p.File() != nil, p.Note, c.wantPath, c.made)
		}
		p.Close()
	}
	if b, _ := os.ReadFile(own); string(b) != "old lines\n" {
		t.Errorf("Append replaced the writer's own log: %q", b)
	}
}

func TestWrittenElsewhere(t *testing.T) {
	w := newWorld(t)
	name := filepath.Join(w.sticky, "x.jfr")
	p, err := w.pr.Prepare(context.Background(), name, rootfs.Follow, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	// Someone with the right to (root) swapped the file: the write did not go into the prepared one.
	if err := os.Remove(name); err != nil {
		t.Fatal(err)
	}
	writeAsJVM(t, name, "data")
	if err := p.Written(); err == nil || errors.Is(err, rootfs.ErrNotWritten) {
		t.Errorf("Written after a swap: %v; want an error saying the file was replaced", err)
	}
}

func TestLock(t *testing.T) {
	w := newWorld(t)
	dfd, err := unix.Open(w.sticky, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dfd)
	name := ".perf-1.map.lock"
	w.plant(t, filepath.Join(w.sticky, name), "symlink")
	ctx := context.Background()
	a, err := rootfs.Lock(ctx, dfd, w.sticky, name, writerUID, writerUID)
	if err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(w.sticky, name), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Uid != writerUID || st.Mode&0o777 != 0o600 {
		t.Errorf("lock file: %v, mode %o uid %d; want a regular 0600 file of uid %d", err, st.Mode, st.Uid, writerUID)
	}
	w.victimIntact(t)
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if b, err := rootfs.Lock(short, dfd, w.sticky, name, writerUID, writerUID); err == nil {
		b.Close()
		t.Fatal("a second lock while the first is held")
	}
	got := make(chan error, 1)
	go func() {
		b, err := rootfs.Lock(ctx, dfd, w.sticky, name, writerUID, writerUID)
		if err == nil {
			b.Close()
		}
		got <- err
	}()
	a.Close()
	select {
	case err := <-got:
		if err != nil {
			t.Errorf("lock after release: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the lock was not handed over within 10 s")
	}
}

func TestRemoveStale(t *testing.T) {
	w := newWorld(t)
	dfd, err := unix.Open(w.sticky, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dfd)
	live, err := rootfs.CreateTemp(dfd, w.sticky, ".x.", ".tmp", 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Discard()
	dead := filepath.Join(w.sticky, ".x.0123456789abcdef.tmp") // left by a writer that was killed
	if err := os.WriteFile(dead, []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	foreign := filepath.Join(w.sticky, ".x.fedcba9876543210.tmp")
	w.plant(t, foreign, "symlink")
	removed := rootfs.RemoveStale(dfd, ".x.", ".tmp")
	if len(removed) != 1 || removed[0] != filepath.Base(dead) {
		t.Errorf("removed %q, want only %s", removed, filepath.Base(dead))
	}
	for _, p := range []string{filepath.Join(w.sticky, live.Name), foreign} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

func TestWriteOutput(t *testing.T) {
	w := newWorld(t)
	out := filepath.Join(w.sticky, "profile.svg")
	w.plant(t, out, "symlink")
	err := rootfs.WriteOutput(out, 0o644, func(wr io.Writer) error { _, err := io.WriteString(wr, "<svg/>"); return err })
	if !errors.Is(err, rootfs.ErrSymlink) {
		t.Errorf("WriteOutput over a link: %v, want ErrSymlink", err)
	}
	w.victimIntact(t)
	other := filepath.Join(w.sticky, "other.svg")
	w.plant(t, other, "file")
	if err := rootfs.WriteOutput(other, 0o644, func(wr io.Writer) error { _, err := io.WriteString(wr, "<svg/>"); return err }); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(other, &st); err != nil || st.Uid != 0 || st.Mode&0o777 != 0o644 {
		t.Errorf("%s: %v uid %d mode %o; want a new file of ours (the other user's file is not written into)", other, err, st.Uid, st.Mode)
	}
	failing := filepath.Join(w.sticky, "failing.svg")
	if err := rootfs.WriteOutput(failing, 0o644, func(io.Writer) error { return io.ErrUnexpectedEOF }); err == nil {
		t.Error("WriteOutput: a failed write reported no error")
	}
	if left, _ := filepath.Glob(filepath.Join(w.sticky, ".failing.svg.*")); len(left) > 0 {
		t.Errorf("left behind: %q", left)
	}
}

// WriteNewFile takes a free name and leaves anything already at it (a file, a link) as it was; WriteFile
// replaces it, a link included, without following it.
func TestWriteNewFile(t *testing.T) {
	w := newWorld(t)
	dir := t.TempDir()
	dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dfd)
	if err := rootfs.WriteNewFile(dfd, dir, "lib.so", []byte("first"), -1, -1, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := rootfs.WriteNewFile(dfd, dir, "lib.so", []byte("second"), -1, -1, 0o644); !errors.Is(err, fs.ErrExist) {
		t.Errorf("WriteNewFile over a file: %v, want fs.ErrExist", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "lib.so")); string(b) != "first" {
		t.Errorf("the first file now holds %q", b)
	}
	link := filepath.Join(dir, "link.so")
	if err := os.Symlink(w.victim, link); err != nil {
		t.Fatal(err)
	}
	if err := rootfs.WriteNewFile(dfd, dir, "link.so", []byte("x"), -1, -1, 0o644); !errors.Is(err, fs.ErrExist) {
		t.Errorf("WriteNewFile over a link: %v, want fs.ErrExist", err)
	}
	w.victimIntact(t)
	if err := rootfs.WriteFile(dfd, dir, "link.so", []byte("x"), -1, -1, 0o644); err != nil {
		t.Fatal(err)
	}
	w.victimIntact(t)
	if fi, err := os.Lstat(link); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("link.so after WriteFile: %v %v, want a regular file", fi, err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*.tmp")); len(left) > 0 {
		t.Errorf("left behind: %q", left)
	}
}

// TestKeepAndDiscard: in sticky /tmp, the writer's own file (or root's) at a Follow name is kept, not
// replaced, so that a command that fails before writing leaves it as it was; Written tells a kept file
// the writer did not touch from one it wrote. A file Prepare made and nobody wrote is removed by
// Discard; a kept one, or one written, stays.
func TestKeepAndDiscard(t *testing.T) {
	w := newWorld(t)
	own := filepath.Join(w.sticky, "own.jfr")
	if err := os.WriteFile(own, []byte("last week's recording"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(own, writerUID, writerUID); err != nil {
		t.Fatal(err)
	}
	p, err := w.pr.Prepare(context.Background(), own, rootfs.Follow, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.File() == nil || p.Replaced || p.Note != "" {
		t.Errorf("own file: made %v, replaced %v, note %q; want it kept without a note", p.File() != nil, p.Replaced, p.Note)
	}
	if err := p.Written(); !errors.Is(err, rootfs.ErrNotWritten) {
		t.Errorf("Written on a kept file nobody wrote: %v; want ErrNotWritten", err)
	}
	if p.Discard() {
		t.Error("Discard removed a file that was there before")
	}
	if b, err := os.ReadFile(own); err != nil || string(b) != "last week's recording" {
		t.Errorf("kept file changed: %q, %v", b, err)
	}
	writeAsJVM(t, own, "new")
	if err := p.Written(); err != nil {
		t.Errorf("Written after the write into the kept file: %v", err)
	}

	// Another user's file is still replaced (they could swap it for a link), and so is a file with a
	// second link; root's file too (the writer, uid 1000, could not write it); and an empty file of the
	// writer's, which may be another run's made a moment ago for the same name: each run has its own,
	// and Discard leaves the one it put where something was.
	for _, kind := range []string{"file", "hardlink", "root", "empty"} {
		name := filepath.Join(w.sticky, "planted-"+kind)
		switch kind {
		case "root":
			if err := os.WriteFile(name, []byte("root's"), 0o644); err != nil {
				t.Fatal(err)
			}
		case "empty":
			if err := os.WriteFile(name, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(name, writerUID, writerUID); err != nil {
				t.Fatal(err)
			}
		default:
			w.plant(t, name, kind)
		}
		q, err := w.pr.Prepare(context.Background(), name, rootfs.Follow, 0o644)
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		if !q.Replaced {
			t.Errorf("%s: kept, want replaced", kind)
		}
		if q.Discard() {
			t.Errorf("%s: Discard removed the file put where something was", kind)
		}
		q.Close()
	}
	w.victimIntact(t)

	fresh := filepath.Join(w.sticky, "failed.jfr")
	q, err := w.pr.Prepare(context.Background(), fresh, rootfs.Follow, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	var st unix.Stat_t
	if err := unix.Stat(fresh, &st); err != nil || st.Mode&0o777 != 0o600 || st.Uid != writerUID {
		t.Errorf("made file: %v, mode %o, uid %d; want 0600 of uid %d", err, st.Mode&0o777, st.Uid, writerUID)
	}
	if !q.Discard() {
		t.Error("Discard left the empty file it made")
	}
	if _, err := os.Lstat(fresh); err == nil {
		t.Error("the empty file is still there")
	}
	written := filepath.Join(w.sticky, "written.jfr")
	r, err := w.pr.Prepare(context.Background(), written, rootfs.Follow, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	writeAsJVM(t, written, "data")
	if r.Discard() {
		t.Error("Discard removed a file the writer wrote")
	}
}

// TestPrepareSameName: two runs preparing one name in a sticky directory take turns (the name's lock),
// so that the second keeps what the first had written instead of replacing the first's file under it;
// the lock file goes with the last Close.
func TestPrepareSameName(t *testing.T) {
	w := newWorld(t)
	name := filepath.Join(w.sticky, "same.jfr")
	p, err := w.pr.Prepare(context.Background(), name, rootfs.Follow, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	waiting, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if q, err := w.pr.Prepare(waiting, name, rootfs.Follow, 0o644); err == nil || !errors.Is(err, context.DeadlineExceeded) {
		if q != nil {
			q.Close()
		}
		t.Fatalf("a second Prepare of the name while the first is open: %v, want it to wait (and its context to end it)", err)
	}
	writeAsJVM(t, name, "first")
	if err := p.Written(); err != nil {
		t.Fatalf("the first run's file: %v", err)
	}
	p.Close()
	q, err := w.pr.Prepare(context.Background(), name, rootfs.Follow, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if q.Replaced || q.File() == nil {
		t.Errorf("the second run: replaced %v, file %v; want the first's written file kept", q.Replaced, q.File() != nil)
	}
	writeAsJVM(t, name, "second")
	if err := q.Written(); err != nil {
		t.Errorf("the second run's write: %v", err)
	}
	q.Close()
	if _, err := os.Lstat(filepath.Join(w.sticky, ".jvmkit-same.jfr.lock")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the name's lock file after both runs: %v, want it gone", err)
	}
}
