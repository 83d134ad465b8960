package vmstructs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"

	"github.com/jvmkit/jvmkit/attach"
	"github.com/jvmkit/jvmkit/internal/procfs"
)

// Open reads the VMStructs of the HotSpot JVM with the given pid (as the caller sees it). Nothing runs
// in the JVM and it is not stopped: libjvm.so is found in /proc/<pid>/maps and opened through
// /proc/<pid>/root, its symbols give the tables' addresses, and the tables are read through
// /proc/<pid>/mem.
func Open(ctx context.Context, pid int) (*JVM, error) {
	maps, err := procfs.Default.Maps(pid)
	if err != nil {
		switch {
		case errors.Is(err, os.ErrNotExist):
			return nil, fmt.Errorf("%w: %d", attach.ErrProcessGone, pid)
		case errors.Is(err, os.ErrPermission):
			return nil, fmt.Errorf("%w: cannot read the memory map of %d; run as root or as the JVM's user", attach.ErrPermission, pid)
		}
		return nil, fmt.Errorf("vmstructs: %w", err)
	}
	lib, ok := findLibJVM(maps)
	if !ok {
		return nil, fmt.Errorf("%w: process %d has no libjvm.so mapped", attach.ErrNotJVM, pid)
	}
	file := procfs.Default.Path(pid, "root", lib.Path)
	if lib.Deleted {
		// Replaced on disk (a JDK update): the mapped file is still reachable by its range (root).
		file = procfs.Default.Path(pid, "map_files", fmt.Sprintf("%x-%x", lib.Start, lib.End))
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("vmstructs: open %s: %w", file, err)
	}
	defer f.Close()
	syms, loads, err := elfDynamicSymbols(f)
	if err != nil {
		return nil, err
	}
	bias, err := loadBias(loads, lib.Start, lib.Offset, uint64(os.Getpagesize()))
	if err != nil {
		return nil, err
	}
	mem, err := OpenProcessMemory(pid)
	if err != nil {
		return nil, err
	}
	j, err := newJVM(ctx, mem, syms, bias)
	if err != nil {
		mem.Close()
		return nil, err
	}
	j.PID, j.LibJVM, j.closer = pid, lib.Path, mem
	j.moreSyms = func() (map[string]uint64, error) {
		f, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		all, _, err := elfSymbols(f)
		return all, err
	}
	return j, nil
}

// findLibJVM returns the lowest mapping of libjvm.so.
func findLibJVM(maps []procfs.Mapping) (procfs.Mapping, bool) {
	var best procfs.Mapping
	found := false
	for _, m := range maps {
		if path.Base(m.Path) == "libjvm.so" && (!found || m.Start < best.Start) {
			best, found = m, true
		}
	}
	return best, found
}
