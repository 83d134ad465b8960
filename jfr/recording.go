package jfr

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
)

// HeaderSize is the size of a chunk header.
const HeaderSize = 68

var magic = []byte("FLR\x00")

// Type ids of the two events every chunk has (jdk.jfr.internal.consumer.ChunkParser).
const (
	metadataTypeID   = 0
	checkpointTypeID = 1
)

// ErrNotJFR is returned for data that does not start with a chunk header.
var ErrNotJFR = errors.New("not a JFR recording (no FLR magic)")

// FormatError is damage in a recording: data that cannot be read, at a file offset. What precedes it
// was read.
type FormatError struct {
	Offset int64 // file offset of the damage
	Chunk  int   // index of the chunk it is in
	Err    error
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("chunk %d, offset %d: %v", e.Chunk, e.Offset, e.Err)
}

func (e *FormatError) Unwrap() error { return e.Err }

// Header is a chunk header (jdk.jfr.internal.consumer.ChunkHeader): 68 bytes, big-endian.
type Header struct {
	Major, Minor       uint16
	Size               int64 // bytes in the chunk, header included
	ConstantPoolOffset int64 // of the last checkpoint event, from the chunk start
	MetadataOffset     int64 // of the metadata event, from the chunk start
	StartNanos         int64 // since the epoch
	DurationNanos      int64
	StartTicks         int64
	TicksPerSecond     int64
	// FileState is 0 when the chunk is finished (format 2.1, JDK 14+: the last four bytes are file
	// state, two reserved bytes and flags; 2.0, JDK 11: one 32-bit feature word, read here as Flags).
	FileState byte
	Flags     byte // bit 0: compressed integers, bit 1: final chunk
}

// Compressed tells whether integers are varints.
func (h *Header) Compressed() bool { return h.Flags&1 != 0 }

func parseHeader(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, fmt.Errorf("chunk header: %w (%d of %d bytes)", errShort, len(b), HeaderSize)
	}
	if !bytes.Equal(b[:4], magic) {
		return Header{}, ErrNotJFR
	}
	be := binary.BigEndian
	h := Header{
		Major:              be.Uint16(b[4:]),
		Minor:              be.Uint16(b[6:]),
		Size:               int64(be.Uint64(b[8:])),
		ConstantPoolOffset: int64(be.Uint64(b[16:])),
		MetadataOffset:     int64(be.Uint64(b[24:])),
		StartNanos:         int64(be.Uint64(b[32:])),
		DurationNanos:      int64(be.Uint64(b[40:])),
		StartTicks:         int64(be.Uint64(b[48:])),
		TicksPerSecond:     int64(be.Uint64(b[56:])),
	}
	if h.Major != 1 && h.Major != 2 {
		return h, fmt.Errorf("chunk header: file version %d.%d: only versions 1.x and 2.x (JDK 9 and later) are known", h.Major, h.Minor)
	}
	if h.Major == 2 && h.Minor == 0 || h.Major == 1 {
		h.Flags = byte(be.Uint32(b[64:]))
	} else {
		h.FileState = b[64]
		h.Flags = b[67]
	}
	return h, nil
}

// Chunk is one chunk of a recording: its header, metadata and constant pools, and the events in it.
type Chunk struct {
	Index    int
	Offset   int64 // file offset of the header
	Header   Header
	Metadata *Metadata
	// End is the file offset after the last event read: the chunk's end, or where damage begins.
	End int64
	// Checkpoints and MetadataEvents count those events.
	Checkpoints, MetadataEvents int

	rec       *Recording
	prev      *Chunk
	finished  bool
	lossy     bool    // cut short or a checkpoint damaged: a missing constant is lost, not null
	cpOffsets []int64 // checkpoints the scan found
	prepared  bool
	prepErr   error
	data      []byte // the chunk's bytes up to End
	pools     map[int64]*pool
	events    []eventRef
	// Sizes and counts of every event in the chunk by type id, metadata and checkpoints included.
	counts map[int64]*TypeCount
}

// eventRef locates an event of a known type.
type eventRef struct {
	off    int32 // from the chunk start
	size   int32
	typ    *Type
	typeID int64
	end    int64 // end time in ticks: the start, plus the duration if the type has one
}

// TypeCount is what a chunk, or a recording, holds of one event type.
type TypeCount struct {
	ID    int64
	Name  string // "" for an id the metadata does not declare
	Count int64
	Bytes int64
}

