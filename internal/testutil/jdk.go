package testutil

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	// jvmDir is where Debian packages and most vendor .debs install JDKs.
	jvmDir = "/usr/lib/jvm"
	// ExtraJDKsEnv names the environment variable with extra JDK homes, separated by colons.
	ExtraJDKsEnv = "JVMKIT_JDKS"
	// CacheEnv names the environment variable with scripts/setup's cache (default /var/cache/jvmkit): JDKs
	// extracted from other Debian releases (<name>-root) and root filesystems with their JDKs (<name>-rootfs).
	CacheEnv     = "JVMKIT_CACHE"
	defaultCache = "/var/cache/jvmkit"
	// TestJDKsEnv selects the JDKs that [JDKs] and [ForEachJDK] return: "all", "host" (the host's own:
	// /usr/lib/jvm and $JVMKIT_JDKS, not the set-up cache's), or JDK names separated by commas
	// ("jdk17,jdk21-trixie"). Unset, it is defaultTestJDKs.
	TestJDKsEnv = "JVMKIT_TEST_JDKS"
	// defaultTestJDKs is what an unset $JVMKIT_TEST_JDKS means: every JDK, the set-up cache's included (make
	// test puts every JDK in every tier; see Depth for how it stays within its time).
	defaultTestJDKs = "all"
	// FullJDKsEnv selects, with the syntax of [TestJDKsEnv], the JDKs on which the expensive tiers run their
	// full depth (see [Depth]); on the others they run a smoke pass. Unset, it is defaultFullJDKs.
	FullJDKsEnv = "JVMKIT_TEST_FULL_JDKS"
	// defaultFullJDKs: JDK 17, the one every live test needs, carries the full depth; the other four at smoke
	// depth keep make test within its 35 minutes on two cores (measured: a JDK at full depth costs about
	// 10 CPU minutes of make test, at smoke depth about 4).
	defaultFullJDKs = "jdk17"
	// requiredFeature is the JDK every live test runs on; the others are a bonus.
	requiredFeature = 17
	// stampFile marks a cache entry that scripts/setup finished and published.
	stampFile = ".jvmkit-stamp"
)

// setupJDKs are the JDKs that scripts/setup puts in its cache (keep in step with it): with CI set, a missing
// one fails the tests that ask for it instead of quietly testing less.
var setupJDKs = []struct {
	dir     string // cache entry
	feature int
}{
	{"jdk11-root", 11},
	{"trixie-rootfs", 21},
	{"trixie-rootfs", 25},
}

// JDK is one installed JDK.
type JDK struct {
	Home    string // real path of the JDK home as the host sees it (symlinks resolved)
	Feature int    // feature release: 8, 17, 25, ...
	Version string // full runtime version, e.g. 17.0.15+6-Debian-1deb12u1

	// Root is the root filesystem the JDK belongs to, as the host sees it, or "" for a JDK that runs on the
	// host. Such a JDK needs its root's libraries (trixie's glibc is newer than the host's), so its programs
	// run in a private mount namespace in which Root's /usr and /etc replace the host's; everything else
	// (/tmp, /var/tmp, /proc, the tests' files) is the host's. Its JVMs see Home at [JDK.JavaHome]. Running
	// them needs root.
	Root string

	tools string // for a JDK in a Root: the directory of host-runnable wrappers of its tools
}

// Bin returns the path of a tool of the JDK that the host can run: the file in the JDK's bin directory, or for
// a JDK in a [JDK.Root] a wrapper script that runs it with its root's libraries (it needs root). Paths in the
// tool's arguments mean what they mean on the host.
func (j JDK) Bin(tool string) string {
	if j.Root != "" {
		return filepath.Join(j.tools, tool)
	}
	return filepath.Join(j.Home, "bin", tool)
}

// JavaHome returns the JDK's home as its own processes see it (java.home, and /proc/<pid>/exe's directory): Home,
// or for a JDK in a [JDK.Root] the path inside that root.
func (j JDK) JavaHome() string {
	if j.Root != "" {
		return "/" + strings.TrimPrefix(strings.TrimPrefix(j.Home, j.Root), "/")
	}
	return j.Home
}

// Name returns "jdk<feature>", and for a JDK in a root filesystem "jdk<feature>-<root>" (jdk21-trixie), used as
// subtest name. Two builds of the same feature get the same name; t.Run disambiguates them with a "#01" suffix.
func (j JDK) Name() string {
	name := "jdk" + strconv.Itoa(j.Feature)
	if j.Root != "" {
		name += "-" + strings.TrimSuffix(filepath.Base(j.Root), "-rootfs")
	}
	return name
}

