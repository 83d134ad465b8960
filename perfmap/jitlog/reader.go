package jitlog

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// Damage is a part of a log that the Reader skipped: bytes that are not a whole record with a good
// checksum. A log that a killed writer (or a full disk) cut short ends in damage; garbage or a bad
// checksum in the middle is damage that the Reader skips up to the next good record.
type Damage struct {
	Offset int64  `json:"offset"` // where the damage starts, in bytes from the start of the file
	Length int64  `json:"length"` // bytes skipped
	Reason string `json:"reason"` // what was wrong with the bytes at Offset
	AtEnd  bool   `json:"at_end"` // the damage runs to the end of the log: a cut-off tail
}

func (d Damage) String() string {
	if d.AtEnd {
		return fmt.Sprintf("offset %d: %s; ignored the last %d bytes (the writer was killed or the disk filled up?)", d.Offset, d.Reason, d.Length)
	}
	return fmt.Sprintf("offset %d: %s; skipped %d bytes to the next good record", d.Offset, d.Reason, d.Length)
}

// Reader reads the records of a log in the order they were written. It reads past damage: it never
// fails on the content of the log, only on the header (ErrNotLog, *VersionError) and on errors of the
// underlying reader, and reports what it skipped in Damage.
type Reader struct {
	r      io.Reader
	buf    []byte
	pos    int   // start of the unread bytes in buf
	base   int64 // offset in the log of buf[0]
	eof    bool
	err    error // from r, other than io.EOF
	damage []Damage
}

// NewReader reads the header of a log. A log cut off inside its header (a writer killed at once) is
// read as empty, with Damage.
func NewReader(r io.Reader) (*Reader, error) {
	lr := &Reader{r: r, buf: make([]byte, 0, 2*maxRecord)}
	lr.fill(headerSize)
	if lr.err != nil {
		return nil, fmt.Errorf("jitlog: read: %w", lr.err)
	}
	if n := len(lr.buf); n < headerSize {
		if m := min(n, len(fileMagic)); n == 0 || string(lr.buf[:m]) != fileMagic[:m] {
			return nil, ErrNotLog
		}
		lr.damage = append(lr.damage, Damage{Offset: 0, Length: int64(n), Reason: "the log ends inside its header", AtEnd: true})
		lr.pos = n
		return lr, nil
	}
	if err := checkHeader(lr.buf[:headerSize]); err != nil {
		return nil, err
	}
	lr.pos = headerSize
	return lr, nil
}

// fill reads until at least n unread bytes are buffered, or the input ends.
func (r *Reader) fill(n int) {
	for len(r.buf)-r.pos < n && !r.eof && r.err == nil {
		if r.pos > 0 && cap(r.buf)-len(r.buf) < maxRecord {
			copy(r.buf, r.buf[r.pos:])
			r.buf = r.buf[:len(r.buf)-r.pos]
			r.base += int64(r.pos)
			r.pos = 0
		}
		if cap(r.buf)-len(r.buf) < n {
			nb := make([]byte, len(r.buf), 2*cap(r.buf)+n)
			copy(nb, r.buf)
			r.buf = nb
		}
		m, err := r.r.Read(r.buf[len(r.buf):cap(r.buf)])
		r.buf = r.buf[:len(r.buf)+m]
		switch {
		case errors.Is(err, io.EOF):
			r.eof = true
		case err != nil:
			r.err = err
		}
	}
}

// Read returns the next record, or io.EOF after the last one.
func (r *Reader) Read() (Record, error) {
	damaged := int64(-1) // offset in the log where skipped bytes began
	var reason string
	for {
		r.fill(recFixed)
		if r.err != nil {
			return Record{}, fmt.Errorf("jitlog: read: %w", r.err)
		}
		if len(r.buf) == r.pos {
			if damaged >= 0 {
				r.damage = append(r.damage, Damage{Offset: damaged, Length: r.offset() - damaged, Reason: reason, AtEnd: true})
			}
			return Record{}, io.EOF
		}
		at := r.offset()
		rec, why := r.try()
		if r.err != nil {
			return Record{}, fmt.Errorf("jitlog: read: %w", r.err)
		}
		if why == "" {
			if damaged >= 0 {
				r.damage = append(r.damage, Damage{Offset: damaged, Length: at - damaged, Reason: reason})
			}
			return rec, nil
		}
		if damaged < 0 {
			damaged, reason = r.offset(), why
		}
		// Resynchronise at the next record marker after this byte.
		r.pos++
		for {
			if i := indexMarker(r.buf[r.pos:]); i >= 0 {
				r.pos += i
				break
			}
			// Keep a trailing first byte of a marker; fill moves it to the front.
			r.pos = len(r.buf)
			if r.pos > 0 && r.buf[r.pos-1] == recMagic0 {
				r.pos--
			}
			r.fill(recFixed)
			if r.err != nil {
				return Record{}, fmt.Errorf("jitlog: read: %w", r.err)
			}
			if r.eof && len(r.buf)-r.pos < 2 {
				r.pos = len(r.buf)
				break
			}
		}
	}
}

// offset is the position in the log of the next unread byte.
func (r *Reader) offset() int64 { return r.base + int64(r.pos) }

// try decodes the record at pos, and on success moves past it. It returns why the bytes at pos are not
// a record.
func (r *Reader) try() (Record, string) {
	avail := len(r.buf) - r.pos
	if avail < recFixed {
		return Record{}, "the log ends inside a record"
	}
	n, why := recordLen(r.buf[r.pos:])
	if why != "" {
		return Record{}, why
	}
	if avail < n {
		r.fill(n)
		if len(r.buf)-r.pos < n {
			return Record{}, "the log ends inside a record"
		}
	}
	rec, ok := decodeRecord(r.buf[r.pos:], n)
	if !ok {
		return Record{}, "bad checksum"
	}
	r.pos += n
	return rec, ""
}

func indexMarker(b []byte) int {
	for i := 0; i+1 < len(b); i++ {
		if b[i] == recMagic0 && b[i+1] == recMagic1 {
			return i
		}
	}
	return -1
}

// Damage returns the parts of the log skipped so far.
func (r *Reader) Damage() []Damage { return r.damage }

// ReadAll reads every record of a log, and what it skipped.
func ReadAll(r io.Reader) ([]Record, []Damage, error) {
	lr, err := NewReader(r)
	if err != nil {
		return nil, nil, err
	}
	var recs []Record
	for {
		rec, err := lr.Read()
		if errors.Is(err, io.EOF) {
			return recs, lr.Damage(), nil
		}
		if err != nil {
			return recs, lr.Damage(), err
		}
		recs = append(recs, rec)
	}
}

// ReadFile reads every record of the log file path, and what it skipped.
func ReadFile(path string) ([]Record, []Damage, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("jitlog: %w", err)
	}
	defer f.Close()
	recs, dmg, err := ReadAll(f)
	if err != nil {
		return recs, dmg, fmt.Errorf("%s: %w", path, err)
	}
	return recs, dmg, nil
}
