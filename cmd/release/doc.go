// Command release builds jvmkit's release from one commit: static gjcmd, gjmaps and jvmkit for linux/amd64
// and linux/arm64, their shell completions and man pages (generated from the cobra trees), per
// architecture a .tar.gz, a .deb and an .rpm (nfpm as a library), an OCI image of the three binaries on
// an empty base (go-containerregistry, no container daemon), and SHA256SUMS. `make release` and
// `make image` run it.
//
//	release dist  -version V -commit HASH -date RFC3339 [-out dist] [-arch amd64,arm64]
//	release image -version V -commit HASH -date RFC3339 [-out dist] [-arch amd64,arm64]
//	release docs  -out DIR
//
// Reproducible: every timestamp is the commit's date (files in archives and packages, man pages, the
// image's config), owners are root, entries are sorted, and the binaries are built with -trimpath and
// without VCS stamping, so two runs on one commit give the same bytes and the same SHA256SUMS.
//
// It is a module of its own (cmd/release) so that its dependencies (nfpm, go-containerregistry,
// Kubernetes' API types for the manifest test, cobra/doc's go-md2man) stay out of jvmkit's go.mod and out
// of the binaries it ships; it reaches the command trees through cmd/internal/gjcmd, gjmaps and jvmkit
// (Command) and cmd/internal/cliutil (MarkArch, BuildVersion), which a nested module under the same path may
// import.
//
// # Compatibility
//
// Built and tested with Go 1.26 on Debian 12 (amd64): nfpm v2.45.2, go-containerregistry v0.22.1,
// k8s.io/api v0.37.2. The .deb installs with dpkg 1.21, the .rpm reads back with rpm 4.18, the image runs
// under podman 4.3 with runc. arm64 binaries are checked under qemu-user-static 7.2.
package main
