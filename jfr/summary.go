package jfr

import (
	"cmp"
	"slices"
	"strconv"
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
