package perfmap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/attach"
	"github.com/jvmkit/jvmkit/internal/procfs"
	"github.com/jvmkit/jvmkit/internal/rootfs"
	"github.com/jvmkit/jvmkit/jcmd"
)

// WriteFileAtomic writes entries as the map dir/name, owned by uid and gid and readable by everyone. The
// directory is opened O_PATH|O_DIRECTORY; the file is written to a temporary file created O_EXCL next to
// it, fsynced and renamed over name (rootfs.WriteFile). A symbolic link or other non-regular file at
// dir/name is refused with ErrNotRegular and left alone; another user's link on the way to dir in a
// sticky directory is not followed (rootfs.OpenOutputDir).
func WriteFileAtomic(dir, name string, entries []Entry, uid, gid int) error {
	dfd, err := rootfs.OpenOutputDir(dir, unix.O_PATH)
	if err != nil {
		return fmt.Errorf("perfmap: open %s: %w", dir, err)
	}
	defer unix.Close(dfd)
	return writeAt(dfd, dir, name, entries, uid, gid)
}

func writeAt(dfd int, dir, name string, entries []Entry, uid, gid int) error {
	if _, err := rootfs.CheckFinal(dfd, dir, name); err != nil {
		return fmt.Errorf("perfmap: %w (a symbolic link or special file is not written through; remove it)", err)
	}
	data, err := mapText(entries)
	if err != nil {
		return err
	}
	return writeMap(dfd, dir, name, data, uid, gid)
}

