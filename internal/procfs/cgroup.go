package procfs

import (
	"bytes"
	"iter"
	"strings"

	"github.com/jvmkit/jvmkit/internal/lazyre"
)

// ParseCgroup returns the cgroup path of a process from the text of /proc/<pid>/cgroup: the first
// path that names a container (ContainerOf), the unified hierarchy's ("0::/path", cgroup v2) before
// the v1 ones; else the unified path; else the first v1 path. On hybrid hosts the unified path can be
// "/" while a v1 hierarchy has the container's. It returns "" for empty or unrecognised text.
func ParseCgroup(b []byte) string {
	var unified string
	var v1 []string
	for l := range cgroupLines(b) {
		if l.unified() {
			unified = l.path
		} else {
			v1 = append(v1, l.path)
		}
	}
	for _, p := range append([]string{unified}, v1...) {
		if p != "" && ContainerOf(p).ID != "" {
			return p
		}
	}
	if unified != "" {
		return unified
	}
	if len(v1) > 0 {
		return v1[0]
	}
	return ""
}

// cgroupLine is a line of /proc/<pid>/cgroup: hierarchy-ID:controller-list:cgroup-path.
type cgroupLine struct{ id, controllers, path string }

// unified reports the line of the unified hierarchy (cgroup v2): "0::/path".
func (l cgroupLine) unified() bool { return l.id == "0" && l.controllers == "" }

// cgroupLines yields the lines of /proc/<pid>/cgroup text whose path is absolute (the path may itself
// contain ':').
func cgroupLines(b []byte) iter.Seq[cgroupLine] {
	return func(yield func(cgroupLine) bool) {
		for line := range bytes.SplitSeq(b, []byte("\n")) {
			parts := bytes.SplitN(bytes.TrimSpace(line), []byte(":"), 3)
			if len(parts) != 3 || len(parts[2]) == 0 || parts[2][0] != '/' {
				continue
			}
			if !yield(cgroupLine{string(parts[0]), string(parts[1]), string(parts[2])}) {
				return
			}
		}
	}
}

// Container is what a cgroup path tells about the container a process runs in.
type Container struct {
	// ID is the container's id as its runtime names it (64 hex digits for docker, podman, containerd
	// and CRI-O), empty outside a container.
	ID string
	// Runtime is the runtime the path names ("docker", "libpod", "cri-containerd", "crio"), or empty
	// when the path says only "an id" (cgroupfs-driven Kubernetes, plain docker).
	Runtime string
	// PodUID is the Kubernetes pod's UID ("0b6e2c5a-..."), empty outside Kubernetes.
	PodUID string
}

var (
	// Compiled on first use: gjcmd links this package and should not pay for them at start-up.
	// A 64-hex-digit id as a path element of its own or after a runtime prefix, in a ".scope" unit
	// (systemd driver) or bare (cgroupfs driver): "docker-<id>.scope", "cri-containerd-<id>.scope",
	// "crio-<id>.scope", "libpod-<id>.scope", "/docker/<id>", "/kubepods/burstable/pod<uid>/<id>".
	containerRE = &lazyre.Regexp{Expr: `^(?:([a-z][a-z0-9-]*)-)?([0-9a-f]{64})(?:\.scope)?$`}
	// "pod<uid>" (cgroupfs) or "kubepods-<qos>-pod<uid with _ for ->.slice" (systemd).
	podRE = &lazyre.Regexp{Expr: `pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})(?:\.slice)?(?:/|$)`}
)

// ContainerOf reads a cgroup path (as ParseCgroup returns it) for a container id and a Kubernetes pod
// UID. The innermost id wins: podman's "libpod-<id>.scope/container" and nested runtimes name the
// container the process is in last. A conmon's scope ("libpod-conmon-<id>.scope") is not the
// container's.
func ContainerOf(path string) Container {
	var c Container
	for elem := range strings.SplitSeq(path, "/") {
		m := containerRE.Get().FindStringSubmatch(elem)
		if m == nil || strings.HasSuffix(m[1], "-conmon") || m[1] == "conmon" {
			continue
		}
		c.ID, c.Runtime = m[2], m[1]
	}
	if m := podRE.Get().FindStringSubmatch(path); m != nil {
		c.PodUID = strings.ReplaceAll(m[1], "_", "-")
	}
	return c
}
