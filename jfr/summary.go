package jfr

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Summary is what `jfr summary` prints: the format version, the chunks, when the recording started and
// how long it ran, and the count and size of every event type.
type Summary struct {
	Major, Minor int
	Chunks       int
	Start        time.Time
	Duration     time.Duration // the chunks' durations added up
	// Types has one entry per event type the metadata of any chunk declares, those without events
	// included, and the metadata and checkpoint events ("jdk.Metadata", "jdk.Checkpoint"); events of
	// ids no metadata declares are "<id> (missing event metadata)". Sorted by count, most first, then
	// by name.
	Types []TypeCount
	// Width is the width of the type column in text: the longest event type name the metadata
	// declares.
	Width int
}

// WriteText writes the summary as the JDK's `jfr summary` does (JDK 25), byte for byte.
func (s Summary) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw)
	fmt.Fprintf(bw, " Version: %d.%d\n", s.Major, s.Minor)
	fmt.Fprintf(bw, " Chunks: %d\n", s.Chunks)
	fmt.Fprintf(bw, " Start: %s (UTC)\n", s.Start.UTC().Format("2006-01-02 15:04:05"))
	fmt.Fprintf(bw, " Duration: %d s\n", (s.Duration.Nanoseconds()+500_000_000)/1_000_000_000)
	fmt.Fprintln(bw)
	const header = "      Count  Size (bytes) "
	const typeHeader = " Event Type"
	width := max(s.Width, len(typeHeader))
	fmt.Fprintf(bw, "%s%s%s\n", typeHeader, strings.Repeat(" ", width-len(typeHeader)), header)
	fmt.Fprintln(bw, strings.Repeat("=", width+len(header)))
	for _, t := range s.Types {
		fmt.Fprintf(bw, " %-*s%10d  %12d\n", width, t.Name, t.Count, t.Bytes)
	}
	return bw.Flush()
}

// Summary counts the recording's events by type. It needs no event decoded, so it is as fast as the
// file can be walked.
func (r *Recording) Summary() Summary {
	s := Summary{Chunks: len(r.Chunks)}
	if len(r.Chunks) == 0 {
		return s
	}
	first := r.Chunks[0]
	s.Major, s.Minor = int(first.Header.Major), int(first.Header.Minor)
	s.Start = time.Unix(0, first.Header.StartNanos).UTC()
	prefix := "jdk."
	if first.Header.Major == 1 {
		prefix = "com.oracle.jdk."
	}
	byID := map[int64]*TypeCount{
		metadataTypeID:   {ID: metadataTypeID, Name: prefix + "Metadata"},
		checkpointTypeID: {ID: checkpointTypeID, Name: prefix + "Checkpoint"},
	}
	for _, c := range r.Chunks {
		s.Duration += time.Duration(c.Header.DurationNanos)
		if c.Metadata != nil {
			for _, t := range c.Metadata.Events {
				s.Width = max(s.Width, len(t.Name))
				if byID[t.ID] == nil {
					byID[t.ID] = &TypeCount{ID: t.ID, Name: t.Name}
				}
			}
		}
		for id, tc := range c.counts {
			sum := byID[id]
			if sum == nil {
				sum = &TypeCount{ID: id, Name: strconv.FormatInt(id, 10) + " (missing event metadata)"}
				byID[id] = sum
			}
			sum.Count += tc.Count
			sum.Bytes += tc.Bytes
		}
	}
	for _, tc := range byID {
		s.Types = append(s.Types, *tc)
	}
	slices.SortFunc(s.Types, func(a, b TypeCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Name, b.Name))
	})
	return s
}
