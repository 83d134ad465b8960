package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: release dist|image|docs [flags] (see doc.go)")
	}
	fs := flag.NewFlagSet("release "+args[0], flag.ContinueOnError)
	version := fs.String("version", "", "version, as git describe gives it")
	commit := fs.String("commit", "", "the full commit hash")
	date := fs.String("date", "", "the commit's date, RFC 3339")
	out := fs.String("out", "dist", "output directory")
	arches := fs.String("arch", "amd64,arm64", "architectures")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	root, err := findRoot(wd)
	if err != nil {
		return err
	}
	switch args[0] {
	case "docs":
		files, err := genDocs(timeOrEpoch(*date), "amd64")
		if err != nil {
			return err
		}
		return writeDocs(*out, files)
	case "dist", "image":
		s, err := parseStamp(*version, *commit, *date)
		if err != nil {
			return err
		}
		names, err := dist(root, *out, strings.Split(*arches, ","), s, args[0] == "image")
		if err != nil {
			return err
		}
		for _, n := range names {
			fmt.Println(filepath.Join(*out, n))
		}
		return nil
	}
	return fmt.Errorf("unknown command %q: dist, image or docs", args[0])
}

// dist builds everything for each architecture into out and writes SHA256SUMS over it; imageOnly builds
// the binaries and the images alone. It returns the files it wrote.
func dist(root, out string, arches []string, s stamp, imageOnly bool) ([]string, error) {
	version, err := packageVersion(s)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "jvmkit-release-*")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(work) }()
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		return nil, err
	}
	license, licenseName := licenseOf(root)
	var written []string
	for _, arch := range arches {
		binDir := filepath.Join(work, arch, "bin")
		if err := buildBinaries(root, binDir, arch, s); err != nil {
			return nil, err
		}
		img := fmt.Sprintf("jvmkit_%s_linux_%s.oci.tar", version, arch)
		if err := writeImage(filepath.Join(out, img), binDir, arch, version, s); err != nil {
			return nil, err
		}
		written = append(written, img)
		if imageOnly {
			continue
		}
		docs, err := genDocs(s.Date, arch)
		if err != nil {
			return nil, err
		}
		// The archive: binaries at the top (tar x and run), the rest beside them.
		top := fmt.Sprintf("jvmkit_%s_linux_%s", version, arch)
		es := []entry{{name: top + "/README.md", mode: 0o644, data: readme}}
		pfs := []pkgFile{{dst: "/usr/share/doc/jvmkit/README.md", mode: 0o644, data: readme}}
		if license != nil {
			es = append(es, entry{name: top + "/LICENSE", mode: 0o644, data: license})
			pfs = append(pfs, pkgFile{dst: "/usr/share/doc/jvmkit/copyright", mode: 0o644, data: license, packager: "deb"},
				pkgFile{dst: "/usr/share/licenses/jvmkit/LICENSE", mode: 0o644, data: license, packager: "rpm"})
		}
		for _, t := range tools {
			b, err := os.ReadFile(filepath.Join(binDir, t))
			if err != nil {
				return nil, err
			}
			es = append(es, entry{name: top + "/" + t, mode: 0o755, data: b})
			pfs = append(pfs, pkgFile{dst: "/usr/bin/" + t, mode: 0o755, data: b})
		}
		for _, d := range docs {
			es = append(es, entry{name: top + "/" + d.rel, mode: int64(d.mode), data: d.data})
			if strings.HasPrefix(d.rel, "completions/zsh/") {
				// Debian's zsh reads vendor-completions; Fedora's and SUSE's site-functions.
				pfs = append(pfs, pkgFile{dst: d.dst, mode: d.mode, data: d.data, packager: "deb"},
					pkgFile{dst: "/usr/share/zsh/site-functions/" + filepath.Base(d.dst), mode: d.mode, data: d.data, packager: "rpm"})
				continue
			}
			pfs = append(pfs, pkgFile{dst: d.dst, mode: d.mode, data: d.data})
		}
		archive := top + ".tar.gz"
		if err := writeTarGz(filepath.Join(out, archive), es, s.Date); err != nil {
			return nil, err
		}
		written = append(written, archive)
		for _, packager := range []string{"deb", "rpm"} {
			name, err := writePackage(out, filepath.Join(work, arch, "stage"), packager, arch, version, s, pfs, licenseName)
			if err != nil {
				return nil, err
			}
			written = append(written, name)
		}
	}
	if !imageOnly {
		if err := writeSums(out, written); err != nil {
			return nil, err
		}
		written = append(written, "SHA256SUMS")
	}
	return written, nil
}

// licenseOf reads the project's LICENSE file and names its license from its first line; without one a
// release ships none (and says so) rather than guessing one.
func licenseOf(root string) (text []byte, name string) {
	b, err := os.ReadFile(filepath.Join(root, "LICENSE"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "release: warning: no LICENSE in the repository; the archives and packages carry none")
		return nil, ""
	}
	first, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	name = strings.TrimSpace(first)
	if name == "Apache License" && strings.Contains(string(b), "Version 2.0, January 2004") {
		name = "Apache-2.0" // the SPDX name packages carry
	}
	return b, name
}