// Recording is a parsed recording: chunks in file order.
type Recording struct {
	Chunks []*Chunk
	// Err is the damage that stopped reading, or nil. Everything before it is in Chunks.
	Err error

	data  []byte
	conv  timeConverter
	unmap func() error
}

// Options tune Parse.
type Options struct{}

// Parse reads a recording held in data: every chunk's header, metadata and constant pools, and the
// position of every event. Events are decoded when they are read (Events, Chunk.Events). A damaged
// recording (cut short, corrupt) yields the chunks and events before the damage, and Recording.Err
// and the returned error describe it (a *FormatError with the file offset). Data that is not a
// recording at all returns ErrNotJFR and no Recording.
//
// Parse keeps data: the caller must not change it while the Recording is used.
func Parse(data []byte) (*Recording, error) {
	if len(data) >= 4 && !bytes.Equal(data[:4], magic) || len(data) < 4 && !bytes.HasPrefix(magic, data) {
		return nil, ErrNotJFR
	}
	r := &Recording{data: data}
	if len(data) == 0 {
		r.Err = &FormatError{Err: errors.New("empty file: no chunk header")}
		return r, r.Err
	}
	var prev *Chunk
	for off := int64(0); off < int64(len(data)); {
		c, err := r.readChunk(off, len(r.Chunks), prev)
		if c != nil {
			r.Chunks = append(r.Chunks, c)
			prev = c
		}
		if err != nil {
			r.Err = err
			break
		}
		off = c.End
	}
	if len(r.Chunks) > 0 {
		first := r.Chunks[0]
		r.conv = newTimeConverter(&first.Header, first.Metadata)
	}
	return r, r.Err
}

// countEvents counts the events from pos to the end of data, or up to the first that is damaged.
func countEvents(data []byte, pos, base int64, compressed bool) int {
	n := 0
	for pos < int64(len(data)) {
		in := input{b: data, pos: int(pos), base: base, compressed: compressed}
		size := in.size()
		if in.err != nil || size <= 0 || size > int64(len(data))-pos {
			break
		}
		n++
		pos += size
	}
	return n
}

