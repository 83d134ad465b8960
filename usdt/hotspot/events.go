package hotspot

import (
	"errors"
	"fmt"
	"strings"

	"github.com/jvmkit/jvmkit/usdt"
)

// Event is a decoded firing of a HotSpot probe: one of the types below.
type Event interface {
	Head() *Header
}

// Header is what every event has.
//
// Allocation stacks will come with the unwinder: usdt records have a flags word reserved for a copy of the
// registers and a bounded copy of the user stack, which usdt.Event will carry and Header will pass on, so
// that an ObjectAlloc can be unwound into Java frames without changing its type.
type Header struct {
	Probe string `json:"probe"`   // "provider:name"
	Time  uint64 `json:"time_ns"` // CLOCK_MONOTONIC
	PID   int    `json:"pid"`     // host ids
	TID   int    `json:"tid"`
	Site  int    `json:"site"` // index into the traced sites
}

// Head returns the header.
func (h *Header) Head() *Header { return h }

// Marker is a probe without arguments: vm__init__begin, vm__init__end, vm__shutdown, gc__end,
// thread__yield, hs_private:safepoint__begin and safepoint__end.
type Marker struct{ Header }

// VMOp is vmops__request, vmops__begin or vmops__end: a VM operation (such as G1CollectForAllocation).
type VMOp struct {
	Header
	Name string `json:"name"`
	Mode int64  `json:"mode"` // VM_Operation::Mode
}

// GCBegin is gc__begin: the start of a collection inside a safepoint (SvcGCMarker); gc__end (a Marker)
// ends it.
type GCBegin struct {
	Header
	Full bool `json:"full"`
}

// MemPoolGC is mem__pool__gc__begin or mem__pool__gc__end: a memory pool's usage before or after a
// collection, in bytes.
type MemPoolGC struct {
	Header
	Manager   string `json:"manager"`
	Pool      string `json:"pool"`
	Init      uint64 `json:"init"`
	Used      uint64 `json:"used"`
	Committed uint64 `json:"committed"`
	Max       uint64 `json:"max"`
}

// Class is class__loaded, class__unloaded or a class__initialization__* probe.
type Class struct {
	Header
	Class  string `json:"class"` // internal name: java/lang/String
	Loader uint64 `json:"loader"`
	Shared bool   `json:"shared,omitempty"` // class__loaded: from the CDS archive
	Wait   bool   `json:"wait,omitempty"`   // class__initialization__*: the wait flag, where it has one
}

// Thread is thread__start or thread__stop.
type Thread struct {
	Header
	Name     string `json:"name"`
	JavaTID  int64  `json:"java_tid"`
	OSTID    uint64 `json:"os_tid"`
	IsDaemon bool   `json:"daemon"`
}

// Sleep is thread__sleep__begin (Millis) or thread__sleep__end (Interrupted).
type Sleep struct {
	Header
	Millis      int64 `json:"millis,omitempty"`
	Interrupted bool  `json:"interrupted,omitempty"`
}

// Park is thread__park__begin, thread__park__end or thread__unpark.
type Park struct {
	Header
	Parker   uint64 `json:"parker"`
	Absolute bool   `json:"absolute,omitempty"`
	Time     int64  `json:"time,omitempty"`
}

// Compile is method__compile__begin or method__compile__end.
type Compile struct {
	Header
	Compiler  string `json:"compiler"`
	Class     string `json:"class"`
	Method    string `json:"method"`
	Signature string `json:"signature"`
	Success   bool   `json:"success,omitempty"` // method__compile__end
}

// CompiledMethod is compiled__method__load (with Code and Size: insts_begin and insts_size, without the
// stubs) or compiled__method__unload (names only).
type CompiledMethod struct {
	Header
	Class     string `json:"class"`
	Method    string `json:"method"`
	Signature string `json:"signature"`
	Code      uint64 `json:"code,omitempty"`
	Size      uint64 `json:"size,omitempty"`
}

// Monitor is one of the monitor__* probes (DTraceMonitorProbes).
type Monitor struct {
	Header
	JavaTID int64  `json:"java_tid"`
	Monitor uint64 `json:"monitor"`
	Class   string `json:"class"`
	Timeout int64  `json:"timeout,omitempty"` // monitor__wait, milliseconds
}

// ObjectAlloc is object__alloc (DTraceAllocProbes).
type ObjectAlloc struct {
	Header
	JavaTID int64  `json:"java_tid"`
	Class   string `json:"class"` // internal name: "[B", "java/lang/String"
	Size    uint64 `json:"size"`  // bytes
}

