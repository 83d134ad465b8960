package procfs

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const (
	id1 = "4fa1c5e2b3d4f5061728394a5b6c7d8e9f0a1b2c3d4e5f60718293a4b5c6d7e8"
	id2 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
)

func TestParseCgroup(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"v2", "0::/system.slice/docker-" + id1 + ".scope\n", "/system.slice/docker-" + id1 + ".scope"},
		{"v2 root", "0::/\n", "/"},
		{"hybrid", "12:pids:/user.slice\n1:name=systemd:/user.slice/session-3.scope\n0::/user.slice/session-3.scope\n", "/user.slice/session-3.scope"},
		{"v1 container", "12:pids:/\n11:memory:/docker/" + id1 + "\n", "/docker/" + id1},
		{"v1 plain", "3:cpu,cpuacct:/user.slice\n2:pids:/x\n", "/user.slice"},
		{"hybrid, id only in v1", "4:memory:/docker/" + id1 + "\n0::/\n", "/docker/" + id1},
		{"path with colon", "0::/a:b\n", "/a:b"},
		{"empty", "", ""},
		{"garbage", "zzz\n:\n::\n1:2\n", ""},
	} {
		if got := ParseCgroup([]byte(tc.in)); got != tc.want {
			t.Errorf("%s: ParseCgroup = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestContainerOf(t *testing.T) {
	const pod = "0b6e2c5a-1f2e-4d3c-9b8a-7c6d5e4f3a2b"
	podSystemd := strings.ReplaceAll(pod, "-", "_")
	for _, tc := range []struct {
		name, path string
		want       Container
	}{
		{"host", "/user.slice/user-0.slice/session-1.scope", Container{}},
		{"docker systemd", "/system.slice/docker-" + id1 + ".scope", Container{ID: id1, Runtime: "docker"}},
		{"docker cgroupfs", "/docker/" + id1, Container{ID: id1}},
		{"podman", "/machine.slice/libpod-" + id1 + ".scope/container", Container{ID: id1, Runtime: "libpod"}},
		{"podman conmon", "/machine.slice/libpod-conmon-" + id1 + ".scope", Container{}},
		{"k8s containerd systemd", "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + podSystemd + ".slice/cri-containerd-" + id1 + ".scope",
			Container{ID: id1, Runtime: "cri-containerd", PodUID: pod}},
		{"k8s crio", "/kubepods.slice/kubepods-pod" + podSystemd + ".slice/crio-" + id2 + ".scope", Container{ID: id2, Runtime: "crio", PodUID: pod}},
		{"k8s cgroupfs", "/kubepods/besteffort/pod" + pod + "/" + id2, Container{ID: id2, PodUID: pod}},
		{"nested: innermost", "/docker/" + id1 + "/docker/" + id2, Container{ID: id2}},
		{"short hex", "/docker/abcdef", Container{}},
		{"upper hex", "/docker/" + strings.ToUpper(id1), Container{}},
	} {
		if diff := cmp.Diff(tc.want, ContainerOf(tc.path)); diff != "" {
			t.Errorf("%s: ContainerOf(%q) (-want +got):\n%s", tc.name, tc.path, diff)
		}
	}
}

func FuzzParseCgroup(f *testing.F) {
	f.Add([]byte("0::/kubepods.slice/kubepods-pod0b6e2c5a_1f2e_4d3c_9b8a_7c6d5e4f3a2b.slice/cri-containerd-" + id1 + ".scope\n"))
	f.Add([]byte("12:pids:/\n11:memory:/docker/" + id1 + "\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p := ParseCgroup(b)
		if p != "" && p[0] != '/' {
			t.Fatalf("ParseCgroup = %q: not a path", p)
		}
		c := ContainerOf(p)
		if c.ID != "" && len(c.ID) != 64 {
			t.Fatalf("ContainerOf(%q).ID = %q", p, c.ID)
		}
	})
}

func TestParseEnviron(t *testing.T) {
	got := ParseCmdline([]byte("A=1\x00OTEL_SERVICE_NAME=shop\x00\x00"))
	if diff := cmp.Diff([]string{"A=1", "OTEL_SERVICE_NAME=shop"}, got); diff != "" {
		t.Error(diff)
	}
}
