package jvmkit

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/jvmkit/jvmkit/usdt"
)

func (a *jvmkit) usdtCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "usdt",
		Short: "List and trace USDT probes (SystemTap SDT notes, as in HotSpot's libjvm.so) with eBPF",
		Long: `usdt lists the statically defined probes of an ELF file or of the files a process maps (the
SystemTap SDT notes that HotSpot's libjvm.so, Python and others carry) and traces them with uprobes and
eBPF: no agent, no restart, nothing to compile. Tracing needs root (CAP_BPF and CAP_PERFMON).

HotSpot fires some probes only with a flag: object__alloc with -XX:+DTraceAllocProbes, method__entry and
method__return with -XX:+DTraceMethodProbes, monitor__* with -XX:+DTraceMonitorProbes (JDK 17 also has
-XX:+ExtendedDTraceProbes for all three; it is gone in JDK 20). compiled__method__load, class__loaded,
gc__begin, thread__start and the others fire without.`,
	}
	cmd.AddCommand(a.usdtListCmd(), a.usdtTraceCmd())
	return cmd
}

// usdtProbeJSON is a probe site in jvmkit.usdt.list/v1.
type usdtProbeJSON struct {
	usdt.Probe
	Error string `json:"error,omitempty"`
}

// usdtModuleJSON is a file in jvmkit.usdt.list/v1.
type usdtModuleJSON struct {
	Path    string          `json:"path"`
	File    string          `json:"file,omitempty"`
	Machine string          `json:"machine"`
	Probes  []usdtProbeJSON `json:"probes"`
}

