package main

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// imageTag is the tag an image archive carries (org.opencontainers.image.ref.name): the package version
// with the characters a tag may not hold (~, +) turned into dashes.
func imageTag(version string) string {
	return strings.NewReplacer("~", "-", "+", "-").Replace(version)
}

// writeImage writes an OCI archive (a tar of an OCI image layout, as podman load and skopeo read it) of
// one image for linux/arch: the three static binaries in /usr/bin on an empty base, an empty /tmp
// (sticky, for the host's /tmp to be mounted on), and an /etc/passwd and /etc/group naming root and
// nobody. No entrypoint: the command names the tool (`jvmkit agent ...`, `gjcmd -l`); without one it
// prints jvmkit's help.
func writeImage(file, binDir, arch, version string, s stamp) error {
	var es []entry
	for _, t := range tools {
		b, err := os.ReadFile(filepath.Join(binDir, t))
		if err != nil {
			return err
		}
		es = append(es, entry{name: "usr/bin/" + t, mode: 0o755, data: b})
	}
	// The tools resolve user names (gjmaps --owner, default root) through /etc/passwd and /etc/group,
	// which an empty base lacks: without them gjmaps fails before it looks at a JVM.
	es = append(es, entry{name: "tmp/", mode: 0o1777},
		entry{name: "etc/passwd", mode: 0o644, data: []byte("root:x:0:0:root:/:/nonexistent\nnobody:x:65534:65534:nobody:/nonexistent:/nonexistent\n")},
		entry{name: "etc/group", mode: 0o644, data: []byte("root:x:0:\nnogroup:x:65534:\n")})
	layerTar, err := writeTar(es, s.Date)
	if err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return err
	}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{Layer: layer, History: v1.History{
		Created: v1.Time{Time: s.Date}, CreatedBy: "cmd/release: gjcmd, gjmaps, jvmkit", Comment: "jvmkit " + s.Version}})
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Created = "linux", arch, v1.Time{Time: s.Date}
	cf.Config.Env = []string{"PATH=/usr/bin"}
	cf.Config.Cmd = []string{"jvmkit", "--help"}
	cf.Config.Labels = map[string]string{
		"org.opencontainers.image.title":    "jvmkit",
		"org.opencontainers.image.version":  version,
		"org.opencontainers.image.revision": s.Commit,
		"org.opencontainers.image.created":  s.Date.Format("2006-01-02T15:04:05Z"),
		"org.opencontainers.image.source":   "https://github.com/jvmkit/jvmkit",
	}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "jvmkit-image-*")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendImage(img, layout.WithPlatform(v1.Platform{OS: "linux", Architecture: arch}),
		layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": imageTag(version)})); err != nil {
		return fmt.Errorf("image for %s: %w", arch, err)
	}
	var files []entry
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		files = append(files, entry{name: filepath.ToSlash(rel), mode: 0o644, data: b})
		return nil
	})
	if err != nil {
		return err
	}
	t, err := writeTar(files, s.Date)
	if err != nil {
		return err
	}
	return os.WriteFile(file, t, 0o644)
}
