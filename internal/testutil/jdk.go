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
	// requiredFeature is the JDK every live test runs on; the others are a bonus.
	requiredFeature = 17
)

// JDK is one installed JDK.
type JDK struct {
	Home    string // real path of the JDK home (symlinks resolved)
	Feature int    // feature release: 8, 17, 25, ...
	Version string // full runtime version, e.g. 17.0.15+6-Debian-1deb12u1
}

// Bin returns the path of a tool in the JDK's bin directory.
func (j JDK) Bin(tool string) string { return filepath.Join(j.Home, "bin", tool) }

// Name returns "jdk<feature>", used as subtest name. Two builds of the same feature get the same name;
// t.Run disambiguates them with a "#01" suffix.
func (j JDK) Name() string { return "jdk" + strconv.Itoa(j.Feature) }

// String describes the JDK for failure messages.
func (j JDK) String() string { return fmt.Sprintf("%s %s (%s)", j.Name(), j.Version, j.Home) }

// JDKs returns every JDK under /usr/lib/jvm and in $JVMKIT_JDKS, deduplicated by the real path of bin/java
// (Debian installs aliases such as java-1.17.0-openjdk-amd64 -> java-17-openjdk-amd64) and sorted by feature
// release. A directory without bin/java and bin/javac is not a JDK and is ignored, except when $JVMKIT_JDKS names
// it: then the test fails. Like [MustHaveJava], it skips the test when JDK 17 is missing.
func JDKs(t testing.TB) []JDK {
	t.Helper()
	d := discover()
	if len(d.errs) > 0 {
		t.Fatalf("%s: %v", ExtraJDKsEnv, errors.Join(d.errs...))
	}
	jdk17(t)
	return slices.Clone(d.jdks)
}

// JDK17 returns the JDK 17 every live test needs, or skips the test (see [Skipf]).
func JDK17(t testing.TB) JDK {
	t.Helper()
	return jdk17(t)
}

// ForEachJDK runs f as a subtest named jdk.Name() for every JDK of [JDKs]. The subtests are not parallel
// unless f calls t.Parallel; each gets its own copy of jdk.
func ForEachJDK(t *testing.T, f func(t *testing.T, jdk JDK)) {
	t.Helper()
	for _, jdk := range JDKs(t) {
		t.Run(jdk.Name(), func(t *testing.T) { f(t, jdk) })
	}
}

func jdk17(t testing.TB) JDK {
	t.Helper()
	d := discover()
	var why []string
	for _, j := range d.jdks {
		if j.Feature != requiredFeature {
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
	return discoverJDKs(jvmDir, extra)
})

func discoverJDKs(dir string, extra []string) discovery {
	type candidate struct {
		home     string
		explicit bool
	}
	var cands []candidate
	entries, _ := os.ReadDir(dir) // no /usr/lib/jvm: nothing installed there
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue // Debian's .jinfo files
		}
		cands = append(cands, candidate{home: filepath.Join(dir, e.Name())})
	}
	for _, home := range extra {
		cands = append(cands, candidate{home: home, explicit: true})
	}

	var d discovery
	seen := make(map[string]bool) // real path of bin/java
	for _, c := range cands {
		jdk, java, err := probeJDK(c.home)
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
		return cmp.Or(cmp.Compare(a.Feature, b.Feature), cmp.Compare(a.Version, b.Version), cmp.Compare(a.Home, b.Home))
	})
	return d
}

// probeJDK describes the JDK at home and returns the real path of its java launcher, the identity used to
// deduplicate aliases.
func probeJDK(home string) (JDK, string, error) {
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
	jdk := JDK{Home: realHome}
	release, err := os.ReadFile(filepath.Join(realHome, "release"))
	if err == nil {
		jdk.Feature, jdk.Version, err = parseRelease(release)
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
