package jfr

import (
	"math"
	"strconv"
	"time"
)

// timeConverter turns ticks into nanoseconds as the JDK's reader does
// (jdk.jfr.internal.consumer.TimeConverter): with the first chunk's start and frequency for every
// chunk, through a double, truncated.
type timeConverter struct {
	startTicks, startNanos int64
	divisor                float64 // ticks per nanosecond
	zone                   int32   // seconds east of UTC
}

func newTimeConverter(h *Header, m *Metadata) timeConverter {
	c := timeConverter{startTicks: h.StartTicks, startNanos: h.StartNanos, divisor: float64(h.TicksPerSecond) / 1e9}
	if m != nil {
		// java.time.ZoneOffset.ofTotalSeconds accepts +-18 hours; the JDK falls back to UTC.
		if s := (m.GMTOffset + m.DST) / 1000; s >= -18*3600 && s <= 18*3600 {
			c.zone = int32(s)
		}
	}
	return c
}

func (c timeConverter) timestamp(ticks int64) int64 {
	return c.startNanos + javaD2L(float64(ticks-c.startTicks)/c.divisor)
}

func (c timeConverter) timespan(ticks int64) int64 {
	return javaD2L(float64(ticks) / c.divisor)
}

// javaD2L is Java's (long) cast of a double: NaN is 0, out-of-range values saturate.
func javaD2L(f float64) int64 {
	switch {
	case f != f:
		return 0
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

// Time converts a timestamp in ticks into time, as the JDK does.
func (r *Recording) Time(ticks int64) time.Time { return time.Unix(0, r.conv.timestamp(ticks)) }

// Nanos converts a timespan in ticks into nanoseconds, as the JDK does.
func (r *Recording) Nanos(ticks int64) int64 { return r.conv.timespan(ticks) }

// Zone returns the recording JVM's offset from UTC, as the JDK's reader uses it for timestamps.
func (r *Recording) Zone() *time.Location {
	if r.conv.zone == 0 {
		return time.UTC
	}
	return time.FixedZone("", int(r.conv.zone))
}

// DurationNanos converts a number in field f (annotated with jdk.jfr.Timespan) into nanoseconds as
// the JDK does, with ok=false when f has no timespan unit the JDK knows. The JDK's markers stay:
// math.MinInt64 for "no value" and math.MaxInt64 for "forever".
func (r *Recording) DurationNanos(f *Field, v int64) (int64, bool) {
	d, ok := r.conv.duration(f.Timespan, v)
	if !ok {
		return 0, false
	}
	if v == math.MinInt64 || v == math.MaxInt64 {
		return v, true
	}
	return saturatingNanos(d), true
}

// TimestampNanos converts a number in field f (annotated with jdk.jfr.Timestamp) into nanoseconds
// since the epoch, with ok=false when f has no timestamp unit the JDK knows.
func (r *Recording) TimestampNanos(f *Field, v int64) (int64, bool) {
	switch f.Timestamp {
	case "TICKS":
		return r.conv.timestamp(v), true
	case "MILLISECONDS_SINCE_EPOCH":
		if v > math.MaxInt64/1_000_000 || v < math.MinInt64/1_000_000 {
			return 0, false
		}
		return v * 1e6, true
	}
	return 0, false
}

func saturatingNanos(d javaDuration) int64 {
	if d.sec > math.MaxInt64/1_000_000_000-1 {
		return math.MaxInt64
	}
	if d.sec < math.MinInt64/1_000_000_000+1 {
		return math.MinInt64
	}
	return d.sec*1e9 + int64(d.nano)
}

// javaDuration is java.time.Duration: seconds and a nanosecond adjustment in [0, 1e9).
type javaDuration struct {
	sec  int64
	nano int32
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 { return a - floorDiv(a, b)*b }

func durationOfNanos(n int64) javaDuration {
	return javaDuration{floorDiv(n, 1e9), int32(floorMod(n, 1e9))}
}

// duration converts v of a field with the given jdk.jfr.Timespan unit as RecordedObject.getDuration
// does (JDK 25), including its markers: 0 is zero, math.MinInt64 is Duration.ofSeconds(MinInt64) and
// math.MaxInt64 is ChronoUnit.FOREVER.
func (c timeConverter) duration(unit string, v int64) (javaDuration, bool) {
	switch unit {
	case "TICKS", "NANOSECONDS", "MICROSECONDS", "MILLISECONDS", "SECONDS":
	default:
		return javaDuration{}, false
	}
	switch v {
	case 0:
		return javaDuration{}, true
	case math.MinInt64:
		return javaDuration{sec: math.MinInt64}, true
	case math.MaxInt64:
		return javaDuration{sec: math.MaxInt64, nano: 999_999_999}, true
	}
	switch unit {
	case "MICROSECONDS":
		return durationOfNanos(1000 * v), true // wraps as Java's long multiplication does
	case "SECONDS":
		return javaDuration{sec: v}, true
	case "MILLISECONDS":
		return javaDuration{floorDiv(v, 1000), int32(floorMod(v, 1000) * 1e6)}, true
	case "NANOSECONDS":
		return durationOfNanos(v), true
	}
	return durationOfNanos(c.timespan(v)), true
}

// appendJavaDuration appends java.time.Duration.toString: ISO-8601 "PT8H6M12.345S".
func appendJavaDuration(b []byte, d javaDuration) []byte {
	if d.sec == 0 && d.nano == 0 {
		return append(b, "PT0S"...)
	}
	eff := d.sec
	if d.sec < 0 && d.nano > 0 {
		eff++
	}
	hours := eff / 3600
	minutes := (eff % 3600) / 60
	secs := eff % 60
	b = append(b, "PT"...)
	start := len(b)
	if hours != 0 {
		b = strconv.AppendInt(b, hours, 10)
		b = append(b, 'H')
	}
	if minutes != 0 {
		b = strconv.AppendInt(b, minutes, 10)
		b = append(b, 'M')
	}
	if secs == 0 && d.nano == 0 && len(b) > start {
		return b
	}
	if d.sec < 0 && d.nano > 0 {
		if secs == 0 {
			b = append(b, "-0"...)
		} else {
			b = strconv.AppendInt(b, secs, 10)
		}
	} else {
		b = strconv.AppendInt(b, secs, 10)
	}
	if d.nano > 0 {
		pos := len(b)
		if d.sec < 0 {
			b = strconv.AppendInt(b, 2*1e9-int64(d.nano), 10)
		} else {
			b = strconv.AppendInt(b, int64(d.nano)+1e9, 10)
		}
		for b[len(b)-1] == '0' {
			b = b[:len(b)-1]
		}
		b[pos] = '.'
	}
	return append(b, 'S')
}

// appendOffsetDateTime appends java.time.OffsetDateTime.toString of the instant (seconds since the
// epoch and nanoseconds) at the given offset: "2025-01-02T03:04:05.123456789+01:00", with seconds
// and fraction left out when zero and the fraction in groups of three digits.
func appendOffsetDateTime(b []byte, sec int64, nano int32, zone int32) []byte {
	local := sec + int64(zone)
	days := floorDiv(local, 86400)
	sod := floorMod(local, 86400)
	y, m, d := civil(days)
	switch {
	case y < 0 && y > -10000:
		b = append(b, '-')
		b = appendPadded(b, -y, 4)
	case y < 0:
		b = strconv.AppendInt(b, y, 10)
	case y > 9999:
		b = append(b, '+')
		b = strconv.AppendInt(b, y, 10)
	default:
		b = appendPadded(b, y, 4)
	}
	b = append(b, '-')
	b = appendPadded(b, int64(m), 2)
	b = append(b, '-')
	b = appendPadded(b, int64(d), 2)
	b = append(b, 'T')
	b = appendPadded(b, sod/3600, 2)
	b = append(b, ':')
	b = appendPadded(b, sod/60%60, 2)
	if s := sod % 60; s > 0 || nano > 0 {
		b = append(b, ':')
		b = appendPadded(b, s, 2)
		if nano > 0 {
			b = append(b, '.')
			switch {
			case nano%1e6 == 0:
				b = appendPadded(b, int64(nano/1e6), 3)
			case nano%1e3 == 0:
				b = appendPadded(b, int64(nano/1e3), 6)
			default:
				b = appendPadded(b, int64(nano), 9)
			}
		}
	}
	return appendZone(b, zone)
}

func appendZone(b []byte, zone int32) []byte {
	if zone == 0 {
		return append(b, 'Z')
	}
	z := int64(zone)
	if z < 0 {
		b = append(b, '-')
		z = -z
	} else {
		b = append(b, '+')
	}
	b = appendPadded(b, z/3600, 2)
	b = append(b, ':')
	b = appendPadded(b, z/60%60, 2)
	if s := z % 60; s != 0 {
		b = append(b, ':')
		b = appendPadded(b, s, 2)
	}
	return b
}

func appendPadded(b []byte, v int64, width int) []byte {
	var tmp [24]byte
	s := strconv.AppendInt(tmp[:0], v, 10)
	for i := len(s); i < width; i++ {
		b = append(b, '0')
	}
	return append(b, s...)
}

// civil converts days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm,
// the one java.time.LocalDate.ofEpochDay also rests on).
func civil(days int64) (y int64, m, d int) {
	z := days + 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = int(doy - (153*mp+2)/5 + 1)
	if mp < 10 {
		m = int(mp + 3)
	} else {
		m = int(mp - 9)
	}
	if m <= 2 {
		y++
	}
	return y, m, d
}