// mapText is the text of a map of entries.
func mapText(entries []Entry) ([]byte, error) {
	var buf bytes.Buffer
	if err := Write(&buf, entries); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeMap publishes data as the map dir/name (rootfs.WriteFile: a temporary file renamed over the
// name), readable by everyone.
func writeMap(dfd int, dir, name string, data []byte, uid, gid int) error {
	if err := rootfs.WriteFile(dfd, dir, name, data, uid, gid, 0o644); err != nil {
		return fmt.Errorf("perfmap: %w", err)
	}
	return nil
}

// placeAt writes the map at l. The name is perf's, in a directory every user can write (/tmp): a
// symbolic link, FIFO or socket there is not followed but replaced, as any file is (the map is renamed
// over the name in one step), and said so through note; refusing it would let any user keep a JVM from
// having a map by planting a link at a name they can guess. A directory there is an error: a rename
// cannot replace it, and another user's directory is not ours to remove (that user can still keep the
// map from that name).
func placeAt(l location, data []byte, uid, gid int, note func(string)) error {
	var st unix.Stat_t
	err := unix.Fstatat(l.dfd, l.name, &st, unix.AT_SYMLINK_NOFOLLOW)
	was := ""
	switch {
	case errors.Is(err, unix.ENOENT):
	case err != nil:
		return fmt.Errorf("perfmap: stat %s: %w", l.path(), err)
	case st.Mode&unix.S_IFMT == unix.S_IFDIR:
		return fmt.Errorf("perfmap: %s is a directory owned by uid %d, not a map; remove it", l.path(), st.Uid)
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		was = fmt.Sprintf("%s was %s owned by uid %d", l.path(), rootfs.Kind(st.Mode), st.Uid)
	}
	if err := writeMap(l.dfd, l.dir, l.name, data, uid, gid); err != nil {
		return err
	}
	if was != "" && note != nil {
		note(was + "; replaced it with the map, not followed")
	}
	return nil
}

// location is one place a map goes: a directory handle and the name in it.
type location struct {
	dfd  int
	dir  string // as shown to people: a host path
	name string
	// refused says why nothing may be written (or removed) there: a container's /tmp that the JVM's own
	// user could not create files in (rootfs.MayCreate).
	refused error
}

func (l location) path() string { return l.dir + "/" + l.name }

// locations opens the directories perf reads the map of process pid from: the target's /tmp (inside its
// root) and, when that is another directory or the pid differs, the host's /tmp. The caller closes them.
//
// A target whose /tmp is the host's own but whose pid in its namespace differs (a pid namespace without
// a mount namespace of its own, or a container given the host's /tmp) gets only the host's name: there
// /tmp/perf-<nspid>.map is the map of host process <nspid>, another process, whose map would be replaced.
// Any user can make such a namespace (unshare -Urp) and pick its pid there (ns_last_pid): seen replacing
// a root JVM's map with the map of uid 65534's JVM, and --clean removing it.
func locations(pid int) (*attach.Target, []location, error) {
	t, err := attach.Resolve(pid)
	if err != nil {
		return nil, nil, err
	}
	in, err := openTmp(t)
	if err != nil {
		return nil, nil, err
	}
	host, err := unix.Open("/tmp", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Close(in)
		return nil, nil, fmt.Errorf("perfmap: open /tmp: %w", err)
	}
	hostLoc := location{dfd: host, dir: "/tmp", name: "perf-" + strconv.Itoa(t.PID) + ".map"}
	if sameFile(in, host) {
		// The host's /tmp: with the same pid, one name, shown as perf uses it; with another pid, the
		// name inside is another host process's (see above).
		unix.Close(in)
		return t, []location{hostLoc}, nil
	}
	inLoc := location{dfd: in, dir: jcmd.HostPath(t, "/tmp"), name: "perf-" + strconv.Itoa(t.NSPID) + ".map"}
	if err := rootfs.MayCreate(in, inLoc.dir, t.UID, t.GID, t.Status.Groups); err != nil {
		inLoc.refused = fmt.Errorf("perfmap: not writing %s: %w", inLoc.path(), err)
	}
	return t, []location{inLoc, hostLoc}, nil
}

func closeAll(locs []location) {
	for _, l := range locs {
		unix.Close(l.dfd)
	}
}

func sameFile(a, b int) bool {
	var sa, sb unix.Stat_t
	if unix.Fstat(a, &sa) != nil || unix.Fstat(b, &sb) != nil {
		return false
	}
	return sa.Dev == sb.Dev && sa.Ino == sb.Ino
}

// Paths returns where Place writes the map of process pid, as host paths.
func Paths(pid int) ([]string, error) {
	_, locs, err := locations(pid)
	if err != nil {
		return nil, err
	}
	defer closeAll(locs)
	var out []string
	for _, l := range locs {
		if l.refused == nil {
			out = append(out, l.path())
		}
	}
	return out, nil
}

// Place writes the map of process pid where perf looks for it, owned by root: the target's
// /tmp/perf-<nspid>.map inside its mount namespace and, for a JVM in a container, the host's
// /tmp/perf-<hostpid>.map (only that one when the JVM's /tmp is the host's: the name inside is then
// another host process's). It returns the host paths written. A place that cannot be written (a read-only
// /tmp, a symbolic link at the map's name) does not keep the map from the others: the error names it and
// the paths written are returned with it.
func Place(ctx context.Context, pid int, entries []Entry) ([]string, error) {
	return PlaceOwned(ctx, pid, entries, 0, 0)
}

// PlaceOwned is Place with the maps owned by uid and gid (perf reads maps owned by its user or root).
func PlaceOwned(ctx context.Context, pid int, entries []Entry, uid, gid int) ([]string, error) {
	return PlaceWith(ctx, pid, entries, PlaceOptions{UID: uid, GID: gid})
}

// PlaceOptions say who owns the maps Place writes.
type PlaceOptions struct {
	UID, GID int // the owner of the maps (perf reads maps owned by its user or root); 0, 0 is root
	// JVMOwnsContainerMap gives the copy in a container's own /tmp (a JVM in another mount or pid
	// namespace) to the JVM's user instead, so that the JVM can rewrite it itself (its own jcmd's
	// Compiler.perfmap, -XX:+DumpPerfMapAtExit): a root-owned map there would be stale for good. perf run
	// by root inside the container then needs -f to read it; the host's copy stays UID's.
	JVMOwnsContainerMap bool
	// Note, when set, is told what Place changed that a person should know: something other than a
	// regular file at a map's name (a link or FIFO another user planted), which the map replaced.
	Note func(string)
}

// PlaceWith is Place with options.
func PlaceWith(ctx context.Context, pid int, entries []Entry, o PlaceOptions) ([]string, error) {
	t, locs, err := locations(pid)
	if err != nil {
		return nil, err
	}
	defer closeAll(locs)
	data, err := mapText(entries) // once for every place
	if err != nil {
		return nil, err
	}
	var done []string
	var errs []error
	for i, l := range locs {
		if err := ctx.Err(); err != nil {
			return done, err
		}
		if l.refused != nil {
			errs = append(errs, l.refused)
			continue
		}
		uid, gid := o.UID, o.GID
		if i == 0 && len(locs) > 1 && o.JVMOwnsContainerMap {
			uid, gid = t.UID, t.GID
		}
		if err := placeAt(l, data, uid, gid, o.Note); err != nil {
			errs = append(errs, err)
			continue
		}
		done = append(done, l.path())
	}
	return done, errors.Join(errs...)
}

// Clean removes the maps Place would write for process pid, but only regular files owned by root (maps
// someone else wrote are left alone). It returns the host paths removed.
func Clean(ctx context.Context, pid int) ([]string, error) {
	return CleanOwned(ctx, pid, 0)
}

// CleanOwned is Clean for maps owned by root or uid (PlaceOwned's); the copy in a container's own /tmp
// may also be the JVM's user's (PlaceOptions.JVMOwnsContainerMap).
// For a process that has exited, only the host's /tmp/perf-<pid>.map is left to remove.
func CleanOwned(_ context.Context, pid, uid int) ([]string, error) {
	t, locs, err := locations(pid)
	if errors.Is(err, attach.ErrProcessGone) {
		host, herr := unix.Open("/tmp", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if herr != nil {
			return nil, fmt.Errorf("perfmap: open /tmp: %w", herr)
		}
		locs, err = []location{{dfd: host, dir: "/tmp", name: "perf-" + strconv.Itoa(pid) + ".map"}}, nil
	}
	if err != nil {
		return nil, err
	}
	defer closeAll(locs)
	var removed []string
	var errs []error
	for i, l := range locs {
		if l.refused != nil {
			continue // nothing of ours can be there; what is there is not ours to remove
		}
		owners := []int{0, uid}
		if i == 0 && len(locs) > 1 && t != nil {
			owners = append(owners, t.UID)
		}
		var st unix.Stat_t
		err := unix.Fstatat(l.dfd, l.name, &st, unix.AT_SYMLINK_NOFOLLOW)
		switch {
		case errors.Is(err, unix.ENOENT):
			continue
		case err != nil:
			errs = append(errs, fmt.Errorf("perfmap: stat %s: %w", l.path(), err))
			continue
		case st.Mode&unix.S_IFMT != unix.S_IFREG:
			errs = append(errs, fmt.Errorf("perfmap: %s: %w; not removed", l.path(), ErrNotRegular))
			continue
		case !slices.Contains(owners, int(st.Uid)):
			errs = append(errs, fmt.Errorf("perfmap: %s is owned by uid %d, not root or %d; not removed", l.path(), st.Uid, uid))
			continue
		}
		if err := unix.Unlinkat(l.dfd, l.name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("perfmap: remove %s: %w", l.path(), err))
			continue
		}
		removed = append(removed, l.path())
	}
	return removed, errors.Join(errs...)
}

// openTmp opens the target's /tmp inside its root (O_PATH).
func openTmp(t *attach.Target) (int, error) {
	fd, err := rootfs.Open(t.Root, "/tmp", unix.O_PATH|unix.O_DIRECTORY, 0)
	if errors.Is(err, errors.ErrUnsupported) {
		return -1, fmt.Errorf("perfmap: process %d: %w: %w", t.PID, ErrNotSupported, err)
	}
	if err != nil {
		// A JVM killed since it was read (its root goes before it is a zombie) is said to be gone, and how.
		if gerr := procfs.Default.GoneErr(t.PID); gerr != nil {
			return -1, fmt.Errorf("perfmap: %w", gerr)
		}
		return -1, fmt.Errorf("perfmap: process %d: %w", t.PID, err)
	}
	return fd, nil
}
