package fleet

import (
	"crypto/rand"
	"fmt"
	"slices"
	"strconv"

	"github.com/google/pprof/profile"
	collpb "go.opentelemetry.io/proto/slim/otlp/collector/profiles/v1development"
	commonpb "go.opentelemetry.io/proto/slim/otlp/common/v1"
	pb "go.opentelemetry.io/proto/slim/otlp/profiles/v1development"
	resourcepb "go.opentelemetry.io/proto/slim/otlp/resource/v1"
)

// OTLPProtoVersion names the OTLP profiles protocol the agent speaks: the development version of the
// signal (alpha: its messages still change between releases), as the pinned Go types
// go.opentelemetry.io/proto/slim/otlp/profiles/v1development v0.4.1 define it. It is sent in the
// User-Agent and as the instrumentation scope's "jvmkit.otlp.profiles.proto" attribute.
const OTLPProtoVersion = "v1development (go.opentelemetry.io/proto/slim/otlp v0.4.1, experimental)"

// ScopeName is the instrumentation scope of the profiles the agent exports.
const ScopeName = "github.com/jvmkit/jvmkit/fleet"

// OTLPProfile is a pprof profile with the target it belongs to, for ToOTLP.
type OTLPProfile struct {
	Target  Target
	Profile *profile.Profile
}

// ToOTLP converts pprof profiles to one OTLP profiles export request: one ResourceProfiles per
// profile (its target's resource attributes), one OTLP Profile per pprof sample type (the signal has
// one value type per profile), and one dictionary shared by all (strings, functions, locations,
// mappings, stacks, attributes each stored once). pprof string labels of samples become sample
// attributes, numeric labels attributes with their unit. version is the agent's version for the
// scope.
func ToOTLP(profiles []OTLPProfile, version string) (*collpb.ExportProfilesServiceRequest, error) {
	d := newDict()
	req := &collpb.ExportProfilesServiceRequest{Dictionary: d.pb}
	for _, in := range profiles {
		p := in.Profile
		if err := p.CheckValid(); err != nil {
			return nil, fmt.Errorf("otlp: %w", err)
		}
		// pprof ids to dictionary indices, for this profile.
		mappings := make(map[uint64]int32, len(p.Mapping))
		for _, m := range p.Mapping {
			mappings[m.ID] = d.mapping(&pb.Mapping{
				MemoryStart: m.Start, MemoryLimit: m.Limit, FileOffset: m.Offset,
				FilenameStrindex: d.str(m.File),
			})
		}
		functions := make(map[uint64]int32, len(p.Function))
		for _, f := range p.Function {
			functions[f.ID] = d.function(&pb.Function{
				NameStrindex: d.str(f.Name), SystemNameStrindex: d.str(f.SystemName),
				FilenameStrindex: d.str(f.Filename), StartLine: f.StartLine,
			})
		}
		locations := make(map[uint64]int32, len(p.Location))
		for _, l := range p.Location {
			loc := &pb.Location{Address: l.Address}
			if l.Mapping != nil {
				loc.MappingIndex = mappings[l.Mapping.ID]
			}
			for _, ln := range l.Line {
				line := &pb.Line{Line: ln.Line, Column: ln.Column}
				if ln.Function != nil {
					line.FunctionIndex = functions[ln.Function.ID]
				}
				loc.Lines = append(loc.Lines, line)
			}
			locations[l.ID] = d.location(loc)
		}
		stacks := make([]int32, len(p.Sample))
		attrs := make([][]int32, len(p.Sample))
		for i, s := range p.Sample {
			ids := make([]int32, len(s.Location))
			for k, l := range s.Location {
				ids[k] = locations[l.ID]
			}
			stacks[i] = d.stack(ids)
			attrs[i] = d.sampleAttributes(s)
		}
		scope := &pb.ScopeProfiles{Scope: &commonpb.InstrumentationScope{
			Name: ScopeName, Version: version,
			Attributes: []*commonpb.KeyValue{stringKV("jvmkit.otlp.profiles.proto", OTLPProtoVersion)},
		}}
		var periodType *pb.ValueType
		if p.PeriodType != nil {
			periodType = &pb.ValueType{TypeStrindex: d.str(p.PeriodType.Type), UnitStrindex: d.str(p.PeriodType.Unit)}
		}
		for t, st := range p.SampleType {
			op := &pb.Profile{
				SampleType:   &pb.ValueType{TypeStrindex: d.str(st.Type), UnitStrindex: d.str(st.Unit)},
				TimeUnixNano: uint64(max(p.TimeNanos, 0)), DurationNano: uint64(max(p.DurationNanos, 0)),
				PeriodType: periodType, Period: p.Period,
				ProfileId: profileID(),
			}
			for i, s := range p.Sample {
				if s.Value[t] == 0 {
					continue
				}
				op.Samples = append(op.Samples, &pb.Sample{
					StackIndex: stacks[i], AttributeIndices: attrs[i], Values: []int64{s.Value[t]},
				})
			}
			scope.Profiles = append(scope.Profiles, op)
		}
		req.ResourceProfiles = append(req.ResourceProfiles, &pb.ResourceProfiles{
			Resource:      &resourcepb.Resource{Attributes: resourceAttributes(in.Target)},
			ScopeProfiles: []*pb.ScopeProfiles{scope},
		})
	}
	return req, nil
}

