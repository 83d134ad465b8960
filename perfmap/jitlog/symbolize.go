package jitlog

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// SymbolizeOptions tune Symbolize.
type SymbolizeOptions struct {
	// PID restricts renaming to the frames of this process, and is the process of samples whose header
	// names no pid (perf script's default format prints only the thread id). 0: every process of the
	// log; the process of a sample without a pid is then found from its thread id (the main thread's is
	// the pid), the frame's perf map (/tmp/perf-<pid>.map) or, for a log of one process, that process.
	PID int
}

// SymbolizeStats count what Symbolize did.
type SymbolizeStats struct {
	Lines   int `json:"lines"`
	Samples int `json:"samples"` // sample header lines
	// Untimed samples have no time (perf script without the time field): their frames are named as of
	// the end of the log.
	Untimed int `json:"untimed"`
	// JITFrames are frames that may be JIT code: their dso is a perf map, [unknown] or anonymous memory.
	JITFrames int `json:"jit_frames"`
	Renamed   int `json:"renamed"` // given the name valid at the sample's time
	// Uncertain frames are given the name valid at the sample's time of code whose records the log
	// partly lost (Span.Uncertain), marked MarkUncertain.
	Uncertain int `json:"uncertain"`
	// Fallback are unnamed frames given the name nearest in time (Match.Exact false), marked
	// MarkUncertain.
	Fallback int `json:"fallback"`
	// Kept are named frames for which the log has only a name of another time: perf's name is kept,
	// marked MarkUncertain.
	Kept       int `json:"kept"`
	Unresolved int `json:"unresolved"` // no code of the log at the address
	NoPID      int `json:"no_pid"`     // the frame's process could not be told
	Other      int `json:"other"`      // frames of other processes than SymbolizeOptions.PID
	// Truncated says that the input ends in a line cut short: a last line without its newline that is
	// neither a complete sample header nor a frame (a killed perf script, a full disk). It is copied
	// unchanged, not counted as a sample; jvmkit fold leaves its sample out.
	Truncated bool `json:"truncated"`
}

// MarkUncertain starts the name of a frame whose name may be wrong: the log has no code live at the
// frame's address at the sample's time (the name is that of the nearest code in time, or perf's), or
// it lost records of the code it names. A prefix, as folding cuts a Java name at its "(".
const MarkUncertain = "[?] "

// maxLine bounds the lines Symbolize parses; longer ones pass through unchanged.
const maxLine = 1 << 20

// Symbolize copies perf script text from src to dst and renames the frames of JIT code with the name
// the log has for the frame's address at the sample's time. The text is that of perf script for a
// recording made with perf record -k mono (CLOCK_MONOTONIC, the log's clock), in its default format or
// with -F fields including time, ip, sym and dso, preferably --ns and pid:
//
//	java 4242/4250 8376.267134341:   1001001 cpu-clock:
//		    7f0404ed9e6d [unknown] (/tmp/perf-4242.map)
//
// A frame is renamed when its dso is a perf map, [unknown] or anonymous memory (//anon, [anon:...],
// [JIT] tid ...), its address is in code of the log and either a name was valid at the sample's time,
// or the frame has no name ([unknown] or an address) and the log has a name for its address at another
// time (the nearest). The line keeps its layout: "<ip> <name>+0x<offset> (<dso>)", the offset from the
// start of the code when perf printed offsets. A name that may be wrong starts with MarkUncertain: the
// nearest in time, perf's own name where the log has only names of other times, and names of code
// whose records the log lost (Span.Uncertain). Every other line is copied byte for byte, so Symbolize
// drops into any perf script pipeline (before jvmkit fold); so is a last line cut short
// (SymbolizeStats.Truncated). Samples without a time are named as of the end of the log
// (SymbolizeStats.Untimed). Call-graph frames (one per line) and single-line samples (perf record
// without -g) are both handled.
func Symbolize(dst io.Writer, src io.Reader, r *Resolver, opts SymbolizeOptions) (SymbolizeStats, error) {
	s := &symbolizer{r: r, opts: opts, w: bufio.NewWriterSize(dst, 64<<10)}
	if pids := r.PIDs(); len(pids) == 1 {
		s.only = pids[0]
	}
	br := bufio.NewReaderSize(src, maxLine)
	// Whether perf prints symbol offsets (+symoff, on by default) shows only on named frames: look ahead
	// for one, so that unnamed frames before it are renamed the same way.
	head, _ := br.Peek(sniffSize) // a short peek is the whole input, or fails again below
	s.offsets = sniffOffsets(head)
	long := false // inside a line longer than maxLine
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			switch {
			case errors.Is(err, bufio.ErrBufferFull):
				if !long {
					s.st.Lines++
				}
				long = true
				if _, werr := s.w.Write(line); werr != nil {
					return s.st, werr
				}
				continue
			case long:
				long = false
				if _, werr := s.w.Write(line); werr != nil {
					return s.st, werr
				}
			default:
				s.st.Lines++
				if errors.Is(err, io.EOF) && line[len(line)-1] != '\n' && cutShort(line) {
					s.st.Truncated = true
					if _, werr := s.w.Write(line); werr != nil {
						return s.st, werr
					}
					break
				}
				if werr := s.line(line); werr != nil {
					return s.st, werr
				}
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return s.st, fmt.Errorf("symbolize: read: %w", err)
		}
	}
	if err := s.w.Flush(); err != nil {
		return s.st, err
	}
	return s.st, nil
}

