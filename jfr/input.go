package jfr

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unicode/utf16"
	"unicode/utf8"
)

// errShort is the cause of every read past the end of an event, a checkpoint or the file.
var errShort = errors.New("unexpected end of data")

// input reads the primitives of the format from b, a slice of the file that starts at file offset base.
// Errors are sticky: the first one is kept with the offset it happened at, later reads return zero
// values, and the caller checks err once after a group of reads.
type input struct {
	b          []byte
	pos        int
	base       int64
	compressed bool // integers are LEB128-style varints (every JDK 11+ recording); else big-endian
	err        error
	errOff     int64
	lost       int // LostConstant values read (see Chunk.constant)
}

func (in *input) offset() int64 { return in.base + int64(in.pos) }

func (in *input) fail(err error) {
	if in.err == nil {
		in.err = err
		in.errOff = in.offset()
	}
}

func (in *input) failf(format string, args ...any) { in.fail(fmt.Errorf(format, args...)) }

// u8 reads a raw byte.
func (in *input) u8() byte {
	if in.pos >= len(in.b) {
		in.fail(errShort)
		return 0
	}
	v := in.b[in.pos]
	in.pos++
	return v
}

func (in *input) raw(n int) []byte {
	if n < 0 || n > len(in.b)-in.pos {
		in.fail(errShort)
		in.pos = len(in.b)
		return nil
	}
	p := in.b[in.pos : in.pos+n]
	in.pos += n
	return p
}

func (in *input) be16() uint16 {
	p := in.raw(2)
	if p == nil {
		return 0
	}
	return binary.BigEndian.Uint16(p)
}

func (in *input) be32() uint32 {
	p := in.raw(4)
	if p == nil {
		return 0
	}
	return binary.BigEndian.Uint32(p)
}

func (in *input) be64() uint64 {
	p := in.raw(8)
	if p == nil {
		return 0
	}
	return binary.BigEndian.Uint64(p)
}

// varint reads the JDK's compressed long (jdk.jfr.internal.consumer.RecordingInput.readLong): up to
// eight bytes of seven bits, low bits first, each with a continuation bit, and a ninth byte of eight
// bits. Every integer type is written this way and narrowed by the reader.
func (in *input) varint() uint64 {
	b := in.b
	i := in.pos
	if i+9 <= len(b) {
		// Fast path: all nine bytes present, no bounds checks inside.
		var v uint64
		for shift := uint(0); shift < 56; shift += 7 {
			c := b[i]
			i++
			v |= uint64(c&0x7f) << shift
			if c < 0x80 {
				in.pos = i
				return v
			}
		}
		v |= uint64(b[i]) << 56
		in.pos = i + 1
		return v
	}
	var v uint64
	for shift := uint(0); ; shift += 7 {
		if i >= len(b) {
			in.pos = len(b)
			in.fail(errShort)
			return 0
		}
		c := b[i]
		i++
		if shift == 56 {
			v |= uint64(c) << 56
			break
		}
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			break
		}
	}
	in.pos = i
	return v
}

// size reads an event size: a varint in compressed recordings, else a 32-bit integer (the JVM
// writes sizes as u4 when integers are not compressed).
func (in *input) size() int64 {
	if in.compressed {
		return int64(in.varint())
	}
	return int64(in.be32())
}

func (in *input) long() int64 {
	if in.compressed {
		return int64(in.varint())
	}
	return int64(in.be64())
}

func (in *input) int() int32 {
	if in.compressed {
		return int32(in.varint())
	}
	return int32(in.be32())
}

func (in *input) short() int16 {
	if in.compressed {
		return int16(in.varint())
	}
	return int16(in.be16())
}

func (in *input) char() uint16 {
	if in.compressed {
		return uint16(in.varint())
	}
	return in.be16()
}

func (in *input) float() float32 { return math.Float32frombits(in.be32()) }

func (in *input) double() float64 { return math.Float64frombits(in.be64()) }

