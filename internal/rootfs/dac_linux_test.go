package rootfs_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/jvmkit/jvmkit/internal/rootfs"
	"github.com/jvmkit/jvmkit/internal/testutil"
)

// TestMayCreate checks MayCreate against the kernel: for each directory and set of ids, a process with
// exactly those ids (setpriv) tries to create a file there, and MayCreate must agree with the outcome,
// except where it is documented to refuse more (an access control list).
func TestMayCreate(t *testing.T) {
	testutil.MustHaveRoot(t)
	testutil.MustHaveTool(t, "setpriv")
	base := t.TempDir()
	for _, d := range []string{filepath.Dir(base), base} { // the test's processes of other users look in
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	const owner, group, member, stranger = 1000, 2000, 3000, 4000
	type ids struct {
		uid, gid int
		groups   []int
	}
	who := map[string]ids{
		"owner":         {owner, owner, nil},
		"primary-group": {member, group, nil},
		"supplementary": {member, member, []int{5000, group}},
		"stranger":      {stranger, stranger, nil},
		"root":          {0, 0, nil},
	}
	for _, c := range []struct {
		mode uint32
		may  map[string]bool // missing: false
	}{
		{0o755, map[string]bool{"owner": true, "root": true}},
		{0o1777, map[string]bool{"owner": true, "primary-group": true, "supplementary": true, "stranger": true, "root": true}},
		{0o1770, map[string]bool{"owner": true, "primary-group": true, "supplementary": true, "root": true}},
		// The kernel uses only the first class that matches: the others' bits do not help the owner
		// or the group.
		{0o077, map[string]bool{"primary-group": true, "supplementary": true, "stranger": true, "root": true}},
		{0o707, map[string]bool{"owner": true, "stranger": true, "root": true}},
		{0o753, map[string]bool{"owner": true, "stranger": true, "root": true}},
		{0o1731, map[string]bool{"owner": true, "primary-group": true, "supplementary": true, "root": true}},
		{0o1751, map[string]bool{"owner": true, "root": true}}, // write without search is not enough
		{0o555, map[string]bool{"root": true}},
	} {
		dir := filepath.Join(base, "d"+modeName(c.mode))
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(dir, owner, group); err != nil {
			t.Fatal(err)
		}
		if err := unix.Chmod(dir, c.mode); err != nil {
			t.Fatal(err)
		}
		dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		for name, id := range who {
			err := rootfs.MayCreate(dfd, dir, id.uid, id.gid, id.groups)
			kernel := kernelMayCreate(t, dir, id.uid, id.gid, id.groups)
			if (err == nil) != c.may[name] || kernel != c.may[name] {
				t.Errorf("mode %#o, %s: MayCreate %v, kernel %v, want %v", c.mode, name, err, kernel, c.may[name])
			}
			if err != nil && !errors.Is(err, rootfs.ErrUnsafe) {
				t.Errorf("mode %#o, %s: %v does not wrap ErrUnsafe", c.mode, name, err)
			}
		}
		unix.Close(dfd)
	}

	// An access control list: refused unless the directory is the user's own.
	if _, err := exec.LookPath("setfacl"); err != nil {
		t.Logf("setfacl not installed: the access control list case is not checked")
		return
	}
	dir := filepath.Join(base, "acl")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, owner, group); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("setfacl", "-m", "u:4000:rwx", dir).CombinedOutput(); err != nil {
		testutil.Skipf(t, "setfacl on %s: %v: %s", dir, err, out)
	}
	dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dfd)
	if err := rootfs.MayCreate(dfd, dir, stranger, stranger, nil); err == nil {
		t.Errorf("a directory with an access control list: MayCreate allowed uid %d", stranger)
	}
	if err := rootfs.MayCreate(dfd, dir, owner, owner, nil); err != nil {
		t.Errorf("the owner of a directory with an access control list: %v", err)
	}
}

func modeName(m uint32) string { return strconv.FormatUint(uint64(m), 8) }

// kernelMayCreate asks the kernel: a process with exactly these ids creates a file in dir (removed again).
func kernelMayCreate(t *testing.T, dir string, uid, gid int, groups []int) bool {
	t.Helper()
	args := []string{"--reuid=" + strconv.Itoa(uid), "--regid=" + strconv.Itoa(gid)}
	if len(groups) == 0 {
		args = append(args, "--clear-groups")
	} else {
		g := ""
		for i, n := range groups {
			if i > 0 {
				g += ","
			}
			g += strconv.Itoa(n)
		}
		args = append(args, "--groups="+g)
	}
	if uid == 0 {
		args = []string{"--clear-groups"} // root as it is: all capabilities
	}
	f := filepath.Join(dir, "probe")
	err := exec.Command("setpriv", append(args, "--", "sh", "-c", `: > "$1"`, "sh", f)...).Run()
	os.Remove(f)
	return err == nil
}
