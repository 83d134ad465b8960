package jfr

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Leak chains come from jdk.OldObjectSample events (JDK 10+). The JVM samples allocations, keeps
// the samples whose objects stay alive, and at a dump with path-to-gc-roots=true searches a reference
// path from each to a GC root. An event's "object" is a jdk.types.OldObject: the sampled object, whose
// "referrer" (a jdk.types.Reference) names the field or array element that holds it and the object
// that does, and so on to the object a root holds; "root" (jdk.types.OldObjectGcRoot) says what kind
// of root. Long paths keep their two ends: a reference's "skip" counts the references left out.

// Root is the GC root of a chain.
type Root struct {
	System      string `json:"system"`      // "Threads", "Class Loader Data", "JNI Global", ...
	Type        string `json:"type"`        // "Stack Variable", "Handle Area", ...
	Description string `json:"description"` // "Thread Name: main"
}

// Link is one object of a chain and how it is held by the next one towards the root.
type Link struct {
	Class       string `json:"class"`                 // Java name: "java.util.ArrayList"
	Description string `json:"description,omitempty"` // the JVM's: "Class Name: Leak", "Size: 10"
	Address     int64  `json:"address,omitempty"`
	// How the next link (towards the root) holds this object: a field ("elementData", Static for a
	// static field) or an array element (Index); none for the last link.
	Field  string `json:"field,omitempty"`
	Static bool   `json:"static,omitempty"`
	Index  int64  `json:"index"` // -1 when held by a field, or by nothing
	// Skipped counts references the JVM left out between this link and the next.
	Skipped int64 `json:"skipped,omitempty"`
}

// LeakSample is one jdk.OldObjectSample.
type LeakSample struct {
	Time           time.Time     `json:"time"`
	AllocationTime time.Time     `json:"allocationTime"`
	Age            time.Duration `json:"age"`
	ObjectSize     int64         `json:"objectSize"` // bytes, -1 when unknown (JDK 11)
	ArrayElements  int64         `json:"arrayElements"`
	HeapUsage      int64         `json:"lastKnownHeapUsage"` // bytes
	Root           *Root         `json:"root"`               // nil when no path was searched or found
	// Chain runs from the sampled object (first) to the object the root holds (last).
	Chain  []Link  `json:"chain"`
	Stack  []Frame `json:"stack,omitempty"` // where the object was allocated, leaf first
	Thread string  `json:"thread,omitempty"`
	stack  *StackTrace
}

// LeakGroup is the samples whose chains have the same shape: the same root kind, the same classes and
// fields, array indices aside.
type LeakGroup struct {
	Root       *Root         `json:"root"`
	Chain      []Link        `json:"chain"` // the first sample's; indices and addresses are examples
	Class      string        `json:"class"` // the sampled objects' class
	Count      int           `json:"count"`
	TotalSize  int64         `json:"totalSize"`
	MaxAge     time.Duration `json:"maxAge"`
	MinAge     time.Duration `json:"minAge"`
	HeapUsage  int64         `json:"lastKnownHeapUsage"` // the latest sample's
	Stack      []Frame       `json:"stack,omitempty"`    // the most common allocation stack, leaf first
	StackCount int           `json:"stackCount"`         // samples allocated at Stack
	Samples    []LeakSample  `json:"samples"`
	key        string
}

// Leaks reads the recording's Old Object Samples and groups them by chain, most suspicious first:
// chains that reach a GC root before those that do not, then more samples, more bytes, older objects.
// It also returns the number of samples, and the damage of a damaged recording, with the groups of
// the samples before it.
func Leaks(r *Recording) ([]*LeakGroup, int, error) {
	groups := map[string]*LeakGroup{}
	stackCounts := map[*LeakGroup]map[string]int{}
	n := 0
	var readErr error
	for e, err := range r.Events(EventOptions{Types: func(t *Type) bool { return t.Name == "jdk.OldObjectSample" }, Ordered: true}) {
		if err != nil {
			readErr = err // explain what precedes the damage
			break
		}
		n++
		s := leakSample(r, e)
		key := chainKey(&s)
		g := groups[key]
		if g == nil {
			g = &LeakGroup{Root: s.Root, Chain: s.Chain, key: key, MinAge: s.Age}
			if len(s.Chain) > 0 {
				g.Class = s.Chain[0].Class
			}
			groups[key] = g
			stackCounts[g] = map[string]int{}
		}
		g.Count++
		if s.ObjectSize > 0 {
			g.TotalSize += s.ObjectSize
		}
		g.MaxAge = max(g.MaxAge, s.Age)
		g.MinAge = min(g.MinAge, s.Age)
		g.HeapUsage = s.HeapUsage
		if s.stack != nil {
			sk := stackKey(s.stack)
			stackCounts[g][sk]++
			if c := stackCounts[g][sk]; c > g.StackCount {
				g.StackCount, g.Stack = c, s.Stack
			}
		}
		g.Samples = append(g.Samples, s)
	}
	out := make([]*LeakGroup, 0, len(groups))
	for _, g := range groups {
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b *LeakGroup) int {
		return cmp.Or(
			cmp.Compare(rooted(b), rooted(a)),
			cmp.Compare(b.Count, a.Count),
			cmp.Compare(b.TotalSize, a.TotalSize),
			cmp.Compare(b.MaxAge, a.MaxAge),
			cmp.Compare(a.key, b.key))
	})
	return out, n, readErr
}

