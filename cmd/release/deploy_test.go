package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/jvmkit/jvmkit/internal/testutil"
)

// capRow is a row of docs/deploy.md's table: a command line (PID, OUT and DIR stand for the JVM's pid, an
// output file and a directory) and the capabilities it needs, without the CAP_ prefix, sorted.
type capRow struct {
	command string
	caps    []string
}

func readCapTable(t *testing.T) []capRow {
	t.Helper()
	b, err := os.ReadFile("../../docs/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	var rows []capRow
	for line := range strings.Lines(string(b)) {
		cells := strings.Split(strings.TrimSpace(line), "|")
		if len(cells) < 4 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		r := capRow{command: strings.Trim(strings.TrimSpace(cells[1]), "`")}
		for _, c := range strings.Split(cells[2], ",") {
			c = strings.TrimSpace(c)
			if !strings.HasPrefix(c, "CAP_") {
				t.Fatalf("docs/deploy.md: %q: capability %q without CAP_", r.command, c)
			}
			r.caps = append(r.caps, strings.TrimPrefix(c, "CAP_"))
		}
		sort.Strings(r.caps)
		rows = append(rows, r)
	}
	if len(rows) < 10 {
		t.Fatalf("docs/deploy.md: %d rows in the capability table", len(rows))
	}
	return rows
}

func union(rows []capRow, keep func(capRow) bool) []string {
	var all []string
	for _, r := range rows {
		if keep(r) {
			for _, c := range r.caps {
				if !slices.Contains(all, c) {
					all = append(all, c)
				}
			}
		}
	}
	sort.Strings(all)
	return all
}

func granted(t *testing.T, name string, sc *corev1.SecurityContext) []string {
	t.Helper()
	if sc == nil || sc.Capabilities == nil {
		t.Fatalf("%s: no capabilities", name)
	}
	if !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("%s drops %v, want ALL", name, sc.Capabilities.Drop)
	}
	if sc.Privileged != nil && *sc.Privileged || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("%s: privileged or privilege escalation allowed", name)
	}
	var caps []string
	for _, c := range sc.Capabilities.Add {
		caps = append(caps, string(c))
	}
	sort.Strings(caps)
	return caps
}

// TestManifests decodes deploy/'s manifests with Kubernetes' API types (strictly: an unknown or misspelt
// field fails) and checks that each grants exactly the capabilities docs/deploy.md's table says its commands
// need: the DaemonSet those of jvmkit agent, debug-attach.json the union of the rows without SYS_ADMIN,
// debug-trace.json the union of all.
func TestManifests(t *testing.T) {
	rows := readCapTable(t)
	b, err := os.ReadFile("../../deploy/daemonset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var ds *appsv1.DaemonSet
	for _, doc := range bytes.Split(b, []byte("\n---\n")) {
		var meta struct{ Kind string }
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatal(err)
		}
		switch meta.Kind {
		case "Namespace":
			var ns corev1.Namespace
			if err := yaml.UnmarshalStrict(doc, &ns); err != nil {
				t.Errorf("Namespace: %v", err)
			}
		case "DaemonSet":
			ds = new(appsv1.DaemonSet)
			if err := yaml.UnmarshalStrict(doc, ds); err != nil {
				t.Fatalf("DaemonSet: %v", err)
			}
		default:
			t.Errorf("daemonset.yaml: unexpected kind %q", meta.Kind)
		}
	}
	if ds == nil {
		t.Fatal("daemonset.yaml has no DaemonSet")
	}
	spec := ds.Spec.Template.Spec
	if !spec.HostPID || len(spec.Containers) != 1 {
		t.Fatalf("DaemonSet: hostPID %v, %d containers", spec.HostPID, len(spec.Containers))
	}
	c := spec.Containers[0]
	if len(c.Command) < 2 || c.Command[0] != "jvmkit" || c.Command[1] != "agent" {
		t.Errorf("DaemonSet runs %q, want jvmkit agent", c.Command)
	}
	want := union(rows, func(r capRow) bool { return strings.HasPrefix(r.command, "jvmkit agent") })
	if got := granted(t, "DaemonSet", c.SecurityContext); !slices.Equal(got, want) {
		t.Errorf("DaemonSet grants %v, the table's jvmkit agent needs %v", got, want)
	}
	for name, keep := range map[string]func(capRow) bool{
		"debug-attach.json": func(r capRow) bool { return !slices.Contains(r.caps, "SYS_ADMIN") },
		"debug-trace.json":  func(capRow) bool { return true },
	} {
		b, err := os.ReadFile(filepath.Join("../../deploy", name))
		if err != nil {
			t.Fatal(err)
		}
		var c corev1.Container
		if err := yaml.UnmarshalStrict(b, &c); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got, want := granted(t, name, c.SecurityContext), union(rows, keep); !slices.Equal(got, want) {
			t.Errorf("%s grants %v, the table says %v", name, got, want)
		}
		if len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != "/tmp" || c.VolumeMounts[0].SubPath != "tmp" {
			t.Errorf("%s: mounts %+v, want the host's /tmp (host-root, subPath tmp) on /tmp", name, c.VolumeMounts)
		}
	}
}