// count reads an array or string length and checks that at least min bytes per element remain, so
// that corrupt data cannot make us allocate more than the input could hold.
func (in *input) count(minPer int) int {
	n := in.int()
	if in.err != nil {
		return 0
	}
	if n < 0 {
		in.failf("negative length %d", n)
		return 0
	}
	if minPer > 0 && int64(n)*int64(minPer) > int64(len(in.b)-in.pos) {
		in.failf("length %d exceeds the %d bytes left", n, len(in.b)-in.pos)
		return 0
	}
	return int(n)
}

// String encodings (jdk.jfr.internal.consumer.StringParser.Encoding).
const (
	strNull   = 0
	strEmpty  = 1
	strPool   = 2
	strUTF8   = 3
	strChars  = 4
	strLatin1 = 5
)

// inlineString reads a string that is not a constant-pool reference; for strPool it returns the key
// and ok=false.
func (in *input) inlineString() (s string, null bool, key int64, isRef bool) {
	enc := in.u8()
	switch enc {
	case strNull:
		return "", true, 0, false
	case strEmpty:
		return "", false, 0, false
	case strPool:
		return "", false, in.long(), true
	case strUTF8:
		n := in.count(1)
		return decodeUTF8(in.raw(n)), false, 0, false
	case strChars:
		n := in.count(1)
		if in.err != nil {
			return "", false, 0, false
		}
		u := make([]uint16, n)
		for i := range u {
			u[i] = in.char()
		}
		return string(utf16.Decode(u)), false, 0, false
	case strLatin1:
		n := in.count(1)
		p := in.raw(n)
		r := make([]rune, len(p))
		for i, c := range p {
			r[i] = rune(c)
		}
		return string(r), false, 0, false
	}
	if in.err == nil {
		in.pos--
		in.failf("unknown string encoding %d", enc)
	}
	return "", true, 0, false
}

// skipString skips a string of any encoding.
func (in *input) skipString() {
	switch enc := in.u8(); enc {
	case strNull, strEmpty:
	case strPool:
		in.long()
	case strUTF8, strLatin1:
		in.raw(in.count(1))
	case strChars:
		n := in.count(1)
		for i := 0; i < n && in.err == nil; i++ {
			in.char()
		}
	default:
		if in.err == nil {
			in.pos--
			in.failf("unknown string encoding %d", enc)
		}
	}
}

// decodeUTF8 decodes as Java's new String(bytes, UTF_8) does: valid sequences as they are, each
// maximal ill-formed subsequence as one U+FFFD (the Unicode "maximal subpart" practice Java follows),
// where Go's string conversion would keep the bytes.
func decodeUTF8(p []byte) string {
	if utf8.Valid(p) {
		return string(p)
	}
	out := make([]byte, 0, len(p)+8)
	for i := 0; i < len(p); {
		r, n := utf8.DecodeRune(p[i:])
		if r != utf8.RuneError || n > 1 {
			out = append(out, p[i:i+n]...)
			i += n
			continue
		}
		out = utf8.AppendRune(out, utf8.RuneError)
		i += maximalSubpart(p[i:])
	}
	return string(out)
}

// maximalSubpart is the length of the longest prefix of p (which does not start a valid sequence)
// that is a prefix of some valid UTF-8 sequence, at least 1.
func maximalSubpart(p []byte) int {
	c := p[0]
	var need int
	lo, hi := byte(0x80), byte(0xbf)
	switch {
	case c >= 0xc2 && c <= 0xdf:
		need = 1
	case c == 0xe0:
		need, lo = 2, 0xa0
	case c == 0xed:
		need, hi = 2, 0x9f
	case c >= 0xe1 && c <= 0xef:
		need = 2
	case c == 0xf0:
		need, lo = 3, 0x90
	case c == 0xf4:
		need, hi = 3, 0x8f
	case c >= 0xf1 && c <= 0xf3:
		need = 3
	default:
		return 1
	}
	n := 1
	for k := 0; k < need && n < len(p); k++ {
		b := p[n]
		if b < lo || b > hi {
			break
		}
		lo, hi = 0x80, 0xbf
		n++
	}
	return n
}
