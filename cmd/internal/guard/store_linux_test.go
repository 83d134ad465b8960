package guard

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/jvmkit/jvmkit/internal/procerr"
)

func TestStoreRefusesUnsafeDirs(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "link")
	if err := os.Symlink(t.TempDir(), link); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenStore(link); err == nil {
		t.Error("OpenStore follows a link")
	}
	open := filepath.Join(dir, "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenStore(open); !errors.Is(err, procerr.ErrPermission) {
		t.Errorf("OpenStore of a world-writable directory: %v", err)
	}
}

func TestStoreUpdate(t *testing.T) {
	s, err := OpenStore(filepath.Join(t.TempDir(), "jvmkit"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	self, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	// Concurrent updates lose nothing.
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.Update(ctx, self, func(r *Record) error {
				r.log(Entry{What: "set", Kind: KindBoolFlag, Name: "F" + strconv.Itoa(i)})
				return nil
			}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	r, err := s.Read(self)
	if err != nil || len(r.Log) != 20 {
		t.Fatalf("after 20 concurrent updates: %d entries, %v", len(r.Log), err)
	}

	// A file planted in place of a record is not read, and not overwritten.
	other := Process{PID: self.PID, Start: self.Start + 1}
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(s.Dir(), fileName(other))); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read(other); err == nil {
		t.Error("Read follows a link")
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Errorf("the link's target changed: %q", b)
	}

	// An empty record is removed; so are the records of processes that are gone.
	if err := s.Update(ctx, self, func(r *Record) error { r.Log = nil; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(s.Dir(), fileName(self))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("empty record not removed: %v", err)
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	gone := Process{PID: cmd.Process.Pid, Start: 1}
	if err := s.Update(ctx, gone, func(r *Record) error { r.log(Entry{What: "set"}); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := s.Update(ctx, self, func(*Record) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(s.Dir(), fileName(gone))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the record of a process that is gone was kept: %v", err)
	}

	// A corrupt record is an error, and stays as it is.
	if err := os.WriteFile(filepath.Join(s.Dir(), fileName(self)), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Update(ctx, self, func(*Record) error { return nil }); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Update of a corrupt record: %v", err)
	}
}