// String describes the JDK for failure messages.
func (j JDK) String() string {
	if j.Root != "" {
		return fmt.Sprintf("%s %s (%s in %s)", j.Name(), j.Version, j.JavaHome(), j.Root)
	}
	return fmt.Sprintf("%s %s (%s)", j.Name(), j.Version, j.Home)
}

// JDKs returns the JDKs that $JVMKIT_TEST_JDKS selects (see [TestJDKsEnv]) from those under /usr/lib/jvm, in
// $JVMKIT_JDKS and in the set-up cache, deduplicated by the real path of bin/java (Debian installs aliases such
// as java-1.17.0-openjdk-amd64 -> java-17-openjdk-amd64) and sorted by feature release. A directory without
// bin/java and bin/javac is not a JDK and is ignored, except when $JVMKIT_JDKS names it: then the test fails.
// With CI set, a selected JDK that scripts/setup provides but that is missing fails the test. Like
// [MustHaveJava], it skips the test when JDK 17 is missing.
func JDKs(t testing.TB) []JDK {
	t.Helper()
	SkipInShort(t, "JDKs")
	d := discover()
	if len(d.errs) > 0 {
		t.Fatalf("%s: %v", ExtraJDKsEnv, errors.Join(d.errs...))
	}
	jdk17(t)
	jdks, err := selectJDKs(d.jdks, os.Getenv(TestJDKsEnv))
	if err != nil {
		t.Fatalf("%v", err)
	}
	if os.Getenv("CI") != "" {
		if missing := missingSetupJDKs(d.jdks, os.Getenv(TestJDKsEnv), cacheDir()); len(missing) > 0 {
			t.Fatalf("CI is set, and scripts/setup should have provided %s in %s: run scripts/setup",
				strings.Join(missing, ", "), cacheDir())
		}
	}
	for i, jdk := range jdks {
		if jdk.Root != "" {
			jdks[i].tools = rootTools(t, jdk)
		}
	}
	return jdks
}

// JDK17 returns the JDK 17 every live test needs, or skips the test (see [Skipf]).
func JDK17(t testing.TB) JDK {
	t.Helper()
	return jdk17(t)
}

// ForEachJDK runs f as a subtest named jdk.Name() for every JDK of [JDKs]. The subtests are not parallel
// unless f calls t.Parallel; each gets its own copy of jdk. The subtest of a JDK in a root filesystem needs root
// and skips without it (fails with CI set).
func ForEachJDK(t *testing.T, f func(t *testing.T, jdk JDK)) {
	t.Helper()
	for _, jdk := range JDKs(t) {
		t.Run(jdk.Name(), func(t *testing.T) {
			if jdk.Root != "" {
				MustHaveRoot(t)
			}
			f(t, jdk)
		})
	}
}

// Depth is how much of an expensive tier runs on one JDK. The suite puts every JDK in every tier, but not
// every tier at its full depth on every JDK: checks whose outcome depends on the JDK (the attach protocol,
// VMStructs types, threads, flags and code cache, the unwinder, USDT probes, perf map strategies, the JFR
// reader) run whole on every JDK through [ForEachJDK]; application-level tiers whose cost is in load and
// windows rather than in JDK differences (the real applications) run through [ForEachJDKDepth], whole on the
// JDKs $JVMKIT_TEST_FULL_JDKS selects and as a smoke pass on the others (see doc.go, "Coverage rule").
type Depth int

const (
	// Smoke is one short pass that proves the tier works on the JDK: its JVM starts, jvmkit attaches and its
	// figures agree with the oracle, without the tier's breadth (every application, collector and window).
	Smoke Depth = iota
	// Full is everything the tier checks.
	Full
)

func (d Depth) String() string {
	if d == Full {
		return "full"
	}
	return "smoke"
}

// DepthOf returns the depth of the expensive tiers on jdk: [Full] if $JVMKIT_TEST_FULL_JDKS (see [FullJDKsEnv];
// default "jdk17") selects it, else [Smoke]. A selection that names no JDK found fails the test.
func DepthOf(t testing.TB, jdk JDK) Depth {
	t.Helper()
	full, err := selectJDKs(discover().jdks, cmp.Or(strings.TrimSpace(os.Getenv(FullJDKsEnv)), defaultFullJDKs))
	if err != nil {
		t.Fatalf("%s: %v", FullJDKsEnv, err)
	}
	if slices.ContainsFunc(full, func(j JDK) bool { return j.Home == jdk.Home }) {
		return Full
	}
	return Smoke
}

