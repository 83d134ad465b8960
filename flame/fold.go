package flame

import (
	"bytes"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// FoldOptions choose how Fold names frames and what it counts. The zero value folds as
// stackcollapse-perf.pl does with no options.
type FoldOptions struct {
	PID bool // name the first frame "comm-pid" (stackcollapse-perf.pl --pid)
	TID bool // name the first frame "comm-pid/tid" (--tid); wins over PID
	// Kernel appends "_[k]" to kernel frames: a dso in brackets ("[kernel.kallsyms]", "[vdso]") or
	// ending in "vmlinux", but not "[unknown]" (--kernel).
	Kernel bool
	// JIT appends "_[j]" to frames of a perf map, dso "/tmp/perf-<pid>.map", unless the name already
	// has it (--jit).
	JIT bool
	// Addrs names unresolved frames "[dso <ip>]" instead of "[dso]" (--addrs).
	Addrs bool
	// Event keeps only the samples of this event. Empty keeps the event of the first sample that names
	// one (--event-filter).
	Event string
	// Count counts samples; by default a sample counts its period when perf script printed one.
	Count bool
	// NoSplit keeps a symbol with "->" (an inlining chain from perf-map-agent's unfoldall or gjmaps
	// --unfold) as one frame. By default each method of the chain is a frame of its own, the inlined
	// ones (all but the first) marked "_[i]".
	NoSplit bool
	// Lenient skips lines that are neither sample headers nor frames, as stackcollapse-perf.pl does
	// (with a warning); by default they are an error.
	Lenient bool
}

// FoldStats says what Fold read besides the stacks.
type FoldStats struct {
	Samples  int            // samples folded
	Filtered int            // samples of other events, left out
	Events   map[string]int // samples per event name, of all events
	Skipped  int            // lines skipped (Lenient)
	// Truncated says that the input ended inside a sample (no blank line after its frames), or in a
	// line cut short (the last line, without its newline, is neither a header nor a frame); that
	// sample was left out: its frames may be cut short.
	Truncated bool
}

// Annotation suffixes, as perf-map-agent, stackcollapse-perf.pl and our perfmap package write them.
const (
	suffixJIT     = "_[j]"
	suffixInlined = "_[i]"
	suffixKernel  = "_[k]"
)

// Fold reads perf script text and folds its stacks. See the package documentation for the input and
// the naming rules. A line that is neither a sample header, a frame, a blank line nor a "#" comment is
// a *ParseError (unless opts.Lenient), except for a last line without its newline, which is taken for
// the end of input cut short (FoldStats.Truncated); Fold never panics.
func Fold(r io.Reader, opts FoldOptions) (*Folded, FoldStats, error) {
	f := folder{opts: opts, event: opts.Event, sums: make(map[string]int64)}
	f.stats.Events = make(map[string]int)
	lr := newLineReader(r)
	for {
		line, ok := lr.next()
		if !ok {
			break
		}
		if err := f.line(line); err != nil {
			if lr.unended {
				// The input was cut in the middle of its last line: what it belongs to, the sample
				// being read or the one it would have started, is left out, as a sample cut at a line
				// boundary is.
				f.stats.Truncated = true
				break
			}
			if !opts.Lenient {
				return nil, f.stats, parseError(lr.n, line, err.Error())
			}
			f.stats.Skipped++
		}
	}
	if err := lr.err(); err != nil {
		return nil, f.stats, err
	}
	if f.inSample {
		f.stats.Truncated = true
	}
	out := fromSums(f.sums)
	out.Event = f.event
	out.Period = f.period && !opts.Count
	return out, f.stats, nil
}

type folder struct {
	opts  FoldOptions
	event string // the event kept, once known
	sums  map[string]int64
	stats FoldStats

	// The sample being read. As in stackcollapse-perf.pl, a sample ends at a blank line only: frames
	// after a header of another event still belong to the sample before it.
	inSample bool
	pname    string
	weight   int64
	frames   []string // leaf first; the parts of one symbol in reverse
	period   bool     // some sample kept had a period
	key      []byte
}

type lineError string

func (e lineError) Error() string { return string(e) }

func (f *folder) line(line []byte) error {
	if len(line) > 0 && line[0] == '#' {
		return nil // comments, perf script --header
	}
	if len(line) == 0 {
		f.endSample()
		return nil
	}
	if h, ok := parseHeader(line); ok {
		return f.header(h)
	}
	if fr, ok := parseFrame(line); ok {
		if f.inSample {
			f.frame(fr)
		}
		return nil
	}
	if len(bytes.TrimSpace(line)) == 0 {
		return lineError("blank line with spaces")
	}
	return lineError("neither a sample header nor a frame")
}

func (f *folder) endSample() {
	if !f.inSample {
		return
	}
	k := append(f.key[:0], f.pname...)
	for i := len(f.frames) - 1; i >= 0; i-- {
		k = append(k, ';')
		k = append(k, f.frames[i]...)
	}
	f.key = k
	n := f.weight
	if f.opts.Count {
		n = 1
	}
	old := f.sums[string(k)]
	if n > math.MaxInt64-old {
		n = math.MaxInt64 - old // saturate rather than wrap
	}
	f.sums[string(k)] = old + n
	f.stats.Samples++
	f.frames = f.frames[:0]
	f.inSample = false
}

func (f *folder) header(h header) error {
	period := int64(1)
	if h.hasEvent {
		f.stats.Events[h.event]++
		if f.event == "" {
			f.event = h.event
		} else if h.event != f.event {
			f.stats.Filtered++
			return nil
		}
		// stackcollapse-perf.pl takes a period of "" or "0" (Perl's false) for 1; so do we, and for
		// other spellings of zero, which it would count 0.
		if h.period != "" {
			p, err := strconv.ParseInt(h.period, 10, 64)
			if err != nil {
				return lineError("period out of range")
			}
			if p > 0 {
				period = p
				f.period = true
			}
		}
	}
	pid, tid := h.pid, h.tid
	if tid == "" || tid == "0" { // perf script's default prints the tid alone
		pid, tid = "?", pid
	}
	name := h.comm
	switch {
	case f.opts.TID:
		name += "-" + pid + "/" + tid
	case f.opts.PID:
		name += "-" + pid
	}
	f.pname = strings.ReplaceAll(name, " ", "_")
	f.weight = period
	f.inSample = true
	return nil
}

// frame adds the frames of one frame line, a leaf-first symbol.
func (f *folder) frame(fr frameLine) {
	sym := fr.sym
	if i := strings.LastIndex(sym, "+0x"); i >= 0 && isLowerHex(sym[i+3:]) {
		sym = sym[:i]
	}
	if strings.HasPrefix(sym, "(") {
		return // a process name in place of a symbol
	}
	var parts []string
	if f.opts.NoSplit {
		parts = []string{sym}
	} else {
		parts = strings.Split(sym, "->")
		for len(parts) > 0 && parts[len(parts)-1] == "" {
			parts = parts[:len(parts)-1] // as Perl's split
		}
	}
	start := len(f.frames)
	for i, p := range parts {
		f.frames = append(f.frames, f.name(p, i > 0, fr))
	}
	// Leaf first: the parts of a symbol are outermost first, so reverse them.
	for i, j := start, len(f.frames)-1; i < j; i, j = i+1, j-1 {
		f.frames[i], f.frames[j] = f.frames[j], f.frames[i]
	}
}

// name tidies one method of a symbol as stackcollapse-perf.pl does.
func (f *folder) name(fn string, inlined bool, fr frameLine) string {
	if fn == "[unknown]" {
		mod := "unknown"
		if fr.dso != "[unknown]" {
			mod = fr.dso[strings.LastIndexByte(fr.dso, '/')+1:]
		}
		if f.opts.Addrs {
			fn = "[" + mod + " <" + fr.ip + ">]"
		} else {
			fn = "[" + mod + "]"
		}
	}
	fn = strings.ReplaceAll(fn, ";", ":")
	if !isGoMethod(fn) {
		fn = cutArgs(fn)
	}
	if strings.ContainsAny(fn, `"'`) {
		fn = strings.NewReplacer(`"`, "", "'", "").Replace(fn)
	}
	if strings.HasPrefix(f.pname, "java") && strings.Contains(fn, "/") {
		fn = strings.TrimPrefix(fn, "L") // Lpkg/Class; names of perf-map-agent
	}
	switch {
	case inlined:
		if !strings.Contains(fn, suffixInlined) {
			fn += suffixInlined
		}
	case f.opts.Kernel && isKernelDSO(fr.dso):
		fn += suffixKernel
	case f.opts.JIT && isPerfMap(fr.dso):
		if !strings.Contains(fn, suffixJIT) {
			fn += suffixJIT
		}
	}
	return fn
}

// isGoMethod matches names such as "net/http.(*Client).Do", whose parentheses are not arguments.
func isGoMethod(s string) bool {
	i := strings.Index(s, ".(")
	return i >= 0 && strings.Contains(s[i+2:], ").")
}

// cutArgs drops everything from the first "(" that does not open "(anonymous namespace)".
func cutArgs(s string) string {
	for off := 0; ; {
		i := strings.IndexByte(s[off:], '(')
		if i < 0 {
			return s
		}
		i += off
		if !strings.HasPrefix(s[i+1:], "anonymous namespace)") {
			return s[:i]
		}
		off = i + 1
	}
}

func isKernelDSO(dso string) bool {
	return (strings.HasPrefix(dso, "[") || strings.HasSuffix(dso, "vmlinux")) && !strings.Contains(dso, "unknown")
}

// isPerfMap matches "/tmp/perf-<digits>.map" anywhere in dso.
func isPerfMap(dso string) bool {
	const p = "/tmp/perf-"
	for {
		i := strings.Index(dso, p)
		if i < 0 {
			return false
		}
		rest := dso[i+len(p):]
		n := 0
		for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
			n++
		}
		if n > 0 && strings.HasPrefix(rest[n:], ".map") {
			return true
		}
		dso = dso[i+1:]
	}
}

