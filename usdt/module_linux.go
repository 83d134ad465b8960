package usdt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"

	"github.com/jvmkit/jvmkit/internal/procfs"
	"github.com/jvmkit/jvmkit/internal/rootfs"
)

// Modules returns the files mapped executable by process pid (a pid as this process sees it) that have
// probes, in the order of their lowest mapping.
func Modules(ctx context.Context, pid int) ([]Module, error) {
	maps, err := procfs.Default.Maps(pid)
	if err != nil {
		return nil, fmt.Errorf("usdt: %w", procfs.Wrap(pid, "memory map", err))
	}
	type key struct {
		path  string
		inode uint64
	}
	first := make(map[key]procfs.Mapping)
	var order []key
	for _, m := range maps {
		if len(m.Perms) < 3 || m.Perms[2] != 'x' || m.Inode == 0 || len(m.Path) == 0 || m.Path[0] != '/' {
			continue
		}
		k := key{m.Path, m.Inode}
		if old, ok := first[k]; !ok || m.Start < old.Start {
			if !ok {
				order = append(order, k)
			}
			first[k] = m
		}
	}
	sort.SliceStable(order, func(i, j int) bool { return first[order[i]].Start < first[order[j]].Start })
	var mods []Module
	for _, k := range order {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		m := first[k]
		f, err := rootfs.OpenMapped(procfs.Default, pid, m)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				if !procfs.Default.Alive(pid) {
					return nil, fmt.Errorf("%w: %d", ErrProcessGone, pid)
				}
			}
			if errors.Is(err, os.ErrPermission) {
				return nil, fmt.Errorf("%w: %w", ErrPermission, err)
			}
			continue // unmapped since maps was read
		}
		probes, err := ParseNotes(f)
		file := f.Name()
		f.Close()
		if err != nil {
			continue // not an ELF file, or one we cannot parse: it has no probes for us
		}
		if len(probes) > 0 {
			mods = append(mods, Module{Path: m.Path, File: file, Probes: probes})
		}
	}
	return mods, nil
}
