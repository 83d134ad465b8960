package rootfs

import (
	"errors"
	"fmt"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"
)

// MayCreate reports whether a process with effective uid, gid and supplementary groups (host ids, as
// /proc/<pid>/status shows them to the caller) may create (or remove) entries in the directory dfd, by
// the directory's permission bits: write and search for the one class the kernel picks (the owner's
// bits if uid owns it; else the group's if gid or a supplementary group owns it; else the others'),
// whatever the other classes allow. The sticky bit does not matter for creating. uid 0 may always:
// only root can have made a process of host uid 0, and such a process may create anywhere itself.
//
// jvmkit runs as root and creates files in a JVM's world for it (maps, lock files, attach triggers,
// library and map directories, files made for the JVM to write). Root may create anywhere, but what a
// path under /proc/<pid>/root reaches is decided by the process's mounts: any user can make a user and
// mount namespace of their own and bind-mount there, at their JVM's /tmp, any directory they can see,
// /etc included (unshare -Urm; seen: gjmaps put a map owned by uid 65534, which that user could then
// rewrite, in a root-owned 0755 directory). A bind mount changes no owner or mode, and an unprivileged
// user cannot idmap a file system it did not mount, so creating only where the process's own user may
// create keeps jvmkit to what that user could do.
//
// Conservative where the bits do not settle it: a directory with an access control list is refused
// unless uid owns it (its group bits are the list's mask, and a named entry may say otherwise); the
// capabilities of a process are not read, so one that may create only through CAP_DAC_OVERRIDE (in its
// user namespace, on a directory whose owner and group that namespace maps) is refused. The file
// system ids are taken to be the effective ones (HotSpot never calls setfsuid).
//
// It returns nil when the process may create there, else an error wrapping ErrUnsafe that says why.
func MayCreate(dfd int, shown string, uid, gid int, groups []int) error {
	var st unix.Stat_t
	if err := unix.Fstat(dfd, &st); err != nil {
		return fmt.Errorf("stat %s: %w", shown, err)
	}
	if uid == 0 {
		return nil
	}
	const wx = 0o3
	bits, class := st.Mode&wx, "others"
	switch {
	case int(st.Uid) == uid:
		bits, class = st.Mode>>6&wx, "owner"
	case int(st.Gid) == gid || slices.Contains(groups, int(st.Gid)):
		bits, class = st.Mode>>3&wx, "group"
	}
	if class != "owner" && hasACL(dfd) {
		return fmt.Errorf("%w: %w: %s has an access control list, which jvmkit does not read, and is not uid %d's (owner uid %d); nothing is created there for uid %d",
			ErrUnsafe, errACL, shown, uid, st.Uid, uid)
	}
	if bits == wx {
		return nil
	}
	return fmt.Errorf("%w: uid %d may not create files in %s (owner uid %d, group %d, mode %#o: no write and search for its %s; read-only, or another directory mounted there?); nothing is created there for it",
		ErrCannotCreate, uid, shown, st.Uid, st.Gid, st.Mode&0o7777, class)
}

// errACL marks a MayCreate refusal that the permission bits alone could not settle.
var errACL = errors.New("access control list")

// hasACL reports whether the directory dfd (possibly O_PATH, which fgetxattr refuses) has an access
// control list; an error reading it counts as one.
func hasACL(dfd int) bool {
	_, err := unix.Getxattr("/proc/self/fd/"+strconv.Itoa(dfd), "system.posix_acl_access", nil)
	return err == nil || !errors.Is(err, unix.ENODATA) && !errors.Is(err, unix.EOPNOTSUPP)
}

// mayCreate is MayCreate for the process in d.
func (pr *Process) mayCreate(d dir) error {
	return MayCreate(d.fd, pr.show(d.path), pr.UID, pr.GID, pr.Groups)
}
