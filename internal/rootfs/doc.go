// Package rootfs reaches files of another process's world from the host: files inside a container's
// root filesystem (through /proc/<pid>/root) and the files behind a process's mappings (through
// /proc/<pid>/map_files), without setns(2), which a multithreaded Go program cannot do for a mount
// namespace. It also writes files, its own and those another process is asked to write, so that no
// other user can redirect the write.
//
// # Files inside a process's root
//
// [Open] and [OpenRegular] resolve a path inside a process's root (/proc/<pid>/root) with
// openat2(RESOLVE_IN_ROOT): absolute symbolic links and ".." stay inside that root, as they do for the
// process; a plain open of /proc/<pid>/root/<path> would resolve an absolute link inside a container
// against the caller's root. [OpenRegular] opens non-blocking (a FIFO planted at the name cannot hang
// the caller) and refuses anything but a regular file.
//
// # The file behind a mapping
//
// [OpenMapped] is the one way jvmkit opens a library another process has mapped (libjvm.so for
// VMStructs, any ELF for USDT notes and native symbols). /proc/<pid>/maps names a mapping by the path
// the kernel's d_path gives relative to the reader's root, so the same text means different things
// depending on how the target entered its container:
//   - a mount namespace with its own root (podman/runc, pivot_root): the path is inside the container,
//     and /proc/<pid>/root + path reaches it;
//   - chroot(2) in the host's mount namespace: the path is the host's full path (the chroot directory
//     included), and /proc/<pid>/root + path does not exist, or worse, is another file;
//   - a file deleted or replaced since it was mapped (a JDK upgrade): the path ends in " (deleted)".
//
// So the path through /proc/<pid>/root is used only when the file opened there is the mapped one
// (device and inode equal to the mapping's), and /proc/<pid>/map_files/<start>-<end> otherwise: that
// link always reaches the mapped file, but following it needs CAP_SYS_ADMIN (proc(5)). The path is
// opened in the process's root with RESOLVE_NO_SYMLINKS (d_path gives none; one found there now was
// planted since) and O_NONBLOCK, so a FIFO planted at a container's library path cannot block the
// reader, and only a regular file is accepted.
//
// # Writes by another process
//
// A JVM asked to write a file (Compiler.perfmap, JFR.dump, GC.heap_dump -overwrite, ...) writes it with
// its own privileges, often in a directory every user can write, and most such writes follow a symbolic
// link at the name: another user who plants /tmp/perf-<pid>.map -> /etc/shadow makes a root JVM
// overwrite /etc/shadow. [Process.Prepare] makes the path safe first. It walks the path the way the
// kernel will for the process, one component at a time, following symbolic links itself, and accepts an
// entry only if nobody but root and the process's user (and, in a user namespace, its root) can change
// it: the directory holding it is theirs and either writable by nobody else, or sticky with the entry
// theirs too (in a sticky directory only an entry's owner, the directory's owner and root may rename or
// remove it, unlink(2), rename(2)). An accepted path cannot change until the write, so there is no
// check-then-use window. At the final name in a sticky shared directory (/tmp), a new empty file of the
// process's user is renamed over whatever is there (a link, a FIFO, another user's file, a hard link),
// in one step; afterwards [Prepared.Written] checks that the name still holds that file and that the
// process wrote it, and the data can be read back from the very file ([Prepared.Result], [ReadStable]),
// never from whatever the name holds later. What cannot be made safe (a directory another user owns or
// may write without the sticky bit, a rotating log or a generated name in /tmp) is refused with
// [ErrUnsafe], which wraps fs.ErrPermission. The [Mode] says how the process opens the file.
//
// # Only where the process's user may create
//
// What /proc/<pid>/root reaches is decided by the process's mounts, which any user can choose in a user
// and mount namespace of their own: a root-owned directory they cannot write (/etc) bind-mounted at their
// JVM's /tmp. [MayCreate] is the one rule for every name jvmkit creates or removes in a process's world
// (maps, lock files, attach triggers, agent directories, files made for the process, and names the
// process is asked to create, which Prepare refuses up front): only where the process's own user may
// create, by the directory's permission bits for the class the kernel picks. See MayCreate for uid 0,
// access control lists and capabilities.
//
// # Own writes
//
// [WriteFile], [WriteOutput] and [Temp] write a file under a name nobody can guess (O_CREAT|O_EXCL|
// O_NOFOLLOW) and rename it over the final name once complete: a reader never sees half a file, and a
// link planted at the name is replaced, never followed. A writer holds an exclusive flock(2) on its
// temporary file, which dies with it, so [RemoveStale] tells the temporary files of writers that were
// killed from those of live ones and removes only the first kind. [Lock] takes a lock file that is
// created the same way; only its holder removes it, while it holds it ([Unlock]).
//
// # Compatibility
//
// Linux 3.3+ for map_files (opening it from Linux 4.3 without CONFIG_CHECKPOINT_RESTORE); Linux 5.6+ for
// openat2. Tested on Linux 6.18 with chroot, pivot_root and podman/runc containers of a Debian trixie
// root, and with fs.protected_symlinks, protected_hardlinks, protected_regular and protected_fifos at 0,
// the setting under which the attacks Prepare stops work (with them on, the kernel refuses some of the
// attacks itself). On kernels whose overlayfs mappings show the lower layer's device and inode, the
// mapping check sends the reader to map_files, which still reaches the file as root. Elsewhere than
// Linux the functions fail with errors.ErrUnsupported (WriteOutput writes plainly).
package rootfs
