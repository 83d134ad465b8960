package cli

import "runtime/debug"

// Version is set at build time (-ldflags "-X github.com/jvmkit/jvmkit/internal/cli.Version=v1.2.3");
// without it the module version or VCS revision recorded by the Go toolchain is used.
var Version string

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
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			return "dev-" + s.Value[:12]
		}
	}
	return "dev"
}
