package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/jvmkit/jvmkit/cmd/internal/agent"
	"github.com/jvmkit/jvmkit/cmd/internal/clitree"
	"github.com/jvmkit/jvmkit/cmd/internal/cliutil"
	"github.com/jvmkit/jvmkit/cmd/internal/gjcmd/gjcmdtree"
	"github.com/jvmkit/jvmkit/cmd/internal/gjmaps"
	"github.com/jvmkit/jvmkit/cmd/internal/jfrexport"
	"github.com/jvmkit/jvmkit/cmd/internal/jvmkit"
)

// trees builds the three tools' command trees as the binaries for linux/arch build them (jvmkit with
// its extra subcommands, as cmd/jvmkit adds them; the marks of what arch cannot do).
func trees(arch string) []*cobra.Command {
	ts := []*cobra.Command{
		gjcmdtree.Command(io.Discard, io.Discard),
		gjmaps.Command(io.Discard, io.Discard),
		jvmkit.Command(io.Discard, io.Discard, agent.Command, jfrexport.Command),
	}
	if arch != runtime.GOARCH {
		for _, t := range ts {
			clitree.MarkArch(t, arch)
		}
	}
	return ts
}

// docFile is a generated file and where it goes in an archive (rel) and in a package (dst).
type docFile struct {
	rel, dst string
	data     []byte
	mode     os.FileMode
}

// genDocs generates the completions (bash, zsh, fish) and man pages (one per command and subcommand,
// gzipped as Debian and Fedora install them) of every tool, for linux/arch. Man pages are dated by date.
func genDocs(date time.Time, arch string) ([]docFile, error) {
	var out []docFile
	for _, root := range trees(arch) {
		name := root.Name()
		var bash, zsh, fish bytes.Buffer
		if err := root.GenBashCompletionV2(&bash, true); err != nil {
			return nil, err
		}
		if err := root.GenZshCompletion(&zsh); err != nil {
			return nil, err
		}
		if err := root.GenFishCompletion(&fish, true); err != nil {
			return nil, err
		}
		out = append(out,
			docFile{"completions/bash/" + name, "/usr/share/bash-completion/completions/" + name, bash.Bytes(), 0o644},
			docFile{"completions/zsh/_" + name, "/usr/share/zsh/vendor-completions/_" + name, zsh.Bytes(), 0o644},
			docFile{"completions/fish/" + name + ".fish", "/usr/share/fish/vendor_completions.d/" + name + ".fish", fish.Bytes(), 0o644},
		)
		pages, err := manPages(root, date)
		if err != nil {
			return nil, err
		}
		out = append(out, pages...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].rel < out[j].rel })
	return out, nil
}

func manPages(root *cobra.Command, date time.Time) ([]docFile, error) {
	var out []docFile
	var walk func(c *cobra.Command) error
	walk = func(c *cobra.Command) error {
		if !c.IsAvailableCommand() && c != root || c.IsAdditionalHelpTopicCommand() {
			return nil
		}
		c.DisableAutoGenTag = true
		var page bytes.Buffer
		h := &doc.GenManHeader{Section: "1", Date: &date, Source: "jvmkit " + cliutil.BuildVersion(), Manual: "jvmkit manual"}
		if err := doc.GenMan(c, h, &page); err != nil {
			return fmt.Errorf("man page of %s: %w", c.CommandPath(), err)
		}
		gz, err := gzipBytes(page.Bytes())
		if err != nil {
			return err
		}
		file := strings.ReplaceAll(c.CommandPath(), " ", "-") + ".1.gz"
		out = append(out, docFile{"man/man1/" + file, "/usr/share/man/man1/" + file, gz, 0o644})
		for _, sub := range c.Commands() {
			if err := walk(sub); err != nil {
				return err
			}
		}
		return nil
	}
	return out, walk(root)
}

// gzipLevel is the level of every gzip stream in a release (archives, packages, man pages): level 9
// costs three times the CPU of level 6 on the binaries for 0.6% less size (measured with gzip on the
// amd64 binaries: 14.12 MB at 6, 14.03 MB at 9).
const gzipLevel = 6

// gzipBytes compresses without a name or a time in the header, so the bytes depend on the input alone.
func gzipBytes(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzipLevel)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeDocs writes the generated files under dir (release docs).
func writeDocs(dir string, files []docFile) error {
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.data, f.mode); err != nil {
			return err
		}
	}
	return nil
}