func rooted(g *LeakGroup) int {
	if g.Root != nil && len(g.Chain) > 0 {
		return 1
	}
	return 0
}

func leakSample(r *Recording, e *Event) LeakSample {
	s := LeakSample{Time: e.StartTime(), ObjectSize: -1}
	ty := e.Type
	for i, f := range ty.Fields {
		v := e.Values[i]
		n, isInt := ToInt(v, f.Unsigned)
		switch f.Name {
		case "allocationTime":
			if isInt {
				if ns, ok := r.TimestampNanos(f, n); ok {
					s.AllocationTime = time.Unix(0, ns)
				}
			}
		case "objectAge":
			if isInt {
				if ns, ok := r.DurationNanos(f, n); ok {
					s.Age = time.Duration(ns)
				}
			}
		case "objectSize":
			if isInt {
				s.ObjectSize = n
			}
		case "arrayElements":
			if isInt {
				s.ArrayElements = n
			}
		case "lastKnownHeapUsage":
			if isInt {
				s.HeapUsage = n
			}
		}
	}
	if ty.Field("objectAge") < 0 && !s.AllocationTime.IsZero() {
		s.Age = s.Time.Sub(s.AllocationTime) // JDK 11 records no age
	}
	if root := e.Child("root"); root != nil {
		s.Root = &Root{System: root.String("system"), Type: root.String("type"), Description: root.String("description")}
	}
	// Follow the chain; a chain that loops (corrupt data) ends where it meets itself.
	seen := map[*Object]bool{}
	for o := e.Child("object"); o != nil && !seen[o]; {
		seen[o] = true
		l := Link{Class: classOf(o.Child("type")), Description: o.String("description"), Index: -1}
		l.Address, _ = o.Int("address")
		ref := o.Child("referrer")
		if ref == nil {
			s.Chain = append(s.Chain, l)
			break
		}
		if fld := ref.Child("field"); fld != nil {
			l.Field = fld.String("name")
			mod, _ := fld.Int("modifiers")
			l.Static = mod&0x0008 != 0
		}
		if arr := ref.Child("array"); arr != nil {
			l.Index, _ = arr.Int("index")
		}
		l.Skipped, _ = ref.Int("skip")
		s.Chain = append(s.Chain, l)
		o = ref.Child("object")
	}
	s.stack = Stack(e.Child("stackTrace"))
	if s.stack != nil {
		s.Stack = s.stack.Frames
	}
	s.Thread = ThreadName(e.Child("eventThread"))
	return s
}

func chainKey(s *LeakSample) string {
	var b strings.Builder
	if s.Root != nil {
		b.WriteString(s.Root.System + "/" + s.Root.Type)
	}
	for _, l := range s.Chain {
		b.WriteString("|" + l.Class + "|" + l.Field)
		if l.Index >= 0 {
			b.WriteString("[]")
		}
		if l.Skipped > 0 {
			b.WriteString("...")
		}
		if strings.HasPrefix(l.Description, "Class Name: ") {
			b.WriteString("|" + l.Description) // two classes' statics are two leaks
		}
	}
	return b.String()
}

func stackKey(st *StackTrace) string {
	var b strings.Builder
	for _, f := range st.Frames {
		b.WriteString(f.Method + ":" + strconv.Itoa(f.Line) + ";")
	}
	return b.String()
}
