package testutil

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestParseRelease(t *testing.T) {
	tests := []struct {
		file    string
		feature int
		version string
	}{
		{"release-17-debian", 17, "17.0.15+6-Debian-1deb12u1"},
		{"release-25-temurin", 25, "25.0.3+9-LTS"},
	}
	for _, tt := range tests {
		feature, version, err := parseRelease(readTestdata(t, tt.file))
		if err != nil || feature != tt.feature || version != tt.version {
			t.Errorf("parseRelease(%s) = %d, %q, %v; want %d, %q", tt.file, feature, version, err, tt.feature, tt.version)
		}
	}
	// JDK 8 builds write no JAVA_RUNTIME_VERSION.
	feature, version, err := parseRelease([]byte("JAVA_VERSION=\"1.8.0_452\"\nOS_NAME=\"Linux\"\n"))
	if err != nil || feature != 8 || version != "1.8.0_452" {
		t.Errorf("parseRelease(JDK 8) = %d, %q, %v", feature, version, err)
	}
	for _, bad := range []string{"", "IMPLEMENTOR=\"x\"\n", "JAVA_VERSION=\"\"\n", "JAVA_VERSION=\"abc\"\n"} {
		if _, _, err := parseRelease([]byte(bad)); err == nil {
			t.Errorf("parseRelease(%q) succeeded", bad)
		}
	}
}

func TestParseJavaVersion(t *testing.T) {
	tests := []struct {
		name, out string
		feature   int
		version   string
	}{
		{"17 Debian", string(readTestdata(t, "java-version-17-debian.txt")), 17, "17.0.15+6-Debian-1deb12u1"},
		{"25 Temurin", string(readTestdata(t, "java-version-25-temurin.txt")), 25, "25.0.3+9-LTS"},
		{"8", "openjdk version \"1.8.0_452\"\nOpenJDK Runtime Environment (build 1.8.0_452-b09)\n" +
			"OpenJDK 64-Bit Server VM (build 25.452-b09, mixed mode)\n", 8, "1.8.0_452-b09"},
		{"picked up", "Picked up JAVA_TOOL_OPTIONS: -Dx=(build 1)\nopenjdk version \"21\" 2023-09-19\n" +
			"OpenJDK Runtime Environment (build 21+35)\n", 21, "21+35"},
		{"no build line", "java version \"11.0.2\"\n", 11, "11.0.2"},
	}
	for _, tt := range tests {
		feature, version, err := parseJavaVersion([]byte(tt.out))
		if err != nil || feature != tt.feature || version != tt.version {
			t.Errorf("%s: parseJavaVersion = %d, %q, %v; want %d, %q", tt.name, feature, version, err, tt.feature, tt.version)
		}
	}
	if _, _, err := parseJavaVersion([]byte("Error: could not find libjava.so\n")); err == nil {
		t.Error("parseJavaVersion(error output) succeeded")
	}
}

func TestFeatureOf(t *testing.T) {
	good := map[string]int{"17.0.15": 17, "17": 17, "17-ea": 17, "25+36": 25, "1.8.0_452": 8, "1.7.0": 7, "9": 9, "21.0.1.0.1": 21}
	for v, want := range good {
		if got, err := featureOf(v); err != nil || got != want {
			t.Errorf("featureOf(%q) = %d, %v; want %d", v, got, err, want)
		}
	}
	for _, v := range []string{"", "abc", "0", "-17", " 17", "99999999999999999999", "1001"} {
		if got, err := featureOf(v); err == nil {
			t.Errorf("featureOf(%q) = %d, want an error", v, got)
		}
	}
}

