package vmstructs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"sync"

	"github.com/jvmkit/jvmkit/internal/elfsym"
	"github.com/jvmkit/jvmkit/internal/filecache"
	"github.com/jvmkit/jvmkit/internal/procfs"
	"github.com/jvmkit/jvmkit/internal/rootfs"
)

// Open reads the VMStructs of the HotSpot JVM with the given pid (as the caller sees it). Nothing runs
// in the JVM and it is not stopped: libjvm.so is found in /proc/<pid>/maps and opened through
// /proc/<pid>/root or /proc/<pid>/map_files (internal/rootfs: containers entered by chroot, deleted
// libraries), its symbols give the tables' addresses, and the tables are read through /proc/<pid>/mem.
func Open(ctx context.Context, pid int) (*JVM, error) {
	maps, err := procfs.Default.Maps(pid)
	if err != nil {
		return nil, fmt.Errorf("vmstructs: %w", procfs.Wrap(pid, "memory map", err))
	}
	lib, ok := findLibJVM(maps)
	if !ok {
		if err := procfs.Default.GoneErr(pid); err != nil { // a zombie's maps read empty
			return nil, fmt.Errorf("vmstructs: %w", err)
		}
		return nil, fmt.Errorf("%w: process %d has no libjvm.so mapped", ErrNotJVM, pid)
	}
	f, err := rootfs.OpenMapped(procfs.Default, pid, lib)
	if err != nil {
		if errors.Is(err, os.ErrPermission) {
			return nil, fmt.Errorf("%w: %w", ErrPermission, err)
		}
		return nil, fmt.Errorf("vmstructs: %w", err)
	}
	defer f.Close()
	file := f.Name()
	lf, err := libFileFor(f)
	if err != nil {
		return nil, err
	}
	syms := lf.syms
	bias, err := lf.loads.Bias(lib.Start, lib.Offset, uint64(os.Getpagesize()))
	if err != nil {
		return nil, fmt.Errorf("vmstructs: %w", err)
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
	j.moreSyms = func() (map[string]uint64, error) { return lf.moreSymbols(file) }
	return j, nil
}

// libFile is what Open reads of a libjvm.so file, shared by the JVMs of one JDK (libFiles). The maps
// are only read after they are built.
type libFile struct {
	syms  map[string]uint64
	loads elfsym.Segments

	moreMu sync.Mutex
	more   map[string]uint64
}

// moreSymbols reads the rest of the symbols (.symtab) from file, the library as this JVM reaches it,
// unless an earlier JVM's read succeeded.
func (lf *libFile) moreSymbols(file string) (map[string]uint64, error) {
	lf.moreMu.Lock()
	defer lf.moreMu.Unlock()
	if lf.more != nil {
		return lf.more, nil
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	_, more, err := libSymbols(f, true)
	if err != nil {
		return nil, err
	}
	lf.more = more
	return more, nil
}

// libFiles holds what was read of each libjvm.so a JVM still uses, by the file's identity: opening many
// JVMs of one JDK reads its symbols once, and a long-running reader does not keep those of JDKs whose
// JVMs are all closed.
var libFiles filecache.Cache[libFile]

func libFileFor(f *os.File) (*libFile, error) {
	read := func() (*libFile, error) {
		ef, syms, err := libSymbols(f, false)
		if err != nil {
			return nil, err
		}
		return &libFile{syms: syms, loads: ef.Loads}, nil
	}
	id, ok := filecache.Identify(f)
	if !ok {
		return read()
	}
	return libFiles.Get(id, read)
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
