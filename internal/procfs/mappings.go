package procfs

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
)

// Mapping is one line of /proc/<pid>/maps.
type Mapping struct {
	Start, End uint64
	Perms      string // e.g. "r-xp"
	Offset     uint64 // file offset of Start
	// DevMajor and DevMinor are the device of the mapped file (hex "fe:01" in maps), with Inode its
	// identity: what a file reached by its path must match to be the one mapped.
	DevMajor, DevMinor uint32
	Inode              uint64
	Path               string // "" for anonymous memory; "[heap]", "[stack]", ... for special ones
	Deleted            bool   // the file was deleted (" (deleted)" suffix)
}

// ParseMaps parses the text of /proc/<pid>/maps. Paths keep their spaces.
func ParseMaps(r io.Reader) ([]Mapping, error) {
	var out []Mapping
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		m, err := parseMapping(sc.Bytes())
		if err != nil {
			return out, fmt.Errorf("%w: maps line %d: %w", ErrMalformed, n, err)
		}
		out = append(out, m)
	}
	return out, sc.Err()
}

func parseMapping(line []byte) (Mapping, error) {
	var m Mapping
	// address perms offset dev inode path; the path starts after the inode field's spaces.
	rest := line
	field := func() []byte {
		rest = bytes.TrimLeft(rest, " ")
		i := bytes.IndexByte(rest, ' ')
		if i < 0 {
			f := rest
			rest = nil
			return f
		}
		f := rest[:i]
		rest = rest[i:]
		return f
	}
	addr, perms, off, dev, inode := field(), field(), field(), field(), field()
	lo, hi, ok := bytes.Cut(addr, []byte{'-'})
	if !ok {
		return m, fmt.Errorf("bad address range %q", addr)
	}
	var err error
	if m.Start, err = strconv.ParseUint(string(lo), 16, 64); err != nil {
		return m, err
	}
	if m.End, err = strconv.ParseUint(string(hi), 16, 64); err != nil {
		return m, err
	}
	if m.Offset, err = strconv.ParseUint(string(off), 16, 64); err != nil {
		return m, err
	}
	maj, minor, ok := bytes.Cut(dev, []byte{':'})
	if !ok {
		return m, fmt.Errorf("bad device %q", dev)
	}
	major, err := strconv.ParseUint(string(maj), 16, 32)
	if err != nil {
		return m, err
	}
	mi, err := strconv.ParseUint(string(minor), 16, 32)
	if err != nil {
		return m, err
	}
	m.DevMajor, m.DevMinor = uint32(major), uint32(mi)
	if m.Inode, err = strconv.ParseUint(string(inode), 10, 64); err != nil {
		return m, err
	}
	m.Perms = string(perms)
	path := bytes.TrimLeft(rest, " ")
	if p, ok := bytes.CutSuffix(path, []byte(" (deleted)")); ok {
		path, m.Deleted = p, true
	}
	m.Path = string(path)
	return m, nil
}

// Maps reads and parses /proc/<pid>/maps.
func (fs FS) Maps(pid int) ([]Mapping, error) {
	f, err := os.Open(fs.Path(pid, "maps"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseMaps(f)
}
