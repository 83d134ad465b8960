package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/goreleaser/nfpm/v2"
	"github.com/goreleaser/nfpm/v2/files"

	// The packagers register themselves with nfpm.
	_ "github.com/goreleaser/nfpm/v2/deb"
	_ "github.com/goreleaser/nfpm/v2/rpm"
)

// pkgFile is a file a package installs: its absolute destination, mode, and which packager takes it
// ("" both).
type pkgFile struct {
	dst      string
	mode     os.FileMode
	data     []byte
	packager string
}

const description = `Attach to running HotSpot JVMs from the outside
gjcmd is a drop-in jcmd that needs no JDK and reaches JVMs in containers from the
host; gjmaps writes perf maps for every JVM; jvmkit reads a JVM's VMStructs
(threads, flags, code cache) without attaching, profiles it without an agent,
traces its USDT probes with eBPF and reads flight recordings.`

// writePackage builds the .deb or .rpm (packager) of the files for linux/arch into dir and returns its file
// name. The files are staged under stage, since nfpm reads its contents from disk.
func writePackage(dir, stage, packager, arch, version string, s stamp, pfs []pkgFile, license string) (string, error) {
	var contents files.Contents
	for _, f := range pfs {
		if f.packager != "" && f.packager != packager {
			continue
		}
		src := filepath.Join(stage, packager, filepath.FromSlash(f.dst))
		if err := os.MkdirAll(filepath.Dir(src), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(src, f.data, f.mode); err != nil {
			return "", err
		}
		contents = append(contents, &files.Content{Source: src, Destination: f.dst,
			FileInfo: &files.ContentFileInfo{Owner: "root", Group: "root", Mode: f.mode, MTime: s.Date}})
	}
	info := &nfpm.Info{
		Name: "jvmkit", Arch: arch, Platform: "linux", Version: version, VersionSchema: "none", Release: "1",
		Section: "devel", Priority: "optional", Maintainer: "jvmkit developers",
		Description: description, Homepage: "https://github.com/jvmkit/jvmkit", License: license,
		MTime: s.Date, DisableGlobbing: true,
		Overridables: nfpm.Overridables{Contents: contents, Suggests: []string{"linux-perf"}},
	}
	// No host name in the package: the same bytes wherever it is built.
	info.RPM.BuildHost = "jvmkit"
	// gzip, which every dpkg and rpm in use reads (zstd needs dpkg 1.21.18 and rpm 4.14), at gzipLevel.
	info.Deb.Compression = fmt.Sprintf("gzip:%d", gzipLevel)
	info.RPM.Compression = fmt.Sprintf("gzip:%d", gzipLevel)
	info.RPM.Group = "Development/Tools"
	info.RPM.Summary = "Attach to running HotSpot JVMs from the outside"
	p, err := nfpm.Get(packager)
	if err != nil {
		return "", err
	}
	info = nfpm.WithDefaults(info)
	name := p.ConventionalFileName(info)
	var buf bytes.Buffer
	if err := p.Package(info, &buf); err != nil {
		return "", fmt.Errorf("%s for %s: %w", packager, arch, err)
	}
	return name, os.WriteFile(filepath.Join(dir, name), buf.Bytes(), 0o644)
}