func TestParseUnixSockets(t *testing.T) {
	data := []byte("Num       RefCount Protocol Flags    Type St Inode Path\n" +
		"0000000000000000: 00000002 00000000 00010000 0001 01 41623 /tmp/.java_pid2304\n" +
		"0000000000000000: 00000002 00000000 00010000 0001 01 41624 /tmp/.java_pid23041\n" +
		"0000000000000000: 00000003 00000000 00000000 0001 03 41625\n" +
		"0000000000000000: 00000002 00000000 00010000 0001 01 41626 /tmp/.java_pid2304\n" +
		"0000000000000000: 00000002 00000000 00010000 0001 01 41627 /tmp/with space\n")
	if diff := cmp.Diff([]uint64{41623, 41626}, parseUnixSockets(data, "/tmp/.java_pid2304")); diff != "" {
		t.Errorf("parseUnixSockets mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]uint64{41627}, parseUnixSockets(data, "/tmp/with space")); diff != "" {
		t.Errorf("parseUnixSockets mismatch (-want +got):\n%s", diff)
	}
}

func TestParseHsperfdata(t *testing.T) {
	maps := []byte("7f0000000000-7f0000008000 rw-s 00000000 00:1f 1234 /tmp/hsperfdata_root/42\n" +
		"7f0000010000-7f0000018000 r-xp 00000000 08:01 99 /usr/lib/jvm/java-17/lib/server/libjvm.so\n")
	if got := parseHsperfdata(maps, 42); got != "/tmp/hsperfdata_root/42" {
		t.Errorf("parseHsperfdata = %q", got)
	}
	if got := parseHsperfdata(maps, 4); got != "" {
		t.Errorf("parseHsperfdata(nspid 4) = %q, want none", got)
	}
}

func TestDiscoverJDKs(t *testing.T) {
	dir := t.TempDir()
	fakeJDK := func(name, release string, tools ...string) string {
		home := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Join(home, "bin"), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, tool := range tools {
			if err := os.WriteFile(filepath.Join(home, "bin", tool), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(home, "release"), []byte(release), 0o644); err != nil {
			t.Fatal(err)
		}
		return home
	}
	jvm := filepath.Join(dir, "jvm")
	if err := os.Mkdir(jvm, 0o755); err != nil {
		t.Fatal(err)
	}
	fakeJDK("jvm/java-21", `JAVA_VERSION="21.0.1"`, "java", "javac")
	fakeJDK("jvm/java-17", "JAVA_VERSION=\"17.0.2\"\nJAVA_RUNTIME_VERSION=\"17.0.2+8\"\n", "java", "javac", "jcmd")
	fakeJDK("jvm/jre-11", `JAVA_VERSION="11.0.2"`, "java") // a JRE: no javac
	if err := os.Symlink("java-17", filepath.Join(jvm, "java-1.17.0")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(jvm, ".java-1.17.0.jinfo"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	extra := fakeJDK("elsewhere-8", `JAVA_VERSION="1.8.0_452"`, "java", "javac")

	// The set-up cache: an extract that runs on the host, a root filesystem, and entries that do not count (no
	// stamp: still being built, or not the set-up's).
	cache := filepath.Join(dir, "cache")
	fakeJDK("cache/jdk11-root/usr/lib/jvm/java-11", `JAVA_VERSION="11.0.24"`, "java", "javac", "jcmd")
	fakeJDK("cache/trixie-rootfs/usr/lib/jvm/java-25", `JAVA_VERSION="25.0.5"`, "java", "javac", "jcmd")
	if err := os.Symlink("java-25", filepath.Join(cache, "trixie-rootfs/usr/lib/jvm/java-1.25.0")); err != nil {
		t.Fatal(err)
	}
	// A link that leads out of the root would name a host file: not a JDK of that root.
	if err := os.Symlink(filepath.Join(jvm, "java-21"), filepath.Join(cache, "trixie-rootfs/usr/lib/jvm/escape")); err != nil {
		t.Fatal(err)
	}
	fakeJDK("cache/trixie-rootfs.build/usr/lib/jvm/java-21", `JAVA_VERSION="21.0.1"`, "java", "javac")
	fakeJDK("cache/other-root/usr/lib/jvm/java-22", `JAVA_VERSION="22"`, "java", "javac")
	for _, entry := range []string{"jdk11-root", "trixie-rootfs"} {
		if err := os.WriteFile(filepath.Join(cache, entry, stampFile), []byte("recipe: x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	d := discoverJDKs(jvm, []string{extra, filepath.Join(jvm, "java-17"), filepath.Join(dir, "missing")}, cache)
	rootfs := filepath.Join(cache, "trixie-rootfs")
	want := []JDK{
		{Home: extra, Feature: 8, Version: "1.8.0_452"},
		{Home: filepath.Join(cache, "jdk11-root/usr/lib/jvm/java-11"), Feature: 11, Version: "11.0.24"},
		{Home: filepath.Join(jvm, "java-17"), Feature: 17, Version: "17.0.2+8"},
		{Home: filepath.Join(jvm, "java-21"), Feature: 21, Version: "21.0.1"},
		{Home: filepath.Join(rootfs, "usr/lib/jvm/java-25"), Feature: 25, Version: "25.0.5", Root: rootfs},
	}
	if diff := cmp.Diff(want, d.jdks, cmp.AllowUnexported(JDK{})); diff != "" {
		t.Errorf("discoverJDKs mismatch (-want +got):\n%s", diff)
	}
	if len(d.errs) != 1 {
		t.Errorf("discoverJDKs errors = %v, want one for the missing explicit home", d.errs)
	}

	names := make([]string, 0, len(d.jdks))
	for _, j := range d.jdks {
		names = append(names, j.Name())
	}
	if want := []string{"jdk8", "jdk11", "jdk17", "jdk21", "jdk25-trixie"}; !slices.Equal(names, want) {
		t.Errorf("names %v, want %v", names, want)
	}
	if got, want := d.jdks[4].JavaHome(), "/usr/lib/jvm/java-25"; got != want {
		t.Errorf("JavaHome() = %q, want %q", got, want)
	}
}

func TestSelectJDKs(t *testing.T) {
	cache := cacheDir()
	all := []JDK{
		{Home: cache + "/jdk11-root/usr/lib/jvm/java-11-openjdk-amd64", Feature: 11},
		{Home: "/usr/lib/jvm/java-17-openjdk-amd64", Feature: 17},
		{Home: cache + "/trixie-rootfs/usr/lib/jvm/java-21-openjdk-amd64", Feature: 21, Root: cache + "/trixie-rootfs"},
		{Home: "/usr/lib/jvm/temurin-25-jdk-amd64", Feature: 25},
		{Home: cache + "/trixie-rootfs/usr/lib/jvm/java-25-openjdk-amd64", Feature: 25, Root: cache + "/trixie-rootfs"},
	}
	names := func(jdks []JDK) string {
		var n []string
		for _, j := range jdks {
			n = append(n, j.Name())
		}
		return strings.Join(n, ",")
	}
	for _, tc := range []struct{ sel, want string }{
		{"all", "jdk11,jdk17,jdk21-trixie,jdk25,jdk25-trixie"},
		{"", "jdk11,jdk17,jdk21-trixie,jdk25,jdk25-trixie"}, // the default
		{"host", "jdk17,jdk25"},
		{"jdk25-trixie, jdk17", "jdk17,jdk25-trixie"},
		{"jdk17,jdk17", "jdk17"},
	} {
		got, err := selectJDKs(all, tc.sel)
		if err != nil || names(got) != tc.want {
			t.Errorf("selectJDKs(%q) = %s, %v; want %s", tc.sel, names(got), err, tc.want)
		}
	}
	if _, err := selectJDKs(all, "jdk99"); err == nil || !strings.Contains(err.Error(), "jdk21-trixie") {
		t.Errorf("selectJDKs(jdk99) error %v, want one that lists the JDKs found", err)
	}

	// What the set-up should have provided and is missing, for the selection.
	if got := missingSetupJDKs(all, "all", cache); len(got) != 0 {
		t.Errorf("missingSetupJDKs(all) = %v, want none", got)
	}
	if got := missingSetupJDKs(all[1:4], "all", cache); len(got) != 2 {
		t.Errorf("missingSetupJDKs without jdk11 and jdk25-trixie = %v, want both", got)
	}
	if got := missingSetupJDKs(all[1:4], "host", cache); len(got) != 0 {
		t.Errorf("missingSetupJDKs(host) = %v, want none: host selects none of the set-up's JDKs", got)
	}
	if got := missingSetupJDKs(all[1:4], "jdk17, jdk11", cache); len(got) != 1 {
		t.Errorf("missingSetupJDKs(jdk17,jdk11) = %v, want jdk11", got)
	}
}

func FuzzParseRelease(f *testing.F) {
	f.Add(readTestdata(f, "release-17-debian"))
	f.Add(readTestdata(f, "release-25-temurin"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if feature, _, err := parseRelease(data); err == nil && feature <= 0 {
			t.Errorf("parseRelease accepted feature %d", feature)
		}
	})
}

func FuzzParseJavaVersion(f *testing.F) {
	f.Add(readTestdata(f, "java-version-17-debian.txt"))
	f.Add(readTestdata(f, "java-version-25-temurin.txt"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if feature, _, err := parseJavaVersion(data); err == nil && feature <= 0 {
			t.Errorf("parseJavaVersion accepted feature %d", feature)
		}
	})
}

// FuzzParseProc covers the parsers of /proc files that internal/procfs has no counterpart for; status and
// stat are fuzzed there.
func FuzzParseProc(f *testing.F) {
	f.Add([]byte("0000000000000000: 00000002 00000000 00010000 0001 01 41623 /tmp/.java_pid2304\n"))
	f.Add([]byte("7f0000000000-7f0000008000 rw-s 00000000 00:1f 1234 /tmp/hsperfdata_root/1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_ = parseUnixSockets(data, "/tmp/.java_pid2304")
		_ = parseHsperfdata(data, 1)
	})
}

func TestParseLoad(t *testing.T) {
	const wrkOK = `Running 3s test @ http://127.0.0.1:40000/
  1 threads and 8 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency    53.79ms  130.19ms   1.32s    94.26%
    Req/Sec   395.29    192.93     0.92k    69.47%
  5190 requests in 14.03s, 8.78MB read
Requests/sec:    369.85
Transfer/sec:    640.51KB
`
	const wrkErrors = `Running 3s test @ http://127.0.0.1:40000/
  1 threads and 8 connections
  120 requests in 3.00s, 1.00MB read
  Socket errors: connect 0, read 2, write 0, timeout 3
  Non-2xx or 3xx responses: 7
Requests/sec:     40.00
`
	for _, tc := range []struct {
		name, out      string
		parse          func(string) (LoadResult, error)
		requests, errs int64
		fail           bool
	}{
		{"wrk", wrkOK, parseWrk, 5190, 0, false},
		{"wrk errors", wrkErrors, parseWrk, 120, 12, false},
		{"wrk refused", "unable to connect to 127.0.0.1:1 Connection refused\n", parseWrk, 0, 0, true},
		{"h2load", "ready\nops 216 errors 0\n", parseH2Load, 216, 0, false},
		{"h2load errors", "ready\nops 10 errors 3\n", parseH2Load, 10, 3, false},
		{"h2load died", "ready\n", parseH2Load, 0, 0, true},
	} {
		r, err := tc.parse(tc.out)
		if (err != nil) != tc.fail || r.Requests != tc.requests || r.Errors != tc.errs {
			t.Errorf("%s: %d requests, %d errors, %v; want %d, %d, failure %v", tc.name, r.Requests, r.Errors, err,
				tc.requests, tc.errs, tc.fail)
		}
	}
}