// ForEachJDKDepth is [ForEachJDK] for an expensive tier: f also gets the tier's [Depth] on the JDK, and runs
// its full checks only at [Full].
func ForEachJDKDepth(t *testing.T, f func(t *testing.T, jdk JDK, depth Depth)) {
	t.Helper()
	ForEachJDK(t, func(t *testing.T, jdk JDK) { f(t, jdk, DepthOf(t, jdk)) })
}

// ForEachFullJDK runs f as a subtest for every JDK of [JDKs] at [Full] depth only: for a check that another
// tier's smoke pass already covers on the other JDKs (the test's comment names which), so that those JDKs
// neither pay for it twice nor show a skip for something that is tested.
func ForEachFullJDK(t *testing.T, f func(t *testing.T, jdk JDK)) {
	t.Helper()
	for _, jdk := range JDKs(t) {
		if DepthOf(t, jdk) != Full {
			continue
		}
		t.Run(jdk.Name(), func(t *testing.T) {
			if jdk.Root != "" {
				MustHaveRoot(t)
			}
			f(t, jdk)
		})
	}
}

func jdk17(t testing.TB) JDK {
	t.Helper()
	SkipInShort(t, "JDK 17")
	d := discover()
	var why []string
	for _, j := range d.jdks {
		if j.Feature != requiredFeature || j.Root != "" {
			continue
		}
		if err := hasTools(j.Home, "java", "javac", "jcmd"); err != nil {
			why = append(why, err.Error())
			continue
		}
		return j
	}
	found := make([]string, 0, len(d.jdks))
	for _, j := range d.jdks {
		found = append(found, j.String())
	}
	Skipf(t, "test needs JDK %d with java, javac and jcmd under %s or in $%s; found %v %v",
		requiredFeature, jvmDir, ExtraJDKsEnv, found, why)
	return JDK{}
}

type discovery struct {
	jdks []JDK
	errs []error // problems with homes named in $JVMKIT_JDKS
}

// discover runs once per test binary: the installed JDKs do not change while tests run.
var discover = sync.OnceValue(func() discovery {
	var extra []string
	for _, home := range filepath.SplitList(os.Getenv(ExtraJDKsEnv)) {
		if home != "" {
			extra = append(extra, home)
		}
	}
	return discoverJDKs(jvmDir, extra, cacheDir())
})

func cacheDir() string { return cmp.Or(os.Getenv(CacheEnv), defaultCache) }

// discoverJDKs lists the JDKs in dir (such as /usr/lib/jvm), the homes in extra and those in the set-up
// cache: <cache>/<name>-root/usr/lib/jvm/* run on the host, <cache>/<name>-rootfs/usr/lib/jvm/* in their root
// filesystem. Only cache entries that scripts/setup published (with their stamp) count: a half-built one does
// not.
func discoverJDKs(dir string, extra []string, cache string) discovery {
	type candidate struct {
		home     string
		root     string // root filesystem, for a JDK that runs in one
		explicit bool
	}
	var cands []candidate
	list := func(dir, root string) {
		entries, _ := os.ReadDir(dir) // no such directory: nothing installed there
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".") {
				continue // Debian's .jinfo files
			}
			cands = append(cands, candidate{home: filepath.Join(dir, e.Name()), root: root})
		}
	}
	list(dir, "")
	for _, home := range extra {
		cands = append(cands, candidate{home: home, explicit: true})
	}
	entries, _ := os.ReadDir(cache)
	for _, e := range entries {
		entry := filepath.Join(cache, e.Name())
		if _, err := os.Stat(filepath.Join(entry, stampFile)); err != nil || !e.IsDir() {
			continue
		}
		switch {
		case strings.HasSuffix(e.Name(), "-rootfs"):
			list(filepath.Join(entry, jvmDir), entry)
		case strings.HasSuffix(e.Name(), "-root"):
			list(filepath.Join(entry, jvmDir), "")
		}
	}

	var d discovery
	seen := make(map[string]bool) // real path of bin/java
	for _, c := range cands {
		jdk, java, err := probeJDK(c.home, c.root)
		if err != nil {
			if c.explicit {
				d.errs = append(d.errs, err)
			}
			continue
		}
		if seen[java] {
			continue
		}
		seen[java] = true
		d.jdks = append(d.jdks, jdk)
	}
	slices.SortFunc(d.jdks, func(a, b JDK) int {
		return cmp.Or(cmp.Compare(a.Feature, b.Feature), cmp.Compare(a.Root, b.Root), cmp.Compare(a.Version, b.Version),
			cmp.Compare(a.Home, b.Home))
	})
	return d
}

