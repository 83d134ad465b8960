package flame

import (
	"fmt"
	"io"
	"time"

	"github.com/google/pprof/profile"
)

// PprofOptions choose the sample type of WritePprof's profile. Empty fields are derived from the
// Folded: "cpu"/"nanoseconds" for periods of cpu-clock or task-clock, the event's name and "count" for
// periods of other events, "samples"/"count" for sample counts.
type PprofOptions struct {
	SampleType string
	Unit       string
	// CPUPeriod, for a profile of counts of cpu-clock samples taken every CPUPeriod of CPU time, adds
	// the sample type cpu/nanoseconds (count x period), made the default, with the period, and Start and
	// End (when set) as the profile's time and duration: pprof then shows time.
	CPUPeriod  time.Duration
	Start, End time.Time
}

// Pprof converts f to a pprof profile: one Function and one Location per distinct frame name, each
// stack a Sample with its locations leaf first, as pprof orders them. A function's Name is the frame
// without its annotation suffix ("_[j]", "_[i]", "_[k]"), which stays in its SystemName.
func Pprof(f *Folded, opts PprofOptions) (*profile.Profile, error) {
	typ, unit := opts.SampleType, opts.Unit
	if typ == "" {
		switch {
		case !f.Period:
			typ = "samples"
		case isClockEvent(f.Event):
			typ, unit = "cpu", or(unit, "nanoseconds")
		case f.Event != "":
			typ = f.Event
		default:
			typ = "events"
		}
	}
	unit = or(unit, "count")
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: typ, Unit: unit}},
	}
	locs := make(map[string]*profile.Location)
	for _, s := range f.Stacks {
		if s.Count < 0 {
			return nil, fmt.Errorf("pprof: negative count %d", s.Count)
		}
		sample := &profile.Sample{Value: []int64{s.Count}, Location: make([]*profile.Location, 0, len(s.Frames))}
		for i := len(s.Frames) - 1; i >= 0; i-- {
			name := s.Frames[i]
			loc := locs[name]
			if loc == nil {
				_, label := classify(name)
				fn := &profile.Function{ID: uint64(len(p.Function) + 1), Name: label, SystemName: name}
				p.Function = append(p.Function, fn)
				loc = &profile.Location{ID: uint64(len(p.Location) + 1), Line: []profile.Line{{Function: fn}}}
				p.Location = append(p.Location, loc)
				locs[name] = loc
			}
			sample.Location = append(sample.Location, loc)
		}
		p.Sample = append(p.Sample, sample)
	}
	if period := opts.CPUPeriod.Nanoseconds(); period > 0 {
		cpu := &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}
		p.SampleType = append(p.SampleType, cpu)
		for _, s := range p.Sample {
			s.Value = append(s.Value, s.Value[0]*period)
		}
		p.DefaultSampleType, p.PeriodType, p.Period = "cpu", cpu, period
		if !opts.Start.IsZero() {
			p.TimeNanos = opts.Start.UnixNano()
			if opts.End.After(opts.Start) {
				p.DurationNanos = opts.End.Sub(opts.Start).Nanoseconds()
			}
		}
	}
	if err := p.CheckValid(); err != nil {
		return nil, fmt.Errorf("pprof: %w", err)
	}
	return p, nil
}

// WritePprof writes f as a gzipped pprof profile (see Pprof).
func WritePprof(w io.Writer, f *Folded, opts PprofOptions) error {
	p, err := Pprof(f, opts)
	if err != nil {
		return err
	}
	return p.Write(w)
}

func or(s, def string) string {
	if s != "" {
		return s
	}
	return def
}