// Method is method__entry or method__return (DTraceMethodProbes).
type Method struct {
	Header
	JavaTID   int64  `json:"java_tid"`
	Class     string `json:"class"`
	Method    string `json:"method"`
	Signature string `json:"signature"`
}

// ErrEvent is wrapped by Decode's errors: an event of another probe, or with fewer arguments than the
// probe has.
var ErrEvent = errors.New("hotspot: cannot decode event")

// Decode turns a usdt event of a site from Sites into its typed event. Strings that were not copied (a site
// attached without the catalogue's strings) are empty; strings cut at usdt.Options.StringSize are kept cut.
func Decode(ev *usdt.Event) (Event, error) {
	if ev == nil || ev.Probe == nil {
		return nil, fmt.Errorf("%w: no probe", ErrEvent)
	}
	info, ok := Lookup(ev.Probe.Provider + ":" + ev.Probe.Name)
	if !ok {
		return nil, fmt.Errorf("%w: %s is not a HotSpot probe", ErrEvent, ev.Probe)
	}
	if len(ev.Args) < len(info.Args) || len(ev.Probe.Args) < len(ev.Args) {
		return nil, fmt.Errorf("%w: %s with %d arguments, want %d", ErrEvent, ev.Probe, len(ev.Args), len(info.Args))
	}
	h := Header{Probe: info.String(), Time: ev.Time, PID: ev.PID, TID: ev.TID, Site: ev.Site}
	u := func(i int) uint64 { return ev.Args[i] }
	s := func(i int) int64 { return int64(ev.Args[i]) }
	b := func(i int) bool { return ev.Args[i] != 0 }
	str := func(i int) string {
		for _, x := range ev.Strings {
			if x.Arg == i {
				return string(x.Data)
			}
		}
		return ""
	}
	name := info.Name
	switch {
	case len(info.Args) == 0:
		return &Marker{h}, nil
	case strings.HasPrefix(name, "vmops__"):
		return &VMOp{Header: h, Name: str(0), Mode: s(2)}, nil
	case name == "gc__begin":
		return &GCBegin{Header: h, Full: b(0)}, nil
	case strings.HasPrefix(name, "mem__pool__gc__"):
		return &MemPoolGC{Header: h, Manager: str(0), Pool: str(2), Init: u(4), Used: u(5), Committed: u(6), Max: u(7)}, nil
	case name == "class__loaded" || name == "class__unloaded":
		return &Class{Header: h, Class: str(0), Loader: u(2), Shared: b(3)}, nil
	case strings.HasPrefix(name, "class__initialization__"):
		c := &Class{Header: h, Class: str(0), Loader: u(2)}
		if len(info.Args) > 4 {
			c.Wait = b(4)
		}
		return c, nil
	case name == "thread__start" || name == "thread__stop":
		return &Thread{Header: h, Name: str(0), JavaTID: s(2), OSTID: u(3), IsDaemon: b(4)}, nil
	case name == "thread__sleep__begin":
		return &Sleep{Header: h, Millis: s(0)}, nil
	case name == "thread__sleep__end":
		return &Sleep{Header: h, Interrupted: b(0)}, nil
	case name == "thread__park__begin":
		return &Park{Header: h, Parker: u(0), Absolute: b(1), Time: s(2)}, nil
	case strings.HasPrefix(name, "thread__park__") || name == "thread__unpark":
		return &Park{Header: h, Parker: u(0)}, nil
	case strings.HasPrefix(name, "method__compile__"):
		c := &Compile{Header: h, Compiler: str(0), Class: str(2), Method: str(4), Signature: str(6)}
		if len(info.Args) > 8 {
			c.Success = b(8)
		}
		return c, nil
	case name == "compiled__method__load":
		return &CompiledMethod{Header: h, Class: str(0), Method: str(2), Signature: str(4), Code: u(6), Size: u(7)}, nil
	case name == "compiled__method__unload":
		return &CompiledMethod{Header: h, Class: str(0), Method: str(2), Signature: str(4)}, nil
	case strings.HasPrefix(name, "monitor__"):
		m := &Monitor{Header: h, JavaTID: s(0), Monitor: u(1), Class: str(2)}
		if len(info.Args) > 4 {
			m.Timeout = s(4)
		}
		return m, nil
	case name == "object__alloc":
		return &ObjectAlloc{Header: h, JavaTID: s(0), Class: str(1), Size: u(3)}, nil
	case name == "method__entry" || name == "method__return":
		return &Method{Header: h, JavaTID: s(0), Class: str(1), Method: str(3), Signature: str(5)}, nil
	}
	return nil, fmt.Errorf("%w: no decoder for %s", ErrEvent, ev.Probe)
}
