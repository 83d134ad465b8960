package hotspot

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/jvmkit/jvmkit/usdt"
)

// Probe describes one of HotSpot's probes (src/hotspot/os/posix/dtrace/hotspot.d, hs_private.d).
type Probe struct {
	Provider string           `json:"provider"` // "hotspot" or "hs_private"
	Name     string           `json:"name"`     // as in the notes: "object__alloc"
	Args     []string         `json:"args"`     // what each argument is, in order
	Strings  []usdt.StringArg `json:"strings"`  // the (pointer, length) pairs among them; HotSpot's strings have no NUL
	// Flag is the -XX flag without which HotSpot does not fire the probe ("" for none); see the package
	// documentation for when the flag is read.
	Flag string `json:"flag,omitempty"`
}

// String names the probe as "provider:name".
func (p *Probe) String() string { return p.Provider + ":" + p.Name }

// The DTrace flags.
const (
	AllocProbes    = "DTraceAllocProbes"
	MethodProbes   = "DTraceMethodProbes"
	MonitorProbes  = "DTraceMonitorProbes"
	ExtendedProbes = "ExtendedDTraceProbes" // JDK 17-19: all three; obsolete in 20, unrecognized in 25
)

func strs(pairs ...int) []usdt.StringArg {
	var out []usdt.StringArg
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, usdt.StringArg{Ptr: pairs[i], Len: pairs[i+1]})
	}
	return out
}

var (
	classInitArgs = []string{"class", "class_len", "loader", "thread_type", "wait"}
	monitorArgs   = []string{"java_tid", "monitor", "class", "class_len"}
	methodArgs    = []string{"java_tid", "class", "class_len", "method", "method_len", "signature", "signature_len"}
	compileArgs   = []string{"compiler", "compiler_len", "class", "class_len", "method", "method_len", "signature", "signature_len"}
	poolArgs      = []string{"manager", "manager_len", "pool", "pool_len", "init", "used", "committed", "max"}
)

// catalogue is every probe of JDK 17 and 25's libjvm.so that hotspot.d declares and that has a note
// (gc__thread__* are declared but never fired), plus hs_private's safepoint pair.
var catalogue = func() []Probe {
	h := func(name string, args []string, s []usdt.StringArg, flag string) Probe {
		return Probe{Provider: "hotspot", Name: name, Args: args, Strings: s, Flag: flag}
	}
	ps := []Probe{
		h("vm__init__begin", nil, nil, ""),
		h("vm__init__end", nil, nil, ""),
		h("vm__shutdown", nil, nil, ""),
		h("vmops__request", []string{"name", "name_len", "mode"}, strs(0, 1), ""),
		h("vmops__begin", []string{"name", "name_len", "mode"}, strs(0, 1), ""),
		h("vmops__end", []string{"name", "name_len", "mode"}, strs(0, 1), ""),
		h("gc__begin", []string{"is_full"}, nil, ""),
		h("gc__end", nil, nil, ""),
		h("mem__pool__gc__begin", poolArgs, strs(0, 1, 2, 3), ""),
		h("mem__pool__gc__end", poolArgs, strs(0, 1, 2, 3), ""),
		h("class__loaded", []string{"class", "class_len", "loader", "is_shared"}, strs(0, 1), ""),
		h("class__unloaded", []string{"class", "class_len", "loader", "is_shared"}, strs(0, 1), ""),
		h("class__initialization__required", classInitArgs[:4], strs(0, 1), ""),
	}
	for _, n := range []string{"recursive", "concurrent", "erroneous", "super__failed", "clinit", "error", "end"} {
		ps = append(ps, h("class__initialization__"+n, classInitArgs, strs(0, 1), ""))
	}
	ps = append(ps,
		h("thread__start", []string{"name", "name_len", "java_tid", "os_tid", "is_daemon"}, strs(0, 1), ""),
		h("thread__stop", []string{"name", "name_len", "java_tid", "os_tid", "is_daemon"}, strs(0, 1), ""),
		h("thread__sleep__begin", []string{"millis"}, nil, ""),
		h("thread__sleep__end", []string{"interrupted"}, nil, ""),
		h("thread__yield", nil, nil, ""),
		h("thread__park__begin", []string{"parker", "is_absolute", "time"}, nil, ""),
		h("thread__park__end", []string{"parker"}, nil, ""),
		h("thread__unpark", []string{"parker"}, nil, ""),
		h("method__compile__begin", compileArgs, strs(0, 1, 2, 3, 4, 5, 6, 7), ""),
		h("method__compile__end", append(compileArgs[:8:8], "success"), strs(0, 1, 2, 3, 4, 5, 6, 7), ""),
		h("compiled__method__load", append(compileArgs[2:8:8], "code", "code_size"), strs(0, 1, 2, 3, 4, 5), ""),
		h("compiled__method__unload", compileArgs[2:8], strs(0, 1, 2, 3, 4, 5), ""),
	)
	for _, n := range []string{"contended__enter", "contended__entered", "contended__exit", "notify", "notifyAll", "waited"} {
		ps = append(ps, h("monitor__"+n, monitorArgs, strs(2, 3), MonitorProbes))
	}
	ps = append(ps,
		h("monitor__wait", append(monitorArgs[:4:4], "timeout"), strs(2, 3), MonitorProbes),
		h("object__alloc", []string{"java_tid", "class", "class_len", "size"}, strs(1, 2), AllocProbes),
		h("method__entry", methodArgs, strs(1, 2, 3, 4, 5, 6), MethodProbes),
		h("method__return", methodArgs, strs(1, 2, 3, 4, 5, 6), MethodProbes),
		Probe{Provider: "hs_private", Name: "safepoint__begin"},
		Probe{Provider: "hs_private", Name: "safepoint__end"},
	)
	return ps
}()

