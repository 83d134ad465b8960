package testutil

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The oracles are outputs of tools jvmkit did not write, read here so that tests compare our figures with
// them: JFR recordings printed by the JDK's `jfr print --json`, and the JVM's own -Xlog:gc.

// JFREvent is an event of `jfr print --json`, with the fields the tests compare.
type JFREvent struct {
	Type   string `json:"type"` // "jdk.ExecutionSample"
	Values struct {
		StartTime  time.Time      `json:"startTime"`
		StackTrace *JFRStackTrace `json:"stackTrace"`
		// State is the sampled thread's state (jdk.ExecutionSample: "STATE_RUNNABLE").
		State string `json:"state"`
		// ObjectClass and Weight: jdk.ObjectAllocationSample's class and the bytes it stands for (what the
		// thread allocated since its previous sample).
		ObjectClass *JFRClass `json:"objectClass"`
		Weight      int64     `json:"weight"`
		// Biased (jdk.CPUTimeSample, JDK 25+): JFR says the sample is safepoint-biased, its stack taken
		// where the thread next polled instead of where it was sampled. Failed: JFR got no stack.
		Biased bool `json:"biased"`
		Failed bool `json:"failed"`
		// SampledThread (jdk.ExecutionSample) or EventThread (most others).
		SampledThread *JFRThread `json:"sampledThread"`
		EventThread   *JFRThread `json:"eventThread"`
	} `json:"values"`
}

// JFRStackTrace is a recorded stack, top frame first. `jfr print` cuts it to --stack-depth frames (5 unless
// told otherwise).
type JFRStackTrace struct {
	Truncated bool       `json:"truncated"`
	Frames    []JFRFrame `json:"frames"`
}

// JFRFrame is one frame of a JFR stack.
type JFRFrame struct {
	Method struct {
		Type       JFRClass `json:"type"`
		Name       string   `json:"name"`
		Descriptor string   `json:"descriptor"`
		Modifiers  int      `json:"modifiers"`
	} `json:"method"`
	LineNumber int    `json:"lineNumber"`
	Type       string `json:"type"` // "Interpreted", "JIT compiled", "Inlined", "Native"
}

// JFRClass is a class as JFR names it: the internal name ("java/lang/String", "[B").
type JFRClass struct {
	Name string `json:"name"`
}

// JFRThread is a thread of a JFR event.
type JFRThread struct {
	OSName     string `json:"osName"`
	OSThreadID int64  `json:"osThreadId"`
	JavaName   string `json:"javaName"`
}

// accNative is the ACC_NATIVE bit of a method's access flags (JVMS 4.6).
const accNative = 0x0100

// MethodName is the frame's method as jvmkit names Java frames: "java.lang.String.indexOf" (the class's
// binary name with dots, then the method), without signature or line.
func (f *JFRFrame) MethodName() string {
	return strings.ReplaceAll(f.Method.Type.Name, "/", ".") + "." + f.Method.Name
}

// Native reports whether the frame's method is a Java native method.
func (f *JFRFrame) Native() bool { return f.Method.Modifiers&accNative != 0 }

