package perfmap

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/jvmkit/jvmkit/internal/procerr"
	"github.com/jvmkit/jvmkit/internal/rootfs"
)

// Entry is one symbol of a perf map: Size bytes of code from Start.
type Entry struct {
	Start uint64 `json:"start"`
	Size  uint64 `json:"size"`
	Name  string `json:"name"`
}

// ErrNotSupported is returned on platforms other than Linux. It is attach.ErrNotSupported, so that one
// errors.Is test covers the whole project.
var ErrNotSupported = procerr.ErrNotSupported

// ErrNotRegular is returned when the final name of a map is something other than a regular file, such as
// a symbolic link: the map is not written through it and not removed.
var ErrNotRegular = rootfs.ErrNotRegular

// maxLine bounds a map line; method signatures are long, but not this long.
const maxLine = 1 << 20

// Write writes entries in perf's map format. Line breaks in names are replaced by spaces, since perf
// reads one symbol per line.
func Write(w io.Writer, entries []Entry) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	for _, e := range entries {
		name := e.Name
		if strings.ContainsAny(name, "\r\n") {
			name = strings.NewReplacer("\r", " ", "\n", " ").Replace(name)
		}
		if _, err := fmt.Fprintf(bw, "%x %x %s\n", e.Start, e.Size, name); err != nil {
			return fmt.Errorf("perfmap: write: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("perfmap: write: %w", err)
	}
	return nil
}

// Parse reads a perf map. Blank lines are skipped; START and SIZE may have a "0x" prefix; the name is the
// rest of the line without surrounding white space and must not be empty.
func Parse(r io.Reader) ([]Entry, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	var out []Entry
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		e, err := parseLine(line)
		if err != nil {
			return nil, fmt.Errorf("perfmap: line %d: %w", n, err)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("perfmap: read: %w", err)
	}
	return out, nil
}

func parseLine(line string) (Entry, error) {
	start, rest, ok := cutField(line)
	if !ok {
		return Entry{}, errors.New("want START SIZE name")
	}
	size, name, ok := cutField(rest)
	if !ok || name == "" {
		return Entry{}, errors.New("want START SIZE name")
	}
	s, err := parseHex(start)
	if err != nil {
		return Entry{}, fmt.Errorf("start: %w", err)
	}
	z, err := parseHex(size)
	if err != nil {
		return Entry{}, fmt.Errorf("size: %w", err)
	}
	// Write turns a carriage return into a space; so does Parse, for a round trip.
	name = strings.TrimSpace(strings.ReplaceAll(name, "\r", " "))
	if name == "" {
		return Entry{}, errors.New("want START SIZE name")
	}
	return Entry{Start: s, Size: z, Name: name}, nil
}

// cutField splits off the first white-space separated field; rest has no leading white space.
func cutField(s string) (field, rest string, ok bool) {
	i := strings.IndexAny(s, " \t")
	if i <= 0 {
		return "", "", false
	}
	return s[:i], strings.TrimLeft(s[i:], " \t"), true
}

func parseHex(s string) (uint64, error) {
	if len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		s = s[2:]
	}
	if s == "" || s[0] == '+' || s[0] == '-' || strings.Contains(s, "_") {
		return 0, fmt.Errorf("%q is not a hexadecimal number", s)
	}
	v, err := strconv.ParseUint(s, 16, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a hexadecimal number", s)
	}
	return v, nil
}