// Probes returns the catalogue of HotSpot probes this package decodes.
func Probes() []Probe {
	out := make([]Probe, len(catalogue))
	copy(out, catalogue)
	return out
}

// Lookup finds a probe of the catalogue by "provider:name", or by name alone for the hotspot provider.
func Lookup(name string) (Probe, bool) {
	provider, n, ok := strings.Cut(name, ":")
	if !ok {
		provider, n = "hotspot", name
	}
	for _, p := range catalogue {
		if p.Provider == provider && p.Name == n {
			return p, true
		}
	}
	return Probe{}, false
}

// ErrNoProbes is returned for a process without a libjvm.so that has probes.
var ErrNoProbes = errors.New("no HotSpot probes")

// Sites selects, among a process's modules (usdt.Modules), every site of the named probes ("object__alloc",
// "hotspot:gc__begin") in libjvm.so, with the catalogue's strings to copy. A probe the JDK lacks is an error.
func Sites(mods []usdt.Module, names ...string) ([]usdt.Site, error) {
	var lib *usdt.Module
	for i := range mods {
		if path.Base(mods[i].Path) == "libjvm.so" {
			lib = &mods[i]
			break
		}
	}
	if lib == nil {
		return nil, fmt.Errorf("hotspot: %w: the process maps no libjvm.so with USDT notes (a JDK built without --enable-dtrace has none)", ErrNoProbes)
	}
	var sites []usdt.Site
	for _, name := range names {
		info, ok := Lookup(name)
		if !ok {
			return nil, fmt.Errorf("hotspot: unknown probe %q", name)
		}
		n := 0
		for _, p := range lib.Probes {
			if p.Provider != info.Provider || p.Name != info.Name {
				continue
			}
			if p.Err != nil {
				return nil, fmt.Errorf("hotspot: %w", p.Err)
			}
			if len(p.Args) < len(info.Args) {
				return nil, fmt.Errorf("hotspot: probe %s at %#x has %d arguments, want %d", &p, p.PC, len(p.Args), len(info.Args))
			}
			sites = append(sites, usdt.Site{File: lib.File, Probe: p, Strings: info.Strings})
			n++
		}
		if n == 0 {
			return nil, fmt.Errorf("hotspot: %w: %s has no probe %s", ErrNoProbes, lib.Path, &info)
		}
	}
	return sites, nil
}
