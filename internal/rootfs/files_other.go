//go:build !linux

package rootfs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Open opens a file inside a process's root. It needs Linux's openat2: elsewhere it fails with
// errors.ErrUnsupported.
func Open(root, path string, _ int, _ uint64) (int, error) {
	return -1, fmt.Errorf("open %s under %s: %w", path, root, errors.ErrUnsupported)
}

// OpenRegular opens a regular file inside a process's root. Only Linux is supported.
func OpenRegular(root, path, _ string) (*os.File, error) {
	return nil, fmt.Errorf("open %s under %s: %w", path, root, errors.ErrUnsupported)
}

// ReadHead reads the start of a file inside a root. Only Linux is supported.
func ReadHead(root, path string, _ []byte) (int, error) {
	return 0, fmt.Errorf("read %s under %s: %w", path, root, errors.ErrUnsupported)
}

// Prepared is a path made safe for another process's write. Only Linux is supported.
type Prepared struct {
	Path, Dir, Name, Note string
	Mode                  Mode
	Replaced              bool
}

// Prepare makes a path safe for another process's write. Only Linux is supported.
func (pr *Process) Prepare(_ context.Context, p string, _ Mode, _ uint32) (*Prepared, error) {
	return nil, fmt.Errorf("prepare %s: %w", p, errors.ErrUnsupported)
}

// HostPath is where the caller finds the file.
func (p *Prepared) HostPath() string { return p.Path }

// File is the file Prepare made; never any here.
func (p *Prepared) File() *os.File { return nil }

// Close releases nothing here.
func (p *Prepared) Close() {}

// Written checks nothing here.
func (p *Prepared) Written() error { return errors.ErrUnsupported }

// Result opens nothing here.
func (p *Prepared) Result() (*os.File, error) { return nil, errors.ErrUnsupported }

// Still checks nothing here.
func (p *Prepared) Still() error { return errors.ErrUnsupported }

// Remove removes nothing here.
func (p *Prepared) Remove() bool { return false }

// Discard removes the file Prepare made for a write that did not happen. Only Linux is supported.
func (p *Prepared) Discard() bool { return false }

// Lock takes a lock file's lock. Only Linux is supported.
func Lock(_ context.Context, _ int, dir, name string, _, _ int) (*os.File, error) {
	return nil, fmt.Errorf("lock %s/%s: %w", dir, name, errors.ErrUnsupported)
}

// WriteFile writes a file atomically. Only Linux is supported.
func WriteFile(_ int, dir, name string, _ []byte, _, _ int, _ uint32) error {
	return fmt.Errorf("write %s/%s: %w", dir, name, errors.ErrUnsupported)
}

// WriteNewFile is not supported elsewhere than on Linux.
func WriteNewFile(_ int, dir, name string, _ []byte, _, _ int, _ uint32) error {
	return fmt.Errorf("write %s/%s: %w", dir, name, errors.ErrUnsupported)
}

// NewProcess describes a process. Only Linux is supported: the result opens nothing.
func NewProcess(pid, uid, gid int, groups []int, cwdPath string) *Process {
	return &Process{UID: uid, GID: gid, Groups: groups, CwdPath: cwdPath}
}

// WriteOutput writes a file of the caller's with write; elsewhere than on Linux, plainly.
func WriteOutput(path string, perm uint32, write func(io.Writer) error) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, os.FileMode(perm))
	if err != nil {
		return err
	}
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// CheckOutput checks that path's directory exists and that nothing but a regular file sits at path.
func CheckOutput(path string) error {
	if fi, err := os.Stat(filepath.Dir(path)); err != nil {
		return err
	} else if !fi.IsDir() {
		return fmt.Errorf("write %s: %s is not a directory", path, filepath.Dir(path))
	}
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		return fmt.Errorf("write %s: not a regular file", path)
	}
	return nil
}

// RemoveSame removes path if it still is the file fi describes.
func RemoveSame(path string, fi os.FileInfo) error {
	now, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if !os.SameFile(now, fi) {
		return fmt.Errorf("remove %s: it is not the file created there any more", path)
	}
	return os.Remove(path)
}

// MakePrivateDir is not supported on this platform.
func (pr *Process) MakePrivateDir(parent, name string) (string, error) {
	return "", errors.ErrUnsupported
}

// CheckTrusted is not supported on this platform.
func (pr *Process) CheckTrusted(p string) error { return errors.ErrUnsupported }