// probeJDK describes the JDK at home and returns the real path of its java launcher, the identity used to
// deduplicate aliases. A JDK in a root filesystem is described from its release file only (its java does not
// run on the host), and its links must stay inside the root: Debian's aliases there are relative.
func probeJDK(home, root string) (JDK, string, error) {
	java, err := filepath.EvalSymlinks(filepath.Join(home, "bin", "java"))
	if err != nil {
		return JDK{}, "", fmt.Errorf("probe JDK %s: %w", home, err)
	}
	if err := hasTools(home, "java", "javac"); err != nil {
		return JDK{}, "", fmt.Errorf("probe JDK %s: %w", home, err)
	}
	realHome, err := filepath.EvalSymlinks(home)
	if err != nil {
		return JDK{}, "", fmt.Errorf("probe JDK %s: %w", home, err)
	}
	if root != "" && (!strings.HasPrefix(realHome, root+"/") || !strings.HasPrefix(java, root+"/")) {
		return JDK{}, "", fmt.Errorf("probe JDK %s: it leads out of its root filesystem %s", home, root)
	}
	if strings.ContainsAny(root, ":,") {
		return JDK{}, "", fmt.Errorf("probe JDK %s: its root filesystem's path %s has a ':' or ',', which overlay options cannot carry", home, root)
	}
	jdk := JDK{Home: realHome, Root: root}
	release, err := os.ReadFile(filepath.Join(realHome, "release"))
	if err == nil {
		jdk.Feature, jdk.Version, err = parseRelease(release)
	}
	if err != nil && root != "" {
		return JDK{}, "", fmt.Errorf("probe JDK %s: %w", home, err)
	}
	if err != nil {
		// No usable release file (some vendor builds, hand-made images): ask the launcher.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, runErr := exec.CommandContext(ctx, filepath.Join(realHome, "bin", "java"), "-version").CombinedOutput()
		if runErr != nil {
			return JDK{}, "", fmt.Errorf("probe JDK %s: java -version: %w: %s", home, runErr, out)
		}
		if jdk.Feature, jdk.Version, err = parseJavaVersion(out); err != nil {
			return JDK{}, "", fmt.Errorf("probe JDK %s: %w", home, err)
		}
	}
	return jdk, java, nil
}

// selectJDKs applies $JVMKIT_TEST_JDKS (see [TestJDKsEnv]) to the discovered JDKs.
func selectJDKs(all []JDK, sel string) ([]JDK, error) {
	sel = cmp.Or(strings.TrimSpace(sel), defaultTestJDKs)
	switch sel {
	case "all":
		return slices.Clone(all), nil
	case "host":
		var out []JDK
		for _, j := range all {
			if j.Root == "" && !strings.HasPrefix(j.Home, cacheDir()+"/") {
				out = append(out, j)
			}
		}
		return out, nil
	}
	var out []JDK
	for _, name := range strings.Split(sel, ",") {
		name = strings.TrimSpace(name)
		n := len(out)
		for _, j := range all {
			if j.Name() == name {
				out = append(out, j)
			}
		}
		if len(out) == n {
			names := make([]string, 0, len(all))
			for _, j := range all {
				names = append(names, j.Name())
			}
			return nil, fmt.Errorf("%s=%s: no JDK named %q; found %s", TestJDKsEnv, sel, name, strings.Join(names, ", "))
		}
	}
	slices.SortStableFunc(out, func(a, b JDK) int { return cmp.Compare(a.Feature, b.Feature) })
	return slices.CompactFunc(out, func(a, b JDK) bool { return a.Home == b.Home }), nil
}