func (r *Recording) readChunk(off int64, index int, prev *Chunk) (*Chunk, error) {
	damage := func(at int64, format string, args ...any) error {
		return &FormatError{Offset: at, Chunk: index, Err: fmt.Errorf(format, args...)}
	}
	rest := r.data[off:]
	h, err := parseHeader(rest)
	if err != nil {
		return nil, &FormatError{Offset: off, Chunk: index, Err: err}
	}
	c := &Chunk{Index: index, Offset: off, Header: h, rec: r, prev: prev, pools: map[int64]*pool{}, counts: map[int64]*TypeCount{}}
	finished := h.Size >= HeaderSize && h.Size <= int64(len(rest)) &&
		h.MetadataOffset >= HeaderSize && h.MetadataOffset < h.Size &&
		h.ConstantPoolOffset >= HeaderSize && h.ConstantPoolOffset < h.Size &&
		h.FileState == 0
	limit := int64(len(rest))
	if finished {
		limit = h.Size
	}
	c.data = rest[:limit]

	// One pass over the events: sizes and types, the metadata and checkpoint events, the start and
	// end of every event. A finished chunk's metadata and checkpoints are also where its header says;
	// the pass finds the same ones (streaming chunks have several of each, chained by the header).
	type span struct{ off, end int64 }
	var metas, cps []span
	pos := int64(HeaderSize)
	// The index is made once at its size: a big recording has millions of events, and growing the
	// slice as they come was half of `jvmkit jfr summary`'s time (copies, page faults, GC).
	c.events = make([]eventRef, 0, countEvents(c.data[:limit], pos, off, h.Compressed()))
	var scanErr error
	for pos < limit {
		in := input{b: c.data[:limit], pos: int(pos), base: off, compressed: h.Compressed()}
		size := in.size()
		typeID := in.long()
		if in.err != nil {
			scanErr = damage(off+pos, "event header: %v (the recording is cut short or corrupt)", in.err)
			break
		}
		if size <= 0 || size > limit-pos {
			why := "the recording is corrupt"
			if !finished && (h.Size > int64(len(rest)) || h.FileState != 0) {
				why = "the recording is cut short"
			}
			scanErr = damage(off+pos, "event of type %d has size %d, but %d bytes are left in the chunk (%s)", typeID, size, limit-pos, why)
			break
		}
		tc := c.counts[typeID]
		if tc == nil {
			tc = &TypeCount{ID: typeID}
			c.counts[typeID] = tc
		}
		tc.Count++
		tc.Bytes += size
		switch typeID {
		case metadataTypeID:
			metas = append(metas, span{pos, pos + size})
			c.MetadataEvents++
		case checkpointTypeID:
			cps = append(cps, span{pos, pos + size})
			c.Checkpoints++
		default:
			if pos > math.MaxInt32 || size > math.MaxInt32 {
				scanErr = damage(off+pos, "chunk larger than 2 GiB")
				break
			}
			c.events = append(c.events, eventRef{off: int32(pos), size: int32(size), typeID: typeID})
		}
		if scanErr != nil {
			break
		}
		pos += size
	}
	c.End = off + pos
	if scanErr != nil && !finished && h.FileState != 0 {
		var fe *FormatError
		if errors.As(scanErr, &fe) {
			// The JVM is still writing (or died writing) this chunk: an event cut short at its end is
			// that, not corruption.
			scanErr = damage(fe.Offset, "chunk is unfinished (file state %d): the recording was copied while the JVM wrote it, or the JVM died; its last event is cut short: %v", h.FileState, fe.Err)
		}
	}
	if scanErr == nil && !finished {
		switch {
		case h.FileState != 0 && h.Size <= int64(len(rest)) && h.Size >= HeaderSize:
			scanErr = damage(off+pos, "chunk is unfinished (file state %d): the recording was copied while the JVM wrote it, or the JVM died", h.FileState)
		default:
			scanErr = damage(off+pos, "chunk header says %d bytes, but the file ends after %d: the recording is cut short", h.Size, len(rest))
		}
	}
	if scanErr != nil && !finished {
		// Nothing after the damage is trusted; a finished chunk's metadata and constants, which its
		// header locates, are still read.
		c.data = c.data[:pos]
	}

	// Metadata: where the header says in a finished chunk, else the last whole one the pass found,
	// else the previous chunk's (type ids are the JVM's and do not change within a recording).
	metaOff := int64(-1)
	if finished {
		metaOff = h.MetadataOffset
	} else if len(metas) > 0 {
		metaOff = metas[len(metas)-1].off
	}
	if metaOff >= 0 {
		m, err := c.readMetadataAt(metaOff)
		if err != nil {
			return c.truncate(), err
		}
		c.Metadata = m
	} else if prev != nil && prev.Metadata != nil {
		c.Metadata = prev.Metadata
	} else {
		if scanErr == nil {
			scanErr = damage(off, "no metadata event")
		}
		return c.truncate(), fmt.Errorf("%w; no metadata event precedes the damage, so no event of this chunk can be read", scanErr)
	}

	// Constants and event times are read when events are first read (prepare): a summary needs
	// neither.
	c.finished = finished
	for _, sp := range cps {
		c.cpOffsets = append(c.cpOffsets, sp.off)
	}
	for id, tc := range c.counts {
		if t := c.Metadata.Type(id); t != nil {
			tc.Name = t.Name
		}
	}
	return c, scanErr
}

// prepare indexes the chunk's constants and the types and times of its events, once. A chain of
// checkpoints that cannot be followed leaves no event readable; a checkpoint that cannot be read
// leaves the events with the constants before it (nulls for the rest, as in the JDK).
func (c *Chunk) prepare() error {
	if c.prepared {
		return c.prepErr
	}
	c.prepared = true
	c.prepErr = c.doPrepare()
	return c.prepErr
}

func (c *Chunk) doPrepare() error {
	if c.Metadata == nil {
		c.events = nil
		return nil
	}
	chain := c.cpOffsets
	if c.finished {
		var err error
		if chain, err = c.checkpointChain(); err != nil {
			c.events = nil
			return err
		}
	}
	var cpErr error
	for _, at := range chain {
		if err := c.readCheckpoint(at); err != nil {
			// Constants read so far stay: events that need the rest get nulls, as in the JDK.
			cpErr = err
			break
		}
	}
	c.lossy = !c.finished || cpErr != nil
	// Types and times of the events.
	kept := c.events[:0]
	for _, e := range c.events {
		t := c.Metadata.Type(e.typeID)
		if t == nil || !t.Event() {
			continue // types the metadata does not declare as events: the JDK skips them too
		}
		e.typ = t
		in := c.in(int64(e.off), int64(e.off)+int64(e.size))
		in.size() // size
		in.long() // type
		var start, dur int64
		if len(t.Fields) > 0 {
			start = in.long()
			if len(t.Fields) > 1 && t.Fields[1].Name == "duration" {
				dur = in.long()
			}
		}
		e.end = start + dur
		kept = append(kept, e)
	}
	c.events = kept
	return cpErr
}