func isLowerHex(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// header is a sample header line, such as
//
//	java 12688 [002] 6544038.708352: 10101010 cpu-clock:
//	burn-io 25587/25609  8376.267134341:    1001001 cpu-clock:
type header struct {
	comm, pid, tid string
	hasEvent       bool
	period, event  string
}

// parseHeader reads a header as stackcollapse-perf.pl's regular expressions do:
// /^(\S.+?)\s+(\d+)\/*(\d+)*\s+/ for comm, pid and tid, and /:\s*(\d+)*\s+(\S+):\s*$/ for period and
// event. The comm is the shortest prefix, at least two bytes, followed by blanks and a pid token.
func parseHeader(line []byte) (header, bool) {
	var h header
	if len(line) < 2 || isSpace(line[0]) {
		return h, false
	}
	found := false
	for i := 2; i < len(line) && !found; i++ {
		if !isSpace(line[i]) {
			continue
		}
		j := i
		for j < len(line) && isSpace(line[j]) {
			j++
		}
		p := j
		for j < len(line) && isDigit(line[j]) {
			j++
		}
		if j == p {
			i = p - 1 // a longer comm in these blanks ends the same way; go on from the next word
			continue
		}
		pidEnd := j
		for j < len(line) && line[j] == '/' {
			j++
		}
		t := j
		for j < len(line) && isDigit(line[j]) {
			j++
		}
		if j < len(line) && isSpace(line[j]) {
			h.comm, h.pid, h.tid = string(line[:i]), string(line[p:pidEnd]), string(line[t:j])
			found = true
		}
		i = j - 1
	}
	if !found {
		return h, false
	}
	// The event is the last word, which ends in a colon; before it, blanks, an optional period and
	// blanks follow a colon (the one after the time).
	s := bytes.TrimRight(line, " \t\n\v\f\r")
	if len(s) < 2 || s[len(s)-1] != ':' {
		return h, true
	}
	w := len(s) - 1
	for w > 0 && !isSpace(s[w-1]) {
		w--
	}
	if w == len(s)-1 || w == 0 {
		return h, true
	}
	k := w
	for k > 0 && isSpace(s[k-1]) {
		k--
	}
	d := k
	for d > 0 && isDigit(s[d-1]) {
		d--
	}
	c := d
	for c > 0 && isSpace(s[c-1]) {
		c--
	}
	if c == 0 || s[c-1] != ':' {
		return h, true
	}
	h.hasEvent, h.period, h.event = true, string(s[d:k]), string(s[w:len(s)-1])
	return h, true
}

// frameLine is a frame line, such as
//
//	7f0404ed9e6d void Burn.strings()+0x40d (/tmp/perf-25587.map)
type frameLine struct {
	ip, sym, dso string
}

// parseFrame reads a frame line as stackcollapse-perf.pl's /^\s*(\w+)\s*(.+) \((.*)\)/ does: the dso is
// inside the last " (" that a ")" follows, up to the last ")". Lines that take the regular expression's
// backtracking to match (no blank after the address, an empty symbol) go to parseFrameSlow.
func parseFrame(line []byte) (frameLine, bool) {
	s := line
	i := 0
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	ip := i
	for i < len(s) && isWord(s[i]) {
		i++
	}
	ipEnd := i
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	closeP := bytes.LastIndexByte(s, ')')
	if ipEnd == ip || i == ipEnd || closeP < 0 {
		return parseFrameSlow(line)
	}
	open := bytes.LastIndex(s[:closeP], []byte(" ("))
	if open <= i {
		return parseFrameSlow(line)
	}
	return frameLine{ip: string(s[ip:ipEnd]), sym: string(s[i:open]), dso: string(s[open+2 : closeP])}, true
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}
func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isWord(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
}

// frameRE is stackcollapse-perf.pl's frame pattern, with Perl's \s (which has \v) spelled out.
var frameRE = regexp.MustCompile(`^[\t\n\v\f\r ]*(\w+)[\t\n\v\f\r ]*(.+) \((.*)\)`)

func parseFrameSlow(line []byte) (frameLine, bool) {
	m := frameRE.FindSubmatchIndex(line)
	if m == nil {
		return frameLine{}, false
	}
	return frameLine{ip: string(line[m[2]:m[3]]), sym: string(line[m[4]:m[5]]), dso: string(line[m[6]:m[7]])}, true
}
