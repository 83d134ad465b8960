package cliutil

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Version, Commit and Date are set at build time (make build, make release):
//
//	-ldflags "-X github.com/jvmkit/jvmkit/cmd/internal/cliutil.Version=v1.2.3
//	          -X github.com/jvmkit/jvmkit/cmd/internal/cliutil.Commit=<full hash>
//	          -X github.com/jvmkit/jvmkit/cmd/internal/cliutil.Date=<commit time, RFC 3339 UTC>"
//
// Date is the commit's time, not the build's, so that two builds of one commit are the same bytes.
// Without them the module version or the VCS data recorded by the Go toolchain is used.
var Version, Commit, Date string

// BuildVersion is the version the tools print: Version, else what the build recorded.
func BuildVersion() string { return version() }

func version() string {
	if Version != "" {
		return Version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	if rev := buildSetting(bi, "vcs.revision"); len(rev) >= 12 {
		return "dev-" + rev[:12]
	}
	return "dev"
}

// commit returns the commit and its date: the stamped ones, else what the toolchain recorded.
func commit() (hash, date string) {
	hash, date = Commit, Date
	if bi, ok := debug.ReadBuildInfo(); ok {
		if hash == "" {
			hash = buildSetting(bi, "vcs.revision")
			if buildSetting(bi, "vcs.modified") == "true" {
				hash += "-dirty"
			}
		}
		if date == "" {
			date = buildSetting(bi, "vcs.time")
		}
	}
	return hash, date
}

func buildSetting(bi *debug.BuildInfo, key string) string {
	for _, s := range bi.Settings {
		if s.Key == key {
			return s.Value
		}
	}
	return ""
}

// VersionText is what --version prints: what a bug report needs (which build, which toolchain, which
// architecture, since arm64 builds lack some commands).
func VersionText(tool string) string {
	hash, date := commit()
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s\n", tool, version())
	if hash == "" {
		hash = "unknown"
	}
	if date != "" {
		hash += " (" + date + ")"
	}
	fmt.Fprintf(&b, "commit: %s\n", hash)
	fmt.Fprintf(&b, "go:     %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return b.String()
}
