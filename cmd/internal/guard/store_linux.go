package guard

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/internal/procerr"
	"github.com/jvmkit/jvmkit/internal/procfs"
)

// DefaultDir is where jvmkit keeps its records: on tmpfs, emptied at boot like the processes the
// records name.
const DefaultDir = "/run/jvmkit"

// lockWait bounds the wait for another jvmkit's lock: it holds it for a few file operations and a
// one-byte write, so a longer wait means it is stopped.
const lockWait = 10 * time.Second

// Store is the directory of records, one file per JVM, read and written under one lock.
type Store struct {
	dir string
	fd  int // O_PATH of dir, checked once: every file is opened relative to it, never by path
}

// OpenStore opens (creating it if needed) the record directory dir. It must be a real directory owned by
// the effective uid and writable by no one else: records decide what gets written into JVMs.
func OpenStore(dir string) (*Store, error) {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("guard: create %s: %w", dir, err)
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("guard: open %s: %w (it must be a directory, not a link)", dir, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("guard: stat %s: %w", dir, err)
	}
	if st.Uid != uint32(os.Geteuid()) || st.Mode&0o022 != 0 {
		unix.Close(fd)
		return nil, fmt.Errorf("%w: %s is owned by uid %d with mode %#o: remove it (jvmkit creates it owned by uid %d, mode 0700)",
			procerr.ErrPermission, dir, st.Uid, st.Mode&0o7777, os.Geteuid())
	}
	return &Store{dir: dir, fd: fd}, nil
}

// Dir returns the directory.
func (s *Store) Dir() string { return s.dir }

// Close releases the directory.
func (s *Store) Close() error {
	if s == nil || s.fd < 0 {
		return nil
	}
	err := unix.Close(s.fd)
	s.fd = -1
	return err
}

// lock takes the store's lock (flock on its lock file, each call with its own open file description,
// so that goroutines of one process exclude each other too); the returned function releases it.
func (s *Store) lock(ctx context.Context) (func(), error) {
	fd, err := unix.Openat(s.fd, "lock", unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("guard: open lock in %s: %w", s.dir, err)
	}
	deadline := time.Now().Add(lockWait)
	for {
		err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { unix.Close(fd) }, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) || time.Now().After(deadline) {
			unix.Close(fd)
			if err == nil || errors.Is(err, unix.EWOULDBLOCK) {
				return nil, fmt.Errorf("guard: %s/lock is held by another jvmkit for more than %v (is it stopped?)", s.dir, lockWait)
			}
			return nil, fmt.Errorf("guard: lock %s: %w", s.dir, err)
		}
		select {
		case <-ctx.Done():
			unix.Close(fd)
			return nil, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// Read returns the record of jvm (an empty one if there is none), without the lock: records are
// replaced by rename, so a reader sees a whole one.
func (s *Store) Read(jvm Process) (*Record, error) {
	r, err := s.read(jvm)
	if err != nil {
		return nil, err
	}
	return r, nil
}

func (s *Store) read(jvm Process) (*Record, error) {
	name := fileName(jvm)
	fd, err := unix.Openat(s.fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if errors.Is(err, unix.ENOENT) {
		return &Record{Schema: Schema, JVM: jvm}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("guard: open %s/%s: %w", s.dir, name, err)
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("guard: stat %s/%s: %w", s.dir, name, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Uid != uint32(os.Geteuid()) {
		return nil, fmt.Errorf("%w: %s/%s is not a regular file owned by uid %d", procerr.ErrPermission, s.dir, name, os.Geteuid())
	}
	b, err := io.ReadAll(io.LimitReader(f, maxRecord+1))
	if err != nil {
		return nil, fmt.Errorf("guard: read %s/%s: %w", s.dir, name, err)
	}
	r, err := Parse(b, jvm)
	if err != nil {
		return nil, fmt.Errorf("%s/%s: %w", s.dir, name, err)
	}
	return r, nil
}

// write replaces jvm's record with r (removes it when r holds nothing): a fresh file created O_EXCL
// beside it, synced, renamed over it.
func (s *Store) write(r *Record) error {
	name := fileName(r.JVM)
	if len(r.Changes) == 0 && len(r.Log) == 0 {
		if err := unix.Unlinkat(s.fd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("guard: remove %s/%s: %w", s.dir, name, err)
		}
		return nil
	}
	b, err := r.Marshal()
	if err != nil {
		return err
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := "." + name + "." + hex.EncodeToString(rnd[:])
	fd, err := unix.Openat(s.fd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("guard: create %s/%s: %w", s.dir, tmp, err)
	}
	f := os.NewFile(uintptr(fd), tmp)
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(s.fd, tmp, s.fd, name)
	}
	if err != nil {
		_ = unix.Unlinkat(s.fd, tmp, 0)
		return fmt.Errorf("guard: write %s/%s: %w", s.dir, name, err)
	}
	return nil
}

// Update runs fn on jvm's record under the store's lock and writes what fn leaves (nothing: the file is
// removed). A record that cannot be parsed is an error: nothing is overwritten that might still say
// what to undo. Records of processes that are gone are removed on the way.
func (s *Store) Update(ctx context.Context, jvm Process, fn func(r *Record) error) error {
	unlock, err := s.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	s.sweep(jvm)
	r, err := s.read(jvm)
	if err != nil {
		return err
	}
	if err := fn(r); err != nil {
		return err
	}
	return s.write(r)
}

// sweep removes the records of JVMs that are gone (what they changed went with them) and temporary files
// left by a writer that was killed. Called under the lock.
func (s *Store) sweep(keep Process) {
	fd, err := unix.Openat(s.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	d := os.NewFile(uintptr(fd), s.dir)
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	for _, n := range names {
		if len(n) > 0 && n[0] == '.' {
			_ = unix.Unlinkat(s.fd, n, 0) // a writer holds the lock while its temporary file exists
			continue
		}
		if p, ok := parseFileName(n); ok && p != keep && !Alive(p) {
			_ = unix.Unlinkat(s.fd, n, 0)
		}
	}
}

// Self is the calling process.
func Self() (Process, error) { return Identify(os.Getpid()) }

// Identify returns the identity of process pid.
func Identify(pid int) (Process, error) {
	_, start, err := procfs.Default.Stat(pid)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return Process{}, fmt.Errorf("%w: %d", procerr.ErrProcessGone, pid)
		}
		return Process{}, fmt.Errorf("guard: identify process %d: %w", pid, err)
	}
	return Process{PID: pid, Start: start}, nil
}

// Alive tells whether p still runs: its pid exists, with the same start time, and is not a zombie.
func Alive(p Process) bool {
	state, start, err := procfs.Default.Stat(p.PID)
	return err == nil && start == p.Start && state != 'Z' && state != 'X'
}

// dropDead forgets the holders that are gone.
func (c *Change) dropDead() {
	live := c.Holders[:0]
	for _, h := range c.Holders {
		if Alive(h.Process) {
			live = append(live, h)
		}
	}
	c.Holders = live
}

// Held tells whether a live command holds c.
func (c *Change) Held() bool {
	for _, h := range c.Holders {
		if Alive(h.Process) {
			return true
		}
	}
	return false
}

// OpenStoreIfExists opens dir like OpenStore, but returns nil, nil when it does not exist: for readers,
// which have nothing to look at then.
func OpenStoreIfExists(dir string) (*Store, error) {
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return OpenStore(dir)
}