// missingSetupJDKs names the JDKs that scripts/setup provides, that sel selects, and that are not there.
func missingSetupJDKs(all []JDK, sel, cache string) []string {
	sel = cmp.Or(strings.TrimSpace(sel), defaultTestJDKs)
	var missing []string
	for _, want := range setupJDKs {
		entry := filepath.Join(cache, want.dir)
		probe := JDK{Feature: want.feature}
		if strings.HasSuffix(want.dir, "-rootfs") {
			probe.Root = entry
		}
		if sel != "all" && !slices.ContainsFunc(strings.Split(sel, ","), func(name string) bool {
			return strings.TrimSpace(name) == probe.Name()
		}) {
			continue
		}
		if !slices.ContainsFunc(all, func(j JDK) bool {
			return j.Feature == want.feature && strings.HasPrefix(j.Home, entry+"/")
		}) {
			missing = append(missing, fmt.Sprintf("%s (%s)", probe.Name(), entry))
		}
	}
	return missing
}

func hasTools(home string, tools ...string) error {
	for _, tool := range tools {
		path := filepath.Join(home, "bin", tool)
		fi, err := os.Stat(path)
		if err != nil {
			return fmt.Errorf("%s: no %s: %w", home, tool, err)
		}
		if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
			return fmt.Errorf("%s: %s is not an executable file", home, path)
		}
	}
	return nil
}

// parseRelease reads the JDK's release file (KEY="value" lines, written by the JDK build since JDK 9 and by
// most JDK 8 builds). The version is JAVA_RUNTIME_VERSION when present (it carries the build number and the
// vendor suffix), else JAVA_VERSION.
func parseRelease(data []byte) (feature int, version string, err error) {
	vars := make(map[string]string)
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		key, value, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		if !ok {
			continue
		}
		vars[strings.TrimSpace(key)] = unquote(strings.TrimSpace(value))
	}
	if err := sc.Err(); err != nil {
		return 0, "", fmt.Errorf("parse release file: %w", err)
	}
	javaVersion := vars["JAVA_VERSION"]
	if javaVersion == "" {
		return 0, "", errors.New("parse release file: no JAVA_VERSION")
	}
	feature, err = featureOf(javaVersion)
	if err != nil {
		return 0, "", fmt.Errorf("parse release file: %w", err)
	}
	version = cmp.Or(vars["JAVA_RUNTIME_VERSION"], javaVersion)
	return feature, version, nil
}

func unquote(s string) string {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		return s[1 : len(s)-1]
	}
	return s
}

// parseJavaVersion reads the output of `java -version`:
//
//	openjdk version "17.0.15" 2025-04-15
//	OpenJDK Runtime Environment (build 17.0.15+6-Debian-1deb12u1)
//	OpenJDK 64-Bit Server VM (build 17.0.15+6-Debian-1deb12u1, mixed mode, sharing)
//
// The version is the runtime's build string, else the quoted version. Lines before the banner (such as
// "Picked up JAVA_TOOL_OPTIONS") are skipped.
func parseJavaVersion(out []byte) (feature int, version string, err error) {
	var quoted, build string
	for line := range strings.Lines(string(out)) {
		if quoted == "" {
			if _, rest, ok := strings.Cut(line, ` version "`); ok {
				if v, _, ok := strings.Cut(rest, `"`); ok {
					quoted = v
				}
				continue
			}
		}
		if quoted != "" && build == "" {
			if _, rest, ok := strings.Cut(line, "(build "); ok {
				v, _, _ := strings.Cut(rest, ")")
				v, _, _ = strings.Cut(v, ",")
				build = strings.TrimSpace(v)
			}
		}
	}
	if quoted == "" {
		return 0, "", fmt.Errorf("parse java -version: no version in %q", out)
	}
	feature, err = featureOf(quoted)
	if err != nil {
		return 0, "", fmt.Errorf("parse java -version: %w", err)
	}
	return feature, cmp.Or(build, quoted), nil
}

// featureOf returns the feature release of a version string: "17.0.15" and "17-ea" are 17, "25+36" is 25,
// and the JDK 8 scheme "1.8.0_452" is 8.
func featureOf(v string) (int, error) {
	fields := strings.FieldsFunc(v, func(r rune) bool { return r < '0' || r > '9' })
	if len(fields) == 0 || !strings.HasPrefix(v, fields[0]) {
		return 0, fmt.Errorf("version %q does not start with a number", v)
	}
	n, err := strconv.Atoi(fields[0])
	if err == nil && n == 1 && len(fields) > 1 && strings.HasPrefix(v, "1.") {
		n, err = strconv.Atoi(fields[1])
	}
	if err != nil || n <= 0 || n > 1000 {
		return 0, fmt.Errorf("version %q has no valid feature release", v)
	}
	return n, nil
}