// ParseJFRJSON reads the output of `jfr print --json`: {"recording": {"events": [...]}}.
func ParseJFRJSON(data []byte) ([]JFREvent, error) {
	var doc struct {
		Recording struct {
			Events []JFREvent `json:"events"`
		} `json:"recording"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("parse jfr print --json: %w", err)
	}
	return doc.Recording.Events, nil
}

// GCLogPause is a pause as the JVM logs it with -Xlog:gc (tag gc; gc,phases for ZGC's pauses).
type GCLogPause struct {
	ID       int           // GC(n): the collection; a ZGC collection has several pauses
	Name     string        // "Young (Normal) (G1 Evacuation Pause)", "Full (System.gc())", "Mark Start (Major)"
	Full     bool          // a full collection: "Pause Full"
	Duration time.Duration // as logged (ms with 3 decimals)
	// Time and Uptime are the timenanos and uptimenanos decorations, taken when the line was logged, at the
	// end of the pause: the JVM's javaTimeNanos (CLOCK_MONOTONIC on Linux) and nanoseconds since the JVM
	// started. Zero when the log has no such decorations.
	Time   int64
	Uptime time.Duration
}

// GCLogDecorations is the -Xlog decorator list that ParseGCLog reads, e.g.
// "-Xlog:gc*:file=gc.log:" + GCLogDecorations. HotSpot prints decorations in a fixed order whatever the
// list's: timenanos before uptimenanos, then the tags.
const GCLogDecorations = "timenanos,uptimenanos,tags"

var (
	gcLogDecoration = regexp.MustCompile(`^\[([^\]]*)\]`)
	// "GC(12) Pause Young (Normal) (G1 Evacuation Pause) 24M->5M(256M) 3.456ms",
	// "GC(3) Pause Full (System.gc()) 10M->2M(64M) 20.125ms", ZGC: "GC(2) Pause Mark Start 0.012ms",
	// generational ZGC: "GC(2) Y: Pause Mark Start (Major) 0.012ms", "GC(3) y: ...", "GC(2) O: ...".
	gcLogPause = regexp.MustCompile(`^GC\((\d+)\) (?:[YyO]: )?Pause (.+?)(?: \d+[BKMG]->\d+[BKMG]\(\d+[BKMG]\))? (\d+(?:\.\d+)?)ms$`)
)

// ParseGCLog reads the pauses of a -Xlog:gc* log decorated with [GCLogDecorations]. Only lines tagged
// exactly gc or gc,phases name pauses with durations; the gc,start lines of G1, Parallel and Serial
// ("Pause Young (Normal) ...", no duration) and the sub-phase lines are skipped, as is every line it does
// not recognise.
func ParseGCLog(data []byte) []GCLogPause {
	var pauses []GCLogPause
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		var p GCLogPause
		var nanos []int64
		tags := ""
		for {
			m := gcLogDecoration.FindStringSubmatch(line)
			if m == nil {
				break
			}
			line = strings.TrimLeft(line[len(m[0]):], " ")
			d := strings.TrimSpace(m[1])
			if v, ok := strings.CutSuffix(d, "ns"); ok {
				if n, err := strconv.ParseInt(v, 10, 64); err == nil {
					nanos = append(nanos, n)
					continue
				}
			}
			tags = d
		}
		if tags != "gc" && tags != "gc,phases" {
			continue
		}
		m := gcLogPause.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		id, err1 := strconv.Atoi(m[1])
		ms, err2 := strconv.ParseFloat(m[3], 64)
		if err1 != nil || err2 != nil || ms < 0 {
			continue
		}
		if len(nanos) == 2 {
			p.Time, p.Uptime = nanos[0], time.Duration(nanos[1])
		}
		p.ID = id
		p.Name = m[2]
		p.Full = strings.HasPrefix(p.Name, "Full")
		p.Duration = time.Duration(ms * float64(time.Millisecond))
		pauses = append(pauses, p)
	}
	return pauses
}

// ParseBpftraceMaps reads the map lines of `bpftrace -f json` output:
// {"type": "map", "data": {"@name": {"key": 12, ...}}} or, for a map without keys, {"@name": 12}. Values
// beyond int64 (a sum of garbage arguments) saturate at its limits.
func ParseBpftraceMaps(out []byte) (map[string]map[string]int64, error) {
	maps := make(map[string]map[string]int64)
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var msg struct {
			Type string                     `json:"type"`
			Data map[string]json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal([]byte(line), &msg); err != nil {
			return nil, fmt.Errorf("parse bpftrace output: %w", err)
		}
		if msg.Type != "map" {
			continue
		}
		for name, raw := range msg.Data {
			m := make(map[string]int64)
			var keyed map[string]json.Number
			var plain json.Number
			switch {
			case json.Unmarshal(raw, &keyed) == nil:
				for k, v := range keyed {
					m[k] = saturate(v)
				}
			case json.Unmarshal(raw, &plain) == nil:
				m[""] = saturate(plain)
			default:
				return nil, fmt.Errorf("parse bpftrace map %s: %w", name, errors.ErrUnsupported)
			}
			maps[name] = m
		}
	}
	return maps, sc.Err()
}

func saturate(n json.Number) int64 {
	if v, err := n.Int64(); err == nil {
		return v
	}
	f, err := n.Float64()
	switch {
	case err != nil:
		return 0
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

// LeakChainInPrint reports whether `jfr print --events jdk.OldObjectSample` of a dump with path-to-gc-roots,
// taken from the Leak workload, shows a reference chain from a GC root to a leaked item's payload: through the
// class Leak's static field LEAK on JDK 17+, and on JDK 11, whose chains end at the ArrayList that field
// holds (root "<unknown>"), through that list's array.
func LeakChainInPrint(feature int, out []byte) bool {
	if !bytes.Contains(out, []byte("payload : Leak$LeakedItem")) || !bytes.Contains(out, []byte("root = {")) {
		return false
	}
	if feature < 17 {
		return bytes.Contains(out, []byte("elementData : java.util.ArrayList"))
	}
	return bytes.Contains(out, []byte("LEAK : java.lang.Class"))
}
