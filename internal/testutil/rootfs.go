package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// A JDK in a root filesystem (JDK.Root) runs with that root's userland: in a private mount namespace, the
// root's /usr is stacked over the host's (a read-only overlay, the root's files first), and the host's /etc
// over the root's. On merged-/usr systems (Debian since 12, the trixie root) every program and library lives
// under /usr, so the JDK finds its own glibc and libraries at the paths it was built for; what only the host
// has stays visible (the real applications under /usr/share, the host's users in /etc/passwd, and the root's
// /etc/java-<n>-openjdk that the JDK links to), as do /tmp, /var/tmp, /proc, /dev and the tests' files. So a
// test that passes host paths to the JDK's tools, or reads what its JVMs write, works unchanged. Its JVMs see
// the JDK at JavaHome(); the host sees the files of that mount namespace through /proc/<pid>/root (the
// overlay's: /proc/<pid>/maps shows the overlay's paths with the device and inode of the files below it).
//
// A whole container (the JVM's own root, pid namespace, /tmp) is ContainerKind's business, not this.

// userlandScript is the shell fragment that switches to the userland of the root filesystem in "$2"
// (positional parameters are used so that no path is ever quoted into the script). It runs in a new mount
// namespace: unshare makes the mounts private, so the host never sees them. The second mount is already the
// root's program. Overlay options cannot carry ':' or ',' in a path: discovery refuses such roots.
const userlandScript = `mount -t overlay jvmkit-usr -o "ro,lowerdir=$2/usr:/usr" /usr && ` +
	`mount -t overlay jvmkit-etc -o "ro,lowerdir=/etc:$2/etc" /etc && `

var (
	rootToolsMu sync.Mutex
	rootToolDir = make(map[string]string) // JDK home -> directory of wrappers, in the work directory
)

// rootTools writes, once per test binary, a wrapper script for every program in the bin directory of a JDK in
// a root filesystem, and returns their directory: Bin returns paths there. A wrapper is a plain executable
// that runs the tool with the root's userland (see userlandScript); it needs root, like every use of such a
// JDK.
func rootTools(t testing.TB, jdk JDK) string {
	t.Helper()
	rootToolsMu.Lock()
	defer rootToolsMu.Unlock()
	if dir, ok := rootToolDir[jdk.Home]; ok {
		return dir
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		Skipf(t, "a JDK in a root filesystem (%s) needs unshare (util-linux): %v", jdk, err)
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		Skipf(t, "a JDK in a root filesystem (%s) needs sh: %v", jdk, err)
	}
	entries, err := os.ReadDir(filepath.Join(jdk.Home, "bin"))
	if err != nil {
		t.Fatalf("testutil: list the tools of %s: %v", jdk, err)
	}
	dir := filepath.Join(newRunDir(t, "jdk-*"), jdk.Name())
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatalf("testutil: %v", err)
	}
	for _, e := range entries {
		tool := filepath.Join(jdk.JavaHome(), "bin", e.Name())
		script := fmt.Sprintf("#!%s\n# %s's %s, run with the userland of %s (see internal/testutil/rootfs.go).\n"+
			"exec %s --mount -- %s -c %s sh %s %s %s \"$@\"\n",
			sh, jdk.Name(), e.Name(), jdk.Root,
			shellQuote(unshare), shellQuote(sh), shellQuote(userlandScript+`shift 2 && exec "$@"`),
			shellQuote("-"), shellQuote(jdk.Root), shellQuote(tool))
		if err := os.WriteFile(filepath.Join(dir, e.Name()), []byte(script), 0o755); err != nil {
			t.Fatalf("testutil: write the wrapper of %s: %v", tool, err)
		}
	}
	rootToolDir[jdk.Home] = dir
	return dir
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
