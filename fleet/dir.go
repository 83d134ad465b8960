package fleet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/jvmkit/jvmkit/internal/rootfs"
)

// Dir writes each window as a gzipped pprof file into a directory, for hosts without a backend:
// "jvmkit-<end time, UTC>-<service>-<pid>.pb.gz", the target's labels in the profile's comments. The
// directory's jvmkit files are bounded by MaxBytes: the oldest are removed first. Files are written
// under a new random temporary name (O_EXCL) and renamed into place, so a link planted in
// the directory is never written through and a reader never sees half a file.
type Dir struct {
	Path string
	// MaxBytes bounds the total size of the directory's jvmkit-*.pb.gz files; default 256 MiB.
	MaxBytes int64
}

// Name is "dir".
func (d *Dir) Name() string { return "dir" }

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// FileName is the name a window is written under.
func FileName(w *Window) string {
	svc := unsafeName.ReplaceAllString(w.Target.Service, "_")
	if len(svc) > 64 {
		svc = svc[:64]
	}
	return "jvmkit-" + w.End.UTC().Format("20060102T150405.000Z") + "-" + svc + "-" + strconv.Itoa(w.Target.PID) + ".pb.gz"
}

// Export writes the windows, then removes the oldest files beyond MaxBytes.
func (d *Dir) Export(_ context.Context, ws []*Window) error {
	if err := d.check(); err != nil {
		return err
	}
	for _, w := range ws {
		if err := writeNew(filepath.Join(d.Path, FileName(w)), w.Pprof); err != nil {
			return err
		}
	}
	return d.rotate()
}

// check makes the directory if it is missing and refuses one that is a link or not a directory.
func (d *Dir) check() error {
	fi, err := os.Lstat(d.Path)
	if errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(d.Path, 0o750); err != nil {
			return fmt.Errorf("profile directory: %w", err)
		}
		fi, err = os.Lstat(d.Path)
	}
	if err != nil {
		return fmt.Errorf("profile directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%w: profile directory %s is not a directory (a link?): give a real directory", ErrRejected, d.Path)
	}
	// Files are written, renamed and removed by name in it: nobody but root and the agent's user may be
	// able to change the directory or any directory on the way to it, or they could swap it for a link
	// (the agent would write and remove files elsewhere) or fill it so that rotation removes the profiles.
	pr := rootfs.NewProcess(os.Getpid(), os.Geteuid(), os.Getegid(), nil, "")
	p, err := pr.Prepare(context.Background(), d.Path, rootfs.PrivateDir, 0)
	if errors.Is(err, errors.ErrUnsupported) {
		return nil
	}
	if errors.Is(err, rootfs.ErrUnsafe) {
		return fmt.Errorf("%w: profile directory %s: the agent writes, renames and removes files there, so it and every directory above it must be changeable by root and uid %d only: %w",
			ErrRejected, d.Path, os.Geteuid(), err)
	}
	if err != nil {
		return fmt.Errorf("%w: profile directory: %w", ErrRejected, err)
	}
	p.Close()
	return nil
}

func writeNew(path string, b []byte) error {
	// O_EXCL fails on any existing name, a link included: nothing is written through a link.
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+"."+uuid()[:8]+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return fmt.Errorf("write profile: %w", err)
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write profile: %w", err)
	}
	return nil
}

// rotate removes the oldest jvmkit files (names sort by time) until the rest fit in MaxBytes.
func (d *Dir) rotate() error {
	max := d.MaxBytes
	if max <= 0 {
		max = 256 << 20
	}
	ents, err := os.ReadDir(d.Path)
	if err != nil {
		return fmt.Errorf("profile directory: %w", err)
	}
	type file struct {
		name string
		size int64
	}
	var files []file
	var total int64
	for _, e := range ents {
		n := e.Name()
		if !e.Type().IsRegular() || !strings.HasPrefix(n, "jvmkit-") || !strings.HasSuffix(n, ".pb.gz") {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		files = append(files, file{n, fi.Size()})
		total += fi.Size()
	}
	slices.SortFunc(files, func(a, b file) int { return strings.Compare(a.name, b.name) })
	for len(files) > 1 && total > max {
		if err := os.Remove(filepath.Join(d.Path, files[0].name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("rotate profiles: %w", err)
		}
		total -= files[0].size
		files = files[1:]
	}
	return nil
}
