package hsperf

import (
	"bufio"
	"io"
	"slices"
	"strings"
	"unicode/utf8"
)

// Counters returns the counters jcmd PerfCounter.print would list, in its order: the entries of
// the file plus six pseudo counters that the jvmstat reader derives from the prologue
// (sun.perfdata.{majorVersion,minorVersion,size,used,overflow,timestamp}), one per name (a later
// entry replaces an earlier one of the same name), sorted by name with Java's String.compareTo.
func (d *Data) Counters() []Entry {
	if d == nil {
		return nil
	}
	// Units and variability as PerfDataBuffer.buildPseudoMonitors declares them.
	pseudo := []Entry{
		{Name: "sun.perfdata.majorVersion", Units: UnitsNone, Variability: Constant, Long: int64(d.Major)},
		{Name: "sun.perfdata.minorVersion", Units: UnitsNone, Variability: Constant, Long: int64(d.Minor)},
		{Name: "sun.perfdata.size", Units: UnitsBytes, Variability: Monotonic, Long: int64(d.Size)},
		{Name: "sun.perfdata.used", Units: UnitsBytes, Variability: Monotonic, Long: int64(d.Used)},
		{Name: "sun.perfdata.overflow", Units: UnitsBytes, Variability: Monotonic, Long: int64(d.Overflow)},
		{Name: "sun.perfdata.timestamp", Units: UnitsTicks, Variability: Monotonic, Long: d.ModTimeStamp},
	}
	out := make([]Entry, 0, len(pseudo)+len(d.Entries))
	index := make(map[string]int, cap(out))
	add := func(e Entry) {
		if i, ok := index[e.Name]; ok {
			out[i] = e
			return
		}
		index[e.Name] = len(out)
		out = append(out, e)
	}
	for _, e := range pseudo {
		e.Type = TypeLong
		add(e)
	}
	for _, e := range d.Entries {
		add(e)
	}
	slices.SortFunc(out, func(a, b Entry) int {
		if c := javaCompare(a.Name, b.Name); c != 0 {
			return c
		}
		// Distinct invalid UTF-8 names can decode alike; keep the order total anyway.
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// WritePerfCounters writes the counters exactly as `jcmd <pid> PerfCounter.print` prints them
// (without the "<pid>:" header line): one "name=value" line per counter, in the order of
// Counters. Note that this order is not that of sort(1) on the lines: "a.b=" sorts after "a.b.c="
// there, while jcmd compares names only.
func WritePerfCounters(w io.Writer, d *Data) error {
	bw := bufio.NewWriter(w)
	var line []byte
	for _, e := range d.Counters() {
		line = append(line[:0], e.Name...)
		line = append(line, '=')
		line = append(line, e.String()...)
		line = append(line, '\n')
		if _, err := bw.Write(line); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// javaCompare orders strings like java.lang.String.compareTo: by UTF-16 code units. That equals
// byte order for ASCII, and differs from Go's UTF-8 byte order only between a supplementary
// character and one in U+E000..U+FFFF.
func javaCompare(a, b string) int {
	// Skip the common prefix; counter names are ASCII, so this usually decides.
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	if i < len(a) && i < len(b) && a[i] < utf8.RuneSelf && b[i] < utf8.RuneSelf {
		return int(a[i]) - int(b[i])
	}
	// Back up to a position that starts a rune in both strings: a byte that is not a UTF-8
	// continuation byte always does, and the bytes before it are the same in both.
	for i > 0 && (i < len(a) && !utf8.RuneStart(a[i]) || i < len(b) && !utf8.RuneStart(b[i])) {
		i--
	}
	a, b = a[i:], b[i:]
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			ua, ub := firstUnit(ra), firstUnit(rb)
			if ua != ub {
				return int(ua) - int(ub)
			}
			// Same high surrogate: the low surrogates order like the runes.
			return int(ra) - int(rb)
		}
		a, b = a[na:], b[nb:]
	}
	return len(a) - len(b) // only the sign matters: the shorter remainder is the empty one
}

func firstUnit(r rune) rune {
	if r >= 0x10000 {
		return 0xd800 + (r-0x10000)>>10
	}
	return r
}
