// Package rootfs reaches files of another process's world from the host: files inside a container's
// root filesystem (through /proc/<pid>/root) and the files behind a process's mappings (through
// /proc/<pid>/map_files), without setns(2), which a multithreaded Go program cannot do for a mount
// namespace.
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
// opened with O_NONBLOCK, so a FIFO planted at a container's library path cannot block the reader,
// and only a regular file is accepted.
//
// Compatibility: Linux 3.3+ for map_files (opening it from Linux 4.3 without CONFIG_CHECKPOINT_RESTORE).
// Tested on Linux 6.18 with chroot, pivot_root and podman/runc containers of a Debian trixie root. On
// kernels whose overlayfs mappings show the lower layer's device and inode, the check sends the reader
// to map_files, which still reaches the file as root.
package rootfs
