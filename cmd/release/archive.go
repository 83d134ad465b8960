package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// entry is a file or directory in a tar archive.
type entry struct {
	name string // slash-separated, no leading slash; a directory ends in "/"
	mode int64
	data []byte
}

// writeTar writes entries as a tar archive that depends on them alone: sorted by name, the parent
// directories added, owned by root:root (numeric and by name), every time set to mtime.
func writeTar(entries []entry, mtime time.Time) ([]byte, error) {
	all := map[string]entry{}
	for _, e := range entries {
		all[e.name] = e
		for d := path.Dir(strings.TrimSuffix(e.name, "/")); d != "." && d != "/"; d = path.Dir(d) {
			if _, ok := all[d+"/"]; !ok {
				all[d+"/"] = entry{name: d + "/", mode: 0o755}
			}
		}
	}
	names := make([]string, 0, len(all))
	for n := range all {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		e := all[n]
		h := &tar.Header{Name: e.name, Mode: e.mode, ModTime: mtime, Uname: "root", Gname: "root", Format: tar.FormatPAX}
		if strings.HasSuffix(e.name, "/") {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("tar %s: %w", e.name, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, fmt.Errorf("tar %s: %w", e.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeTarGz writes a .tar.gz of entries (see writeTar and gzipBytes).
func writeTarGz(file string, entries []entry, mtime time.Time) error {
	t, err := writeTar(entries, mtime)
	if err != nil {
		return err
	}
	gz, err := gzipBytes(t)
	if err != nil {
		return err
	}
	return os.WriteFile(file, gz, 0o644)
}

// writeSums writes SHA256SUMS for the files in dir, in sha256sum's format (sha256sum -c reads it), sorted
// by name.
func writeSums(dir string, files []string) error {
	sort.Strings(files)
	var b strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		fmt.Fprintf(&b, "%s  %s\n", hex.EncodeToString(sum[:]), f)
	}
	return os.WriteFile(filepath.Join(dir, "SHA256SUMS"), []byte(b.String()), 0o644)
}