type symbolizer struct {
	r    *Resolver
	opts SymbolizeOptions
	w    *bufio.Writer
	st   SymbolizeStats
	only int // the log's only process, or 0
	out  []byte

	// The current sample.
	hdrPID  int // from "pid/tid", or 0
	single  int // a lone number before the time: a pid or a thread id, or 0
	t       uint64
	timed   bool
	offsets bool // perf prints symbol offsets (+0x...): some frame had one
}

func (s *symbolizer) line(line []byte) error {
	body := line
	if n := len(body); n > 0 && body[n-1] == '\n' {
		body = body[:n-1]
	}
	if len(body) == 0 || body[0] == '#' {
		_, err := s.w.Write(line)
		return err
	}
	if body[0] == '\t' {
		return s.frame(line, body, 0)
	}
	if at, ok := s.header(body); ok {
		if at > 0 {
			return s.frame(line, body, at)
		}
		_, err := s.w.Write(line)
		return err
	}
	if body[0] == ' ' {
		return s.frame(line, body, 0)
	}
	_, err := s.w.Write(line)
	return err
}

// cutShort tells whether the last line of the input, which has no newline, is cut short: it is neither
// a comment, a frame ("... (dso)") nor a header that ends in its event or time ("cpu-clock:"), the
// whole of a header that perf script prints with -g. A header without time or event, cut or not,
// counts as cut: it has no frames to rename.
func cutShort(line []byte) bool {
	if line[0] == '#' {
		return false
	}
	t := bytes.TrimRight(line, " \t\r")
	return len(t) == 0 || t[len(t)-1] != ':' && t[len(t)-1] != ')'
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isHex(c byte) bool   { return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// header reads a sample header: "comm pid/tid [cpu] sec.frac: period event:" with any of the fields
// left out, and in single-line samples an ip, sym and dso after the event. It returns the offset of
// such a frame (0 for none) and whether the line is a header: it has a time or a pid/tid, or starts
// with a comm.
func (s *symbolizer) header(b []byte) (frameAt int, ok bool) {
	// Tokens up to the time: the last "d/d" is pid/tid; a lone number right before the time (or
	// before "[cpu]") is a pid or tid.
	var (
		tokens  [16][2]int
		n       int
		timeTok = -1
	)
	for i := 0; i < len(b) && n < len(tokens); {
		for i < len(b) && isBlank(b[i]) {
			i++
		}
		if i == len(b) {
			break
		}
		j := i
		for j < len(b) && !isBlank(b[j]) {
			j++
		}
		tokens[n] = [2]int{i, j}
		n++
		if t, ok := parseTime(b[i:j]); ok {
			timeTok = n - 1
			s.t = t
			break
		}
		i = j
	}
	timed := timeTok >= 0
	last, after := n, -1 // after: the token that the period and event follow
	if timed {
		last, after = timeTok, timeTok
	}
	hdrPID := 0
	for k := 0; k < last; k++ {
		if pid, _, ok := parsePIDTID(b[tokens[k][0]:tokens[k][1]]); ok {
			hdrPID = pid
			if !timed {
				after = k
			}
		}
	}
	// A line led by blanks is a frame, unless it has a time or a pid/tid (perf script -G pads comm).
	if !timed && hdrPID == 0 && b[0] == ' ' {
		return 0, false
	}
	s.st.Samples++
	s.hdrPID, s.single, s.timed = hdrPID, 0, timed
	if !s.timed {
		s.st.Untimed++
		s.t = s.r.Last()
	}
	if s.timed && s.hdrPID == 0 {
		k := timeTok - 1
		if k >= 0 && isCPU(b[tokens[k][0]:tokens[k][1]]) {
			k--
		}
		if k >= 1 || k == 0 && b[0] == ' ' {
			if v, ok := parseDec(b[tokens[k][0]:tokens[k][1]], maxPID); ok && v > 0 {
				s.single = int(v)
			}
		}
	}
	if after < 0 {
		return 0, true // without a time or a pid/tid, an event is not told from a comm
	}
	// After the time (or pid/tid): [period] event: [frame].
	i := tokens[after][1]
	for k := 0; k < 2; k++ {
		for i < len(b) && isBlank(b[i]) {
			i++
		}
		j := i
		for j < len(b) && !isBlank(b[j]) {
			j++
		}
		if j > i && b[j-1] == ':' {
			if j < len(b) {
				return j, true
			}
			return 0, true
		}
		i = j
	}
	return 0, true
}

// parseTime reads "sec.frac:" as nanoseconds.
func parseTime(b []byte) (uint64, bool) {
	if len(b) < 4 || b[len(b)-1] != ':' {
		return 0, false
	}
	b = b[:len(b)-1]
	dot := bytes.IndexByte(b, '.')
	if dot <= 0 || dot == len(b)-1 {
		return 0, false
	}
	// Below 2^64 ns: at most 18446744072 s.
	sec, ok := parseDec(b[:dot], 18446744072)
	if !ok {
		return 0, false
	}
	var ns uint64
	scale := uint64(1e9)
	for _, c := range b[dot+1:] {
		if !isDigit(c) {
			return 0, false
		}
		if scale > 1 {
			scale /= 10
			ns += uint64(c-'0') * scale
		}
	}
	return sec*1e9 + ns, true
}

// parseDec reads a decimal number of at most limit; b is not empty and holds digits only.
func parseDec(b []byte, limit uint64) (uint64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if !isDigit(c) {
			return 0, false
		}
		if v > limit/10 {
			return 0, false
		}
		v *= 10
		if d := uint64(c - '0'); d <= limit-v {
			v += d
		} else {
			return 0, false
		}
	}
	return v, true
}

// parseHex reads at most 16 hexadecimal digits.
func parseHex(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 16 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		switch {
		case isDigit(c):
			v = v<<4 | uint64(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | uint64(c-'a'+10)
		case c >= 'A' && c <= 'F':
			v = v<<4 | uint64(c-'A'+10)
		default:
			return 0, false
		}
	}
	return v, true
}

func parsePIDTID(b []byte) (pid, tid int, ok bool) {
	slash := bytes.IndexByte(b, '/')
	if slash <= 0 {
		return 0, 0, false
	}
	p, ok1 := parseDec(b[:slash], maxPID)
	t, ok2 := parseDec(b[slash+1:], maxPID)
	if !ok1 || !ok2 {
		return 0, 0, false
	}
	return int(p), int(t), true
}

func isCPU(b []byte) bool {
	if len(b) < 3 || b[0] != '[' || b[len(b)-1] != ']' {
		return false
	}
	for _, c := range b[1 : len(b)-1] {
		if !isDigit(c) {
			return false
		}
	}
	return true
}

// sniffSize is how much input Symbolize looks at for symbol offsets.
const sniffSize = 256 << 10

// sniffOffsets tells whether a named frame in b has an offset.
func sniffOffsets(b []byte) bool {
	for line := range bytes.Lines(b) {
		line = bytes.TrimSuffix(line, []byte("\n"))
		// A frame line, or a single-line sample, ends with "<sym> (<dso>)".
		if len(line) == 0 || line[len(line)-1] != ')' || line[0] == '#' {
			continue
		}
		if open := lastOpen(line); open > 0 {
			if _, off := cutOffset(line[:open]); off {
				return true
			}
		}
	}
	return false
}

// frameAt locates the parts of a frame, "<blanks><ip> <sym> (<dso>)": ip is body[ipStart:ipEnd], sym
// body[symStart:open] and dso body[open+2:len(body)-1].
type frameAt struct{ ipStart, ipEnd, symStart, open int }

func parseFrame(body []byte, at int) (frameAt, bool) {
	var f frameAt
	i := at
	for i < len(body) && isBlank(body[i]) {
		i++
	}
	f.ipStart = i
	for i < len(body) && isHex(body[i]) {
		i++
	}
	f.ipEnd = i
	for i < len(body) && isBlank(body[i]) {
		i++
	}
	f.symStart = i
	if f.ipEnd == f.ipStart || f.ipEnd-f.ipStart > 16 || f.symStart == f.ipEnd || body[len(body)-1] != ')' {
		return f, false
	}
	f.open = lastOpen(body[:len(body)-1])
	return f, f.open >= f.symStart
}

// lastOpen is bytes.LastIndex(b, " (") without its Rabin-Karp set-up, a third of Symbolize's time.
func lastOpen(b []byte) int {
	for i := len(b) - 1; i > 0; i-- {
		if b[i] == '(' && b[i-1] == ' ' {
			return i - 1
		}
	}
	return -1
}

// frame renames the frame in body[at:], "<blanks><ip> <sym> (<dso>)", if it is JIT code of the log,
// and writes the line.
func (s *symbolizer) frame(line, body []byte, at int) error {
	f, ok := parseFrame(body, at)
	if !ok {
		_, err := s.w.Write(line)
		return err
	}
	ipStart, ipEnd, symStart, open := f.ipStart, f.ipEnd, f.symStart, f.open
	sym, dso := body[symStart:open], body[open+2:len(body)-1]
	dsoPID, jit := jitDSO(dso)
	if !jit {
		if !s.offsets {
			_, s.offsets = cutOffset(sym)
		}
		_, err := s.w.Write(line)
		return err
	}
	base, hasOff := cutOffset(sym)
	if hasOff {
		s.offsets = true
	}
	s.st.JITFrames++
	pid := s.pid(dsoPID)
	if pid <= 0 {
		_, err := s.w.Write(line)
		return err
	}
	ip, ok := parseHex(body[ipStart:ipEnd])
	if !ok {
		_, err := s.w.Write(line)
		return err
	}
	sp, exact, ok := s.r.lookupRef(pid, ip, s.t)
	unnamed := isUnnamed(base)
	mark := true
	switch {
	case !ok:
		s.st.Unresolved++
	case exact && !sp.Uncertain:
		s.st.Renamed++
		mark = false
	case exact:
		s.st.Uncertain++
	case unnamed:
		s.st.Fallback++
	default:
		// perf's name (from a perf map written at the end) is no better than the log's: marked.
		s.st.Kept++
		if bytes.HasPrefix(sym, []byte(MarkUncertain)) {
			_, err := s.w.Write(line) // marked by an earlier run
			return err
		}
		out := append(s.out[:0], body[:symStart]...)
		out = append(out, MarkUncertain...)
		out = append(out, line[symStart:]...)
		s.out = out
		_, err := s.w.Write(out)
		return err
	}
	if !ok {
		_, err := s.w.Write(line)
		return err
	}
	out := append(s.out[:0], body[:symStart]...)
	if mark {
		out = append(out, MarkUncertain...)
	}
	out = append(out, sp.Name...)
	if hasOff || unnamed && s.offsets {
		out = append(out, "+0x"...)
		out = strconv.AppendUint(out, ip-sp.Start, 16)
	}
	out = append(out, line[open:]...)
	s.out = out
	_, err := s.w.Write(out)
	return err
}

// pid tells the process of the current sample's frames, or 0 (counted).
func (s *symbolizer) pid(dsoPID int) int {
	switch {
	case s.hdrPID > 0:
		if s.opts.PID != 0 && s.hdrPID != s.opts.PID {
			s.st.Other++
			return 0
		}
		return s.hdrPID
	case s.opts.PID != 0:
		return s.opts.PID
	case s.single > 0 && s.r.Has(s.single):
		return s.single
	case dsoPID > 0 && s.r.Has(dsoPID):
		return dsoPID
	case s.only > 0:
		return s.only
	}
	s.st.NoPID++
	return 0
}

// cutOffset splits "sym+0x1f" into "sym" and true.
func cutOffset(sym []byte) ([]byte, bool) {
	i := len(sym)
	for i > 0 && isHex(sym[i-1]) {
		i--
	}
	if i == len(sym) || i < 3 || string(sym[i-3:i]) != "+0x" {
		return sym, false
	}
	return sym[:i-3], true
}

// isUnnamed: perf found no symbol ("[unknown]", or the bare address in some modes).
func isUnnamed(sym []byte) bool {
	if string(sym) == "[unknown]" {
		return true
	}
	h := bytes.TrimPrefix(sym, []byte("0x"))
	if len(h) == 0 {
		return false
	}
	for _, c := range h {
		if !isHex(c) {
			return false
		}
	}
	return true
}

// jitDSO tells whether a frame's dso may be JIT code: a perf map (/tmp/perf-<pid>.map, whose pid it
// returns), [unknown], or anonymous executable memory.
func jitDSO(dso []byte) (pid int, ok bool) {
	switch {
	case string(dso) == "[unknown]", string(dso) == "//anon",
		bytes.HasPrefix(dso, []byte("[anon")), bytes.HasPrefix(dso, []byte("[JIT] tid ")):
		return 0, true
	}
	const prefix, suffix = "/tmp/perf-", ".map"
	i := bytes.LastIndex(dso, []byte(prefix))
	if i < 0 || !bytes.HasSuffix(dso, []byte(suffix)) {
		return 0, false
	}
	digits := dso[i+len(prefix) : len(dso)-len(suffix)]
	v, ok := parseDec(digits, maxPID)
	if !ok {
		return 0, false
	}
	return int(v), true
}
