package jitlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"unicode/utf8"
)

// The on-disk format; see the package documentation.
const (
	fileMagic  = "JVMKJLOG"
	version    = 1
	headerSize = 16

	recMagic0, recMagic1 = 'J', 'R'
	recFixed             = 36 // bytes before the name
	recOverhead          = recFixed + 4
	maxRecord            = recOverhead + MaxName + MaxSource
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrNotLog is returned for a file that does not start with the header of a JIT log.
var ErrNotLog = errors.New("jitlog: not a JIT log (no JVMKJLOG header)")

// VersionError is returned for a log of a format version that this package does not read.
type VersionError struct{ Version uint32 }

func (e *VersionError) Error() string {
	return fmt.Sprintf("jitlog: log format version %d; this jvmkit reads version %d (upgrade jvmkit)", e.Version, version)
}

func appendHeader(b []byte) []byte {
	b = append(b, fileMagic...)
	b = binary.LittleEndian.AppendUint32(b, version)
	return binary.LittleEndian.AppendUint32(b, 0) // flags
}

// checkHeader checks a complete header.
func checkHeader(h []byte) error {
	if string(h[:8]) != fileMagic {
		return ErrNotLog
	}
	if v := binary.LittleEndian.Uint32(h[8:]); v != version {
		return &VersionError{Version: v}
	}
	if f := binary.LittleEndian.Uint32(h[12:]); f != 0 {
		return fmt.Errorf("jitlog: unknown header flags %#x (written by a newer jvmkit?)", f)
	}
	return nil
}

// truncUTF8 cuts s to at most n bytes without splitting a UTF-8 sequence.
func truncUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && i > n-utf8.UTFMax && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i]
}

// appendRecord encodes r; the caller has checked Kind and PID.
func appendRecord(b []byte, r *Record) []byte {
	name := truncUTF8(r.Name, MaxName)
	src := truncUTF8(r.Source, MaxSource)
	start := len(b)
	b = append(b, recMagic0, recMagic1, byte(r.Kind), byte(len(src)))
	b = binary.LittleEndian.AppendUint16(b, uint16(len(name)))
	b = append(b, 0, 0)
	b = binary.LittleEndian.AppendUint64(b, r.Time)
	b = binary.LittleEndian.AppendUint64(b, r.Start)
	b = binary.LittleEndian.AppendUint64(b, r.Size)
	b = binary.LittleEndian.AppendUint32(b, uint32(r.PID))
	b = append(b, name...)
	b = append(b, src...)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b[start:], castagnoli))
}

// recordLen reads the length of the record at the start of b, which holds at least recFixed bytes, or
// says why these bytes cannot start a record.
func recordLen(b []byte) (int, string) {
	switch {
	case b[0] != recMagic0 || b[1] != recMagic1:
		return 0, "no record marker"
	case !Kind(b[2]).valid():
		return 0, fmt.Sprintf("unknown record kind %d", b[2])
	case b[6] != 0 || b[7] != 0:
		return 0, "bad record header"
	case binary.LittleEndian.Uint32(b[32:]) > maxPID:
		return 0, "bad record header (pid out of range)"
	}
	return recOverhead + int(binary.LittleEndian.Uint16(b[4:])) + int(b[3]), ""
}

// maxPID bounds pids: pid_t is a positive int32 (and Linux's pid_max is at most 2^22).
const maxPID = 1<<31 - 1

// decodeRecord decodes a complete record of length n (from recordLen) and checks its checksum.
func decodeRecord(b []byte, n int) (Record, bool) {
	body := b[:n-4]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(b[n-4:]) {
		return Record{}, false
	}
	nameLen := int(binary.LittleEndian.Uint16(b[4:]))
	return Record{
		Kind:   Kind(b[2]),
		Time:   binary.LittleEndian.Uint64(b[8:]),
		Start:  binary.LittleEndian.Uint64(b[16:]),
		Size:   binary.LittleEndian.Uint64(b[24:]),
		PID:    int(binary.LittleEndian.Uint32(b[32:])),
		Name:   string(b[recFixed : recFixed+nameLen]),
		Source: string(b[recFixed+nameLen : n-4]),
	}, true
}