func (a *jvmkit) usdtListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list <pid|file> [provider:probe...]",
		Short: "List probe sites with their addresses, semaphores and argument specs (like tplist)",
		Long: `list prints the probe sites of an ELF file, or of every file process pid maps executable,
one line per site (a probe fired from several places has several):

    provider:probe pc semaphore args

pc is the site's link-time address (readelf -n's Location, adjusted for prelinking), semaphore the
semaphore's address or "-", and args the note's argument specs: N@operand, N the size in bytes, negative
when signed, operands in the assembler's syntax ("%reg", "$constant", "disp(%reg)"). Patterns select
probes: shell globs over provider:probe, or over the probe name alone when they have no colon.
--json prints schema jvmkit.usdt.list/v1 with the file offsets and the parsed arguments.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			mods, err := usdtModules(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			patterns := args[1:]
			if err := checkPatterns(patterns); err != nil {
				return err
			}
			out := make([]usdtModuleJSON, 0, len(mods))
			for _, m := range mods {
				mj := usdtModuleJSON{Path: m.Path, File: m.File, Probes: []usdtProbeJSON{}}
				for _, p := range m.Probes {
					mj.Machine = p.Machine.String()
					if !matchAny(patterns, &p) {
						continue
					}
					pj := usdtProbeJSON{Probe: p}
					if p.Err != nil {
						pj.Error = p.Err.Error()
					}
					mj.Probes = append(mj.Probes, pj)
				}
				if len(patterns) == 0 || len(mj.Probes) > 0 {
					out = append(out, mj)
				}
			}
			if a.json {
				return a.printJSON("jvmkit.usdt.list/v1", map[string]any{"files": out})
			}
			w := bufio.NewWriter(a.stdout)
			for _, m := range out {
				names := make(map[string]bool)
				for _, p := range m.Probes {
					names[p.String()] = true
				}
				fmt.Fprintf(w, "# %s: %d sites of %d probes\n", m.Path, len(m.Probes), len(names))
				for _, p := range m.Probes {
					sem := "-"
					if p.Semaphore != 0 {
						sem = fmt.Sprintf("%#x", p.Semaphore)
					}
					fmt.Fprintf(w, "%s %#x %s", p.String(), p.PC, sem)
					if p.ArgString != "" {
						fmt.Fprintf(w, " %s", p.ArgString)
					}
					if p.Error != "" {
						fmt.Fprintf(w, " (cannot trace: %s)", p.Error)
					}
					fmt.Fprintln(w)
				}
			}
			if err := w.Flush(); err != nil {
				return err
			}
			if len(out) == 0 {
				if len(patterns) > 0 {
					return fmt.Errorf("usdt: no probe in %s matches %s", args[0], strings.Join(patterns, " "))
				}
				what := args[0]
				if _, err := strconv.Atoi(what); err == nil {
					what = "process " + what + " maps no file that"
				}
				return fmt.Errorf("usdt: %s has no USDT probes (no .note.stapsdt; a JDK built without --enable-dtrace has none)", what)
			}
			return nil
		},
	}
}

// usdtModules reads the probes of a process's files, or of one file.
func usdtModules(ctx context.Context, target string) ([]usdt.Module, error) {
	if pid, err := strconv.Atoi(target); err == nil {
		if pid <= 0 {
			return nil, usagef("%q is not a pid", target)
		}
		return usdt.Modules(ctx, pid)
	}
	probes, err := usdt.ReadFile(target)
	if err != nil {
		return nil, err
	}
	return []usdt.Module{{Path: target, File: target, Probes: probes}}, nil
}

func checkPatterns(patterns []string) error {
	for _, p := range patterns {
		if _, err := path.Match(p, ""); err != nil {
			return usagef("probe pattern %q: %v", p, err)
		}
	}
	return nil
}

// matchProbe matches provider:probe against a glob, or the probe name alone for a glob without a colon.
func matchProbe(pattern string, p *usdt.Probe) bool {
	subject := p.String()
	if !strings.Contains(pattern, ":") {
		subject = p.Name
	}
	ok, _ := path.Match(pattern, subject)
	return ok
}

func matchAny(patterns []string, p *usdt.Probe) bool {
	if len(patterns) == 0 {
		return true
	}
	for _, pat := range patterns {
		if matchProbe(pat, p) {
			return true
		}
	}
	return false
}

// usdtStrings is a --string option: the probes it applies to and their string arguments.
type usdtStrings struct {
	pattern string
	strs    []usdt.StringArg
}

// parseStringSpec parses "PROBE=PTR[:LEN][,PTR[:LEN]...]".
func parseStringSpec(s string) (usdtStrings, error) {
	pattern, list, ok := strings.Cut(s, "=")
	if !ok || pattern == "" || list == "" {
		return usdtStrings{}, usagef("--string %q: want PROBE=PTR[:LEN][,...], e.g. hotspot:class__loaded=0:1", s)
	}
	if _, err := path.Match(pattern, ""); err != nil {
		return usdtStrings{}, usagef("--string %q: %v", s, err)
	}
	r := usdtStrings{pattern: pattern}
	for _, item := range strings.Split(list, ",") {
		ptr, length, hasLen := strings.Cut(item, ":")
		sa := usdt.StringArg{Len: -1}
		var err error
		if sa.Ptr, err = strconv.Atoi(ptr); err != nil || sa.Ptr < 0 {
			return usdtStrings{}, usagef("--string %q: %q is not an argument index", s, ptr)
		}
		if hasLen {
			if sa.Len, err = strconv.Atoi(length); err != nil || sa.Len < 0 {
				return usdtStrings{}, usagef("--string %q: %q is not an argument index", s, length)
			}
		}
		r.strs = append(r.strs, sa)
	}
	return r, nil
}

// usdtEventJSON is one line of jvmkit usdt trace.
type usdtEventJSON struct {
	TimeNS     uint64            `json:"time_ns"`
	PID        int               `json:"pid"`
	TID        int               `json:"tid"`
	Provider   string            `json:"provider"`
	Probe      string            `json:"probe"`
	PC         uint64            `json:"pc"`
	Args       []any             `json:"args"`
	Strings    map[string]string `json:"strings,omitempty"`
	Truncated  []int             `json:"truncated,omitempty"`
	Unreadable []int             `json:"unreadable,omitempty"`
}

func (a *jvmkit) usdtTraceCmd() *cobra.Command {
	var stringSpecs []string
	var stringSize, bufferSize int
	var duration time.Duration
	cmd := &cobra.Command{
		Use:   "trace <pid> <provider:probe>...",
		Short: "Trace probes of a process and print one JSON line per firing",
		Long: `trace attaches a uprobe with an eBPF program to every site of the named probes in the files process