func resourceAttributes(t Target) []*commonpb.KeyValue {
	var out []*commonpb.KeyValue
	for _, a := range t.Attributes() {
		if a.IsInt {
			out = append(out, &commonpb.KeyValue{Key: a.Key, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: a.Int}}})
		} else {
			out = append(out, stringKV(a.Key, a.Value))
		}
	}
	return out
}

func stringKV(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

// profileID is a random 16-byte id (an all-zero id is invalid).
func profileID() []byte {
	id := make([]byte, 16)
	_, _ = rand.Read(id)
	return id
}

// dict builds a ProfilesDictionary, each item once; index 0 of every table is its zero value.
type dict struct {
	pb        *pb.ProfilesDictionary
	strs      map[string]int32
	mappings  map[mappingKey]int32
	functions map[functionKey]int32
	locations map[string]int32
	stacks    map[string]int32
	attrs     map[attrKey]int32
}

type mappingKey struct {
	start, limit, offset uint64
	file                 int32
}

type functionKey struct {
	name, system, file int32
	start              int64
}

type attrKey struct {
	key, unit int32
	str       string
	num       int64
	isNum     bool
}

func newDict() *dict {
	return &dict{
		pb: &pb.ProfilesDictionary{
			MappingTable:   []*pb.Mapping{{}},
			LocationTable:  []*pb.Location{{}},
			FunctionTable:  []*pb.Function{{}},
			LinkTable:      []*pb.Link{{TraceId: make([]byte, 16), SpanId: make([]byte, 8)}},
			StringTable:    []string{""},
			AttributeTable: []*pb.KeyValueAndUnit{{}},
			StackTable:     []*pb.Stack{{}},
		},
		strs: map[string]int32{"": 0}, mappings: map[mappingKey]int32{}, functions: map[functionKey]int32{},
		locations: map[string]int32{}, stacks: map[string]int32{}, attrs: map[attrKey]int32{},
	}
}

// intern returns the index of the table entry whose key is k, appending mk()'s entry to the table first
// when there is none: every OTLP dictionary table is deduplicated this way.
func intern[K comparable, V any](index map[K]int32, table *[]V, k K, mk func() V) int32 {
	if i, ok := index[k]; ok {
		return i
	}
	i := int32(len(*table))
	*table = append(*table, mk())
	index[k] = i
	return i
}

func (d *dict) str(s string) int32 {
	return intern(d.strs, &d.pb.StringTable, s, func() string { return s })
}

func (d *dict) mapping(m *pb.Mapping) int32 {
	k := mappingKey{m.MemoryStart, m.MemoryLimit, m.FileOffset, m.FilenameStrindex}
	return intern(d.mappings, &d.pb.MappingTable, k, func() *pb.Mapping { return m })
}

func (d *dict) function(f *pb.Function) int32 {
	k := functionKey{f.NameStrindex, f.SystemNameStrindex, f.FilenameStrindex, f.StartLine}
	return intern(d.functions, &d.pb.FunctionTable, k, func() *pb.Function { return f })
}

func (d *dict) location(l *pb.Location) int32 {
	k := make([]byte, 0, 32)
	k = strconv.AppendInt(k, int64(l.MappingIndex), 16)
	k = append(k, ':')
	k = strconv.AppendUint(k, l.Address, 16)
	for _, ln := range l.Lines {
		k = append(k, ':')
		k = strconv.AppendInt(k, int64(ln.FunctionIndex), 16)
		k = append(k, ',')
		k = strconv.AppendInt(k, ln.Line, 16)
		k = append(k, ',')
		k = strconv.AppendInt(k, ln.Column, 16)
	}
	return intern(d.locations, &d.pb.LocationTable, string(k), func() *pb.Location { return l })
}

func (d *dict) stack(locs []int32) int32 {
	k := make([]byte, 0, 4*len(locs))
	for _, l := range locs {
		k = append(k, byte(l), byte(l>>8), byte(l>>16), byte(l>>24))
	}
	return intern(d.stacks, &d.pb.StackTable, string(k), func() *pb.Stack { return &pb.Stack{LocationIndices: locs} })
}

func (d *dict) attr(k attrKey) int32 {
	return intern(d.attrs, &d.pb.AttributeTable, k, func() *pb.KeyValueAndUnit {
		kv := &pb.KeyValueAndUnit{KeyStrindex: k.key, UnitStrindex: k.unit}
		if k.isNum {
			kv.Value = &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: k.num}}
		} else {
			kv.Value = &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: k.str}}
		}
		return kv
	})
}

// sampleAttributes turns a pprof sample's labels into attribute indices, keys sorted; a key with
// several values keeps its first (OTLP attribute keys are unique per sample).
func (d *dict) sampleAttributes(s *profile.Sample) []int32 {
	if len(s.Label) == 0 && len(s.NumLabel) == 0 {
		return nil
	}
	var out []int32
	for _, k := range sortedKeys(s.Label) {
		if v := s.Label[k]; len(v) > 0 {
			out = append(out, d.attr(attrKey{key: d.str(k), str: v[0]}))
		}
	}
	for _, k := range sortedKeys(s.NumLabel) {
		if _, dup := s.Label[k]; dup {
			continue
		}
		if v := s.NumLabel[k]; len(v) > 0 {
			unit := ""
			if u := s.NumUnit[k]; len(u) > 0 {
				unit = u[0]
			}
			out = append(out, d.attr(attrKey{key: d.str(k), unit: d.str(unit), num: v[0], isNum: true}))
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