// TestCapabilityTable runs every row of docs/deploy.md's table as root with exactly its capabilities in the
// bounding set (setpriv), against a JDK 17 JVM running as uid 1000: it must work, and fail without any one
// of them, naming the capability it lacks. A check without CAP_KILL needs a JVM whose attach listener has not started yet (one started for
// these checks, shared by them while none succeeds);
// the agent strategy runs on a JVM of its own (the agent it leaves mapped, deleted, would change what the
// eBPF rows need: see the table's notes).
func TestCapabilityTable(t *testing.T) {
	testutil.MustHaveRoot(t)
	setpriv := testutil.MustHaveTool(t, "setpriv")
	jdk := testutil.JDK17(t)
	bin := distBinaries(t, "amd64")
	opts := testutil.JVMOptions{UID: 1000, GID: 1000, Main: "Alloc"}
	shared := testutil.StartJVM(t, jdk, opts)
	var own *testutil.JVM
	fresh := testutil.StartJVM(t, jdk, opts)
	// run runs a row's command with caps and tells whether it worked: exit status 0, and for the commands
	// that report a failure per JVM without failing (gjcmd -l lists what it can read; the agent logs and goes
	// on) the JVM listed, a profile written.
	run := func(j *testutil.JVM, r capRow, caps []string) (bool, string) {
		t.Helper()
		pid := strconv.Itoa(j.PID)
		work := t.TempDir()
		if err := os.Chmod(work, 0o777); err != nil {
			t.Fatal(err)
		}
		// The agent writes only where nobody but root and its user can change the path.
		profileDir := filepath.Join(t.TempDir(), "profiles")
		words := strings.Fields(r.command)
		args := []string{"--bounding-set=-all", "--inh-caps=-all", "--", filepath.Join(bin, words[0])}
		for i, w := range words[1:] {
			switch w {
			case "PID":
				w = pid
			case "OUT":
				w = filepath.Join(work, "out-"+strconv.Itoa(i))
			case "DIR":
				w = profileDir
			}
			args = append(args, w)
		}
		if len(caps) > 0 {
			args[0] += ",+" + strings.ToLower(strings.Join(caps, ",+"))
		}
		cmd := exec.Command(setpriv, args...)
		out, _ := cmd.CombinedOutput()
		os.Remove("/tmp/perf-" + pid + ".map")
		ok := cmd.ProcessState.ExitCode() == 0
		switch {
		case r.command == "gjcmd -l":
			ok = ok && slices.ContainsFunc(strings.Split(string(out), "\n"), func(l string) bool { return strings.HasPrefix(l, pid+" ") })
		case strings.HasPrefix(r.command, "jvmkit agent"):
			profiles, _ := filepath.Glob(filepath.Join(profileDir, "*.pb.gz"))
			ok = ok && len(profiles) > 0
		}
		return ok, fmt.Sprintf("exit %d: %s", cmd.ProcessState.ExitCode(), out)
	}
	rows := readCapTable(t)
	// The rows that load a JVMTI agent last, in a JVM of their own: the library stays mapped in the JVM
	// (deleted from its /tmp), which the USDT rows would then have to read through map_files.
	loads := func(r capRow) bool {
		return strings.Contains(r.command, "agent") || strings.Contains(r.command, "--heap-sampling")
	}
	sort.SliceStable(rows, func(i, j int) bool { return !loads(rows[i]) && loads(rows[j]) })
	parent := t
	for _, r := range rows {
		t.Run(strings.ReplaceAll(r.command, "/", "_"), func(t *testing.T) {
			j := shared
			if strings.Contains(r.command, "--strategy agent") || strings.Contains(r.command, "--heap-sampling") {
				if own == nil {
					own = testutil.StartJVM(parent, jdk, opts) // for every such row: it ends with the test
				}
				j = own
			}
			if ok, out := run(j, r, r.caps); !ok {
				t.Fatalf("with %v: %s", r.caps, out)
			}
			for _, c := range r.caps {
				less := slices.DeleteFunc(slices.Clone(r.caps), func(x string) bool { return x == c })
				target := j
				if c == "KILL" {
					// No listener yet: the attach must signal. A failed attach leaves it so, and the next
					// row's check without CAP_KILL uses the same JVM.
					if fresh == nil {
						fresh = testutil.StartJVM(t, jdk, opts) // this row's alone: it ends with the subtest
						defer func() { fresh = nil }()
					}
					target = fresh
				}
				if ok, out := run(target, r, less); ok {
					t.Errorf("works without CAP_%s (with %v): the table asks for more than it needs\n%s", c, less, out)
					if target == fresh {
						fresh = nil // its listener runs now
					}
				} else {
					t.Logf("without CAP_%s: %s", c, firstLine(out))
					// A container's root lacks most of these: what failed must say which one.
					if !strings.Contains(out, "CAP_"+c) {
						t.Errorf("without CAP_%s it fails without naming CAP_%s:\n%s", c, c, out)
					}
				}
			}
		})
	}
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}