pid maps (the host pid for a process in a container), and prints one JSON line per firing:

    {"time_ns":..., "pid":..., "tid":..., "provider":..., "probe":..., "pc":..., "args":[...],
     "strings":{"<arg>":"..."}, "truncated":[...], "unreadable":[...]}

time_ns is CLOCK_MONOTONIC (perf record -k mono uses the same clock), pid and tid are host ids, pc the
site's link-time address, args the argument values (sign-extended when the spec is signed; floats as
numbers). Probes are shell globs as for list. A probe's semaphore, if it has one, is counted up while the
trace runs, so that the program fires it.

--string PROBE=PTR:LEN copies the string whose address is argument PTR and length argument LEN (0-based),
as HotSpot passes names; PROBE=PTR copies a NUL-terminated string. Several pairs are separated by commas,
e.g. --string hotspot:compiled__method__load=0:1,2:3,4:5. At most --string-size bytes are copied; longer
strings are listed under "truncated", and strings or memory arguments that could not be read under
"unreadable" (by argument index).

The trace ends at Ctrl-C or SIGTERM (exit status 0), after --duration, or when the process exits. Events
lost because the ring buffer was full are counted and reported on stderr at the end, with the number of
events.`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			pid, err := strconv.Atoi(args[0])
			if err != nil || pid <= 0 {
				return usagef("%q is not a pid", args[0])
			}
			patterns := args[1:]
			if err := checkPatterns(patterns); err != nil {
				return err
			}
			var strs []usdtStrings
			for _, s := range stringSpecs {
				spec, err := parseStringSpec(s)
				if err != nil {
					return err
				}
				strs = append(strs, spec)
			}
			if duration < 0 {
				return usagef("--duration %v is negative", duration)
			}
			ctx := cmd.Context()
			mods, err := usdt.Modules(ctx, pid)
			if err != nil {
				return err
			}
			sites, err := a.usdtSites(mods, pid, patterns, strs)
			if err != nil {
				return err
			}
			tr, err := usdt.Attach(ctx, sites, usdt.Options{PID: pid, StringSize: stringSize, BufferSize: bufferSize})
			if err != nil {
				return err
			}
			defer func() { _ = tr.Close() }()
			names := make(map[string]bool)
			for _, s := range sites {
				names[s.Probe.String()] = true
			}
			fmt.Fprintf(a.stderr, "jvmkit: usdt trace: tracing %d sites of %d probes in process %d\n", len(sites), len(names), pid)
			return a.usdtRun(ctx, tr, duration)
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&stringSpecs, "string", nil, "copy string arguments: `PROBE=PTR[:LEN][,...]` (repeatable)")
	f.IntVar(&stringSize, "string-size", 256, "bytes copied per string, at most 4096")
	f.IntVar(&bufferSize, "buffer-size", 4<<20, "ring buffer bytes, a power of two")
	f.DurationVar(&duration, "duration", 0, "stop after this long (0: at Ctrl-C or when the process exits)")
	return cmd
}

// usdtSites selects the sites of the probes that match patterns and attaches the string specs to them.
func (a *jvmkit) usdtSites(mods []usdt.Module, pid int, patterns []string, strs []usdtStrings) ([]usdt.Site, error) {
	var sites []usdt.Site
	matched := make([]bool, len(patterns))
	used := make([]bool, len(strs))
	for _, m := range mods {
		for _, p := range m.Probes {
			hit := false
			for i, pat := range patterns {
				if matchProbe(pat, &p) {
					matched[i], hit = true, true
				}
			}
			if !hit {
				continue
			}
			if p.Err != nil {
				fmt.Fprintf(a.stderr, "jvmkit: usdt trace: skipping %s: %v\n", m.Path, p.Err)
				continue
			}
			s := usdt.Site{File: m.File, Probe: p}
			for k, spec := range strs {
				if !matchProbe(spec.pattern, &p) {
					continue
				}
				used[k] = true
				for _, sa := range spec.strs {
					if sa.Ptr >= len(p.Args) || sa.Len >= len(p.Args) {
						return nil, usagef("--string %s: probe %s has %d arguments (%s)", spec.pattern, &p, len(p.Args), p.ArgString)
					}
				}
				s.Strings = append(s.Strings, spec.strs...)
			}
			sites = append(sites, s)
		}
	}
	for i, ok := range matched {
		if !ok {
			return nil, fmt.Errorf("usdt: no probe of process %d matches %q; 'jvmkit usdt list %d' lists them", pid, patterns[i], pid)
		}
	}
	for k, ok := range used {
		if !ok {
			return nil, usagef("--string %s: no traced probe matches %q", strs[k].pattern, strs[k].pattern)
		}
	}
	if len(sites) == 0 {
		return nil, errors.New("usdt: none of the matching probes can be traced")
	}
	return sites, nil
}

// usdtRun prints events until the trace stops, then the counts.
func (a *jvmkit) usdtRun(ctx context.Context, tr *usdt.Tracer, duration time.Duration) error {
	stop := context.AfterFunc(ctx, func() { _ = tr.Stop() })
	defer stop()
	if duration > 0 {
		timer := time.AfterFunc(duration, func() { _ = tr.Stop() })
		defer timer.Stop()
	}

	// Output is buffered for throughput and flushed a few times a second, so that a reader sees events
	// soon after they happen.
	var mu sync.Mutex
	w := bufio.NewWriterSize(a.stdout, 64<<10)
	done := make(chan struct{})
	defer close(done)
	go func() {
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				mu.Lock()
				_ = w.Flush()
				mu.Unlock()
			}
		}
	}()

	enc := json.NewEncoder(w)
	var n uint64
	var readErr error
	for {
		ev, err := tr.Read()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				readErr = err
			}
			break
		}
		n++
		mu.Lock()
		err = enc.Encode(usdtEvent(&ev))
		mu.Unlock()
		if err != nil {
			_ = tr.Stop()
			readErr = err
			break
		}
	}
	mu.Lock()
	flushErr := w.Flush()
	mu.Unlock()

	drops, derr := tr.Drops()
	var dropped uint64
	perProbe := make(map[string]uint64)
	var order []string
	for i, d := range drops {
		if d == 0 {
			continue
		}
		dropped += d
		name := tr.Sites()[i].Probe.String()
		if _, ok := perProbe[name]; !ok {
			order = append(order, name)
		}
		perProbe[name] += d
	}
	fmt.Fprintf(a.stderr, "jvmkit: usdt trace: %d events, %d dropped", n, dropped)
	for _, name := range order {
		fmt.Fprintf(a.stderr, ", %s: %d", name, perProbe[name])
	}
	if dropped > 0 {
		fmt.Fprint(a.stderr, " (the ring buffer was full: a larger --buffer-size helps)")
	}
	fmt.Fprintln(a.stderr)
	return errors.Join(readErr, flushErr, derr)
}

func usdtEvent(ev *usdt.Event) usdtEventJSON {
	p := ev.Probe
	e := usdtEventJSON{
		TimeNS: ev.Time, PID: ev.PID, TID: ev.TID,
		Provider: p.Provider, Probe: p.Name, PC: p.PC,
		Args: make([]any, len(ev.Args)),
	}
	for i, raw := range ev.Args {
		v := p.Args[i].Decode(raw)
		switch f := v.(type) {
		case float32:
			if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
				v = jsonFloat(float64(f))
			}
		case float64:
			v = jsonFloat(f)
		}
		e.Args[i] = v
		if ev.Faults&(1<<i) != 0 {
			e.Unreadable = append(e.Unreadable, i)
		}
	}
	for _, s := range ev.Strings {
		if s.Fault {
			e.Unreadable = append(e.Unreadable, s.Arg)
			continue
		}
		if e.Strings == nil {
			e.Strings = make(map[string]string)
		}
		e.Strings[strconv.Itoa(s.Arg)] = string(s.Data)
		if s.Truncated {
			e.Truncated = append(e.Truncated, s.Arg)
		}
	}
	return e
}

// jsonFloat keeps NaN and the infinities, which JSON numbers cannot express, as strings.
func jsonFloat(f float64) any {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return f
}
