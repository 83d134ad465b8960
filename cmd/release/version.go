package main

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// stamp is what a release is built from.
type stamp struct {
	Version string    // as git describe gives it: v1.2.3, v1.2.3-4-gabcdef0, or a bare hash
	Commit  string    // the full commit hash
	Date    time.Time // the commit's date: every timestamp in the release
}

var (
	describeRE = regexp.MustCompile(`^v?(\d+\.\d+\.\d+)(?:-(\d+)-g([0-9a-f]+))?(-dirty)?$`)
	hashRE     = regexp.MustCompile(`^([0-9a-f]{7,40})(-dirty)?$`)
)

// packageVersion turns git describe's version into one that dpkg and rpm order correctly and accept:
// v1.2.3 -> 1.2.3; v1.2.3-4-gabcdef0 -> 1.2.3+4.gabcdef0 (after 1.2.3); a bare hash (no tag yet) ->
// 0.0.0~git20261124.abcdef0 (before any 0.0.0 release). A dirty tree gets ".dirty".
func packageVersion(s stamp) (string, error) {
	if m := describeRE.FindStringSubmatch(s.Version); m != nil {
		v := m[1]
		if m[2] != "" {
			v += "+" + m[2] + ".g" + m[3]
		}
		if m[4] != "" {
			v += ".dirty"
		}
		return v, nil
	}
	if m := hashRE.FindStringSubmatch(s.Version); m != nil {
		v := "0.0.0~git" + s.Date.UTC().Format("20060102") + "." + m[1]
		if m[2] != "" {
			v += ".dirty"
		}
		return v, nil
	}
	return "", fmt.Errorf("version %q: want vX.Y.Z, git describe's vX.Y.Z-N-gHASH, or a commit hash", s.Version)
}

func parseStamp(version, commit, date string) (stamp, error) {
	if version == "" || commit == "" || date == "" {
		return stamp{}, fmt.Errorf("-version, -commit and -date are needed (make release gives them from git)")
	}
	t, err := time.Parse(time.RFC3339, date)
	if err != nil {
		return stamp{}, fmt.Errorf("-date: %w", err)
	}
	if strings.ContainsAny(version, " /'\"") {
		return stamp{}, fmt.Errorf("-version %q: no spaces, slashes or quotes", version)
	}
	return stamp{Version: version, Commit: commit, Date: t.UTC()}, nil
}

// timeOrEpoch parses an RFC 3339 date, or gives the Unix epoch (release docs without a commit).
func timeOrEpoch(date string) time.Time {
	t, err := time.Parse(time.RFC3339, date)
	if err != nil {
		return time.Unix(0, 0).UTC()
	}
	return t.UTC()
}
