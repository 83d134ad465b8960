package jitlog

import (
	"bytes"
	"fmt"
	"math"
)

// Kind says what a record tells about a range of code.
type Kind uint8

// Kinds of records. The values are those of the on-disk format.
const (
	// Snapshot: the code was live when a snapshot of the code cache (vmstructs, Compiler.perfmap) was
	// taken at the record's time; when it was loaded is unknown.
	Snapshot Kind = 1
	// Load: the code was installed at the record's time (hotspot:compiled__method__load).
	Load Kind = 2
	// Unload: the code was freed at the record's time (hotspot:compiled__method__unload). The probe
	// carries only the names, so Start and Size may be zero.
	Unload Kind = 3
)

func (k Kind) String() string {
	switch k {
	case Snapshot:
		return "SNAPSHOT"
	case Load:
		return "LOAD"
	case Unload:
		return "UNLOAD"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// MarshalText writes the kind's name, for JSON.
func (k Kind) MarshalText() ([]byte, error) {
	if !k.valid() {
		return nil, fmt.Errorf("jitlog: kind %d is not SNAPSHOT, LOAD or UNLOAD", uint8(k))
	}
	return []byte(k.String()), nil
}

// UnmarshalText reads a kind's name.
func (k *Kind) UnmarshalText(b []byte) error {
	for _, c := range []Kind{Snapshot, Load, Unload} {
		if string(b) == c.String() {
			*k = c
			return nil
		}
	}
	return fmt.Errorf("jitlog: kind %q is not SNAPSHOT, LOAD or UNLOAD", b)
}

func (k Kind) valid() bool { return k >= Snapshot && k <= Unload }

// Sources of records, as the recorder names them. Source is free text in the log (at most MaxSource
// bytes); these are the names jvmkit writes.
const (
	SourceVMStructs = "snapshot-vmstructs" // a code cache snapshot read from the JVM's memory (package vmstructs)
	SourcePerfMap   = "snapshot-perfmap"   // a snapshot written by the JVM (jcmd Compiler.perfmap)
	SourceUSDT      = "usdt"               // hotspot:compiled__method__load and unload
)

// Limits of the on-disk format. Longer names and sources are cut (at a UTF-8 boundary) by the Writer.
const (
	MaxName   = math.MaxUint16
	MaxSource = math.MaxUint8
)

// Record is one entry of the log: at Time, in process PID, Size bytes of code at Start named Name were
// snapshotted, loaded or unloaded.
type Record struct {
	// Time is nanoseconds of CLOCK_MONOTONIC, the clock of bpf_ktime_get_ns and of perf record -k mono.
	Time uint64 `json:"time"`
	// PID is the process in the initial (host) pid namespace, as perf record sees it.
	PID    int    `json:"pid"`
	Kind   Kind   `json:"kind"`
	Start  uint64 `json:"start"`
	Size   uint64 `json:"size"`
	Name   string `json:"name"`
	Source string `json:"source,omitempty"`
}

// end is the first address after the record's code, saturated at the top of the address space.
func end(start, size uint64) uint64 {
	if e := start + size; e >= start {
		return e
	}
	return math.MaxUint64
}

// ParseTime reads a time of CLOCK_MONOTONIC as perf script prints it, seconds with a fraction
// ("8376.267134341", at most nanoseconds are kept), or as whole nanoseconds ("8376267134341").
func ParseTime(s string) (uint64, error) {
	b := []byte(s)
	if bytes.IndexByte(b, '.') >= 0 {
		if t, ok := parseTime(append(b, ':')); ok {
			return t, nil
		}
	} else if t, ok := parseDec(b, math.MaxUint64); ok {
		return t, nil
	}
	return 0, fmt.Errorf("time %q: want seconds as perf script prints them (8376.267134341) or nanoseconds", s)
}
