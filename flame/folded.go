package flame

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Folded is a set of folded stacks: each distinct stack once, sorted by its folded line (byte order, as
// stackcollapse-perf.pl sorts), with no zero counts.
type Folded struct {
	Stacks []Stack
	// Event is the perf event the samples are of ("cpu-clock"); empty when unknown (folded input, or
	// perf script printed no event).
	Event string
	// Period says that counts are sums of sample periods (nanoseconds for cpu-clock and task-clock,
	// events for hardware counters), not numbers of samples.
	Period bool
}

// Stack is one folded stack.
type Stack struct {
	Frames []string // root first, leaf last
	Count  int64
}

// Total is the sum of the counts.
func (f *Folded) Total() int64 {
	var n int64
	for _, s := range f.Stacks {
		n += s.Count
	}
	return n
}

// maxLine bounds one input line; C++ and Scala names run to a few KiB, nothing real comes near this.
const maxLine = 4 << 20

// ParseError is a line of input that cannot be read.
type ParseError struct {
	Line int    // 1-based
	Text string // the line, shortened when long
	Msg  string
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("line %d: %s: %q", e.Line, e.Msg, e.Text)
}

func parseError(n int, line []byte, msg string) *ParseError {
	const max = 120
	text := string(line)
	if len(text) > max {
		text = text[:max] + "..."
	}
	return &ParseError{Line: n, Text: text, Msg: msg}
}

// lineReader yields lines without their "\n" (and a "\r" before it), counting them.
type lineReader struct {
	sc *bufio.Scanner
	n  int
	// unended says that the line last yielded is the last of the input and has no "\n": the input may
	// have been cut in the middle of it (a killed perf script, a full disk).
	unended bool
}

func newLineReader(r io.Reader) *lineReader {
	lr := &lineReader{sc: bufio.NewScanner(r)}
	lr.sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	lr.sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		adv, tok, err := bufio.ScanLines(data, atEOF)
		if atEOF && tok != nil && adv == len(data) && data[adv-1] != '\n' {
			lr.unended = true
		}
		return adv, tok, err
	})
	return lr
}

func (lr *lineReader) next() ([]byte, bool) {
	if !lr.sc.Scan() {
		return nil, false
	}
	lr.n++
	return lr.sc.Bytes(), true
}

func (lr *lineReader) err() error {
	err := lr.sc.Err()
	if errors.Is(err, bufio.ErrTooLong) {
		return &ParseError{Line: lr.n + 1, Msg: fmt.Sprintf("line longer than %d bytes", maxLine)}
	}
	return err
}

// ParseFolded reads folded stacks, one "frame;frame;...;frame count" a line, root first, as
// stackcollapse-perf.pl and the other stackcollapse scripts write them. Blank lines are skipped, lines of
// the same stack are summed, and the result is sorted. The count is a non-negative integer; fractional
// counts are refused. Differential input (two counts a line, difffolded.pl) is not recognised: its first
// count reads as the end of the leaf's name, which Fold's output may well have ("foo 12").
func ParseFolded(r io.Reader) (*Folded, error) {
	lr := newLineReader(r)
	sums := make(map[string]int64)
	for {
		line, ok := lr.next()
		if !ok {
			break
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		stack, count, msg := splitFolded(line)
		if msg != "" {
			return nil, parseError(lr.n, line, msg)
		}
		old := sums[string(stack)]
		if count > math.MaxInt64-old {
			return nil, parseError(lr.n, line, "count overflows int64")
		}
		sums[string(stack)] = old + count
	}
	if err := lr.err(); err != nil {
		return nil, err
	}
	return fromSums(sums), nil
}

// splitFolded splits a folded line into its stack and count, or says what is wrong with it.
func splitFolded(line []byte) (stack []byte, count int64, msg string) {
	line = bytes.TrimRight(line, " \t")
	sp := bytes.LastIndexAny(line, " \t")
	if sp < 0 {
		return nil, 0, "not a folded stack (want \"frame;frame;... count\")"
	}
	// The stack keeps a blank before the separator: a leaf "StubRoutines (1)" tidied to "StubRoutines "
	// is written "StubRoutines  n", and flamegraph.pl reads it so too.
	stack, num := line[:sp], line[sp+1:]
	if len(bytes.TrimSpace(stack)) == 0 {
		return nil, 0, "empty stack"
	}
	count, err := strconv.ParseInt(string(num), 10, 64)
	switch {
	case err != nil && isDigits(num):
		return nil, 0, "count overflows int64"
	case err != nil || num[0] == '+' || num[0] == '-':
		return nil, 0, "count is not a non-negative integer"
	}
	return stack, count, ""
}

func isDigits(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// fromSums turns folded lines and their counts into a sorted Folded, dropping zero counts.
func fromSums(sums map[string]int64) *Folded {
	keys := make([]string, 0, len(sums))
	for k, n := range sums {
		if n > 0 {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	f := &Folded{Stacks: make([]Stack, len(keys))}
	for i, k := range keys {
		f.Stacks[i] = Stack{Frames: strings.Split(k, ";"), Count: sums[k]}
	}
	return f
}

// WriteFolded writes f as folded stacks, one "frame;...;frame count" a line.
func WriteFolded(w io.Writer, f *Folded) error {
	bw := bufio.NewWriter(w)
	for _, s := range f.Stacks {
		for i, fr := range s.Frames {
			if i > 0 {
				bw.WriteByte(';')
			}
			bw.WriteString(fr)
		}
		bw.WriteByte(' ')
		bw.WriteString(strconv.FormatInt(s.Count, 10))
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// InputFormat is what Sniff takes input to be.
type InputFormat int

const (
	InputUnknown    InputFormat = iota // nothing to go by (empty input)
	InputPerfScript                    // perf script text
	InputFolded                        // folded stacks
)

func (f InputFormat) String() string {
	switch f {
	case InputPerfScript:
		return "perf script"
	case InputFolded:
		return "folded"
	}
	return "unknown"
}

// Sniff tells folded stacks from perf script text by the first line that is neither blank nor a "#"
// comment: a folded line ends in a space and a count, and starts with a frame; perf script's sample
// headers end in the event name and a colon (or, without -g, in the dso in parentheses) and its frame
// lines start with blanks. head is the start of the input; a last line without its newline is used as it
// is.
func Sniff(head []byte) InputFormat {
	for line := range bytes.Lines(head) {
		line = bytes.TrimRight(line, "\r\n")
		if len(bytes.TrimSpace(line)) == 0 || line[0] == '#' {
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			return InputPerfScript
		}
		if _, _, msg := splitFolded(line); msg == "" && !bytes.HasSuffix(bytes.TrimSpace(line), []byte(":")) {
			return InputFolded
		}
		return InputPerfScript
	}
	return InputUnknown
}