// TestImage runs the amd64 image under podman (runc) as the debug profile runs it: the host's pid
// namespace, the host's /tmp on /tmp, all capabilities dropped but deploy/debug-attach.json's. Against a
// JDK 17 JVM on the host, gjcmd -l lists it, gjcmd PID VM.version answers and gjmaps -p PID writes its map.
// The image is pulled into podman's store for the test and removed after it.
func TestImage(t *testing.T) {
	testutil.MustHaveRoot(t)
	podman := testutil.MustHaveTool(t, "podman")
	archive := distFile(t, builtDist(t, 0), "*_linux_amd64.oci.tar")
	b, err := os.ReadFile("../../deploy/debug-attach.json")
	if err != nil {
		t.Fatal(err)
	}
	var profile corev1.Container
	if err := yaml.UnmarshalStrict(b, &profile); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(podman, "pull", "-q", "oci-archive:"+archive).Output()
	if err != nil {
		t.Fatalf("podman pull oci-archive:%s: %v", archive, err)
	}
	id := strings.TrimSpace(string(out))
	t.Cleanup(func() {
		if out, err := exec.Command(podman, "rmi", "--force", id).CombinedOutput(); err != nil {
			t.Errorf("podman rmi %s: %v\n%s", id, err, out)
		}
	})
	var nofile unix.Rlimit
	_ = unix.Getrlimit(unix.RLIMIT_NOFILE, &nofile)
	// runc may only lower podman's default limits (1048576) without CAP_SYS_RESOURCE: ours, then.
	args := []string{"--runtime", "runc", "run", "--rm", "--network", "none", "--pid", "host",
		"--ulimit", fmt.Sprintf("nofile=%d:%d", nofile.Cur, nofile.Max), "--ulimit", "nproc=32768:32768",
		"--cap-drop", "all", "--volume", "/tmp:/tmp"}
	for _, c := range profile.SecurityContext.Capabilities.Add {
		args = append(args, "--cap-add", string(c))
	}
	args = append(args, id)
	j := testutil.StartJVM(t, testutil.JDK17(t), testutil.JVMOptions{UID: 1000, GID: 1000})
	pid := strconv.Itoa(j.PID)
	run := func(tool ...string) string {
		t.Helper()
		out, err := exec.Command(podman, append(slices.Clone(args), tool...)...).CombinedOutput()
		if err != nil {
			t.Errorf("podman run %v: %v\n%s", tool, err, out)
		}
		return string(out)
	}
	if out := run("gjcmd", "-l"); !slices.ContainsFunc(strings.Split(out, "\n"), func(l string) bool { return strings.HasPrefix(l, pid+" ") }) {
		t.Errorf("gjcmd -l in the image does not list %s:\n%s", pid, out)
	}
	if out := run("gjcmd", pid, "VM.version"); !strings.Contains(out, "JDK") {
		t.Errorf("gjcmd %s VM.version in the image:\n%s", pid, out)
	}
	mapFile := "/tmp/perf-" + pid + ".map"
	t.Cleanup(func() { os.Remove(mapFile) })
	run("gjmaps", "-p", pid)
	if st, err := os.Stat(mapFile); err != nil || st.Size() == 0 {
		t.Errorf("gjmaps -p %s in the image wrote no map on the host: %v", pid, err)
	}
}