// checkpointChain returns a finished chunk's checkpoints, oldest first: chained backwards from the
// header's offset, as the JDK reads them (an unfinished chunk's are all those the scan found). When a
// key repeats, the earliest checkpoint's value counts, as in the JDK (it reads the chain from the end
// and lets each older value replace the newer).
func (c *Chunk) checkpointChain() ([]int64, error) {
	var chain []int64
	seen := map[int64]bool{}
	for at := c.Header.ConstantPoolOffset; ; {
		if seen[at] {
			return nil, c.damage(c.Offset+at, fmt.Errorf("checkpoint chain loops back to offset %d", c.Offset+at))
		}
		seen[at] = true
		chain = append(chain, at)
		delta, err := c.checkpointDelta(at)
		if err != nil {
			return nil, err
		}
		if delta == 0 {
			break
		}
		at += delta
		if at < HeaderSize || at >= int64(len(c.data)) {
			return nil, c.damage(c.Offset+at-delta, fmt.Errorf("checkpoint delta %d points outside the chunk", delta))
		}
	}
	slices.Reverse(chain)
	return chain, nil
}

// truncate drops the events of a chunk whose metadata or constants cannot be read.
func (c *Chunk) truncate() *Chunk {
	c.events = nil
	return c
}

// in returns an input over the chunk's bytes [from, to), offsets from the chunk start.
func (c *Chunk) in(from, to int64) *input {
	return &input{b: c.data[:to], pos: int(from), base: c.Offset, compressed: c.Header.Compressed()}
}

func (c *Chunk) damage(at int64, err error) error {
	return &FormatError{Offset: at, Chunk: c.Index, Err: err}
}

func (c *Chunk) readMetadataAt(at int64) (*Metadata, error) {
	if at < HeaderSize || at >= int64(len(c.data)) {
		return nil, c.damage(c.Offset+at, fmt.Errorf("metadata offset %d is outside the chunk", at))
	}
	in := c.in(at, int64(len(c.data)))
	size := in.size()
	typeID := in.long()
	if in.err == nil && typeID != metadataTypeID {
		return nil, c.damage(c.Offset+at, fmt.Errorf("expected the metadata event, found an event of type %d", typeID))
	}
	if in.err == nil && (size <= 0 || size > int64(len(c.data))-at) {
		return nil, c.damage(c.Offset+at, fmt.Errorf("metadata event size %d is outside the chunk", size))
	}
	if in.err != nil {
		return nil, c.damage(in.errOff, fmt.Errorf("metadata event: %w", in.err))
	}
	in.b = in.b[:at+size]
	m, err := readMetadata(in, c.Offset+at)
	if err != nil {
		o := in.errOff
		if in.err == nil {
			o = c.Offset + at
		}
		return nil, c.damage(o, fmt.Errorf("metadata event: %w", err))
	}
	return m, nil
}

func (c *Chunk) checkpointDelta(at int64) (int64, error) {
	in := c.in(at, int64(len(c.data)))
	in.size() // size
	typeID := in.long()
	in.long() // start
	in.long() // duration
	delta := in.long()
	if in.err != nil {
		return 0, c.damage(in.errOff, fmt.Errorf("checkpoint event: %w", in.err))
	}
	if typeID != checkpointTypeID {
		return 0, c.damage(c.Offset+at, fmt.Errorf("expected a checkpoint event (type 1), found type %d", typeID))
	}
	return delta, nil
}

// NumEvents returns the number of events of known types in the chunk.
func (c *Chunk) NumEvents() int {
	_ = c.prepare() // a damaged chunk counts the events it can read
	return len(c.events)
}

// Counts returns the count and size of every event type in the chunk, metadata and checkpoint events
// included, and types the metadata declares but the chunk has none of.
func (c *Chunk) Counts() map[int64]*TypeCount { return c.counts }

// Metadata returns the metadata of the last chunk that has some, or nil.
func (r *Recording) Metadata() *Metadata {
	for i := len(r.Chunks) - 1; i >= 0; i-- {
		if m := r.Chunks[i].Metadata; m != nil {
			return m
		}
	}
	return nil
}
