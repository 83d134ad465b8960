package testutil

// ContainerKind is a way of putting a JVM into a real container: its JDK's root filesystem as the container's
// root, pid 1 of its own pid namespace, a private /tmp. Set JVMOptions.Container to one of them; the JDK must
// be one of a root filesystem (JDK.Root). The root has a user "app" with uid and gid 1000 (scripts/setup makes
// it), the uid the tests run container JVMs as. See the package documentation for what each kind does.
type ContainerKind string

const (
	// Podman runs the JVM with Debian's podman and the runc runtime on the root filesystem as an overlay
	// (`podman --runtime runc run --rootfs ROOT:O`), so nothing the container writes reaches the shared root.
	Podman ContainerKind = "podman"
	// PivotRoot enters the root filesystem as runc does: new mount and pid namespaces, the root bind-mounted
	// (read-only) and made the namespace's root with pivot_root, the old root detached.
	PivotRoot ContainerKind = "pivot_root"
	// Chroot enters the root filesystem with chroot in new mount and pid namespaces: the mount namespace's root
	// stays the host's, so the paths in /proc/<pid>/maps are the host's full paths of the files.
	Chroot ContainerKind = "chroot"
)

// ContainerKinds lists every kind, in the order the tests run them.
var ContainerKinds = []ContainerKind{Podman, PivotRoot, Chroot}
