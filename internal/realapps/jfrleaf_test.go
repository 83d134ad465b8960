//go:build linux

package realapps

import (
	"maps"
	"strconv"
	"strings"
	"testing"

	"github.com/jvmkit/jvmkit/internal/testutil"
)

// The profile's Java leaves are compared with JFR's own samples of the same kind where the JDK has them.
// From JDK 25 on, JFR resolves a jdk.ExecutionSample at the thread's next safepoint poll (cooperative
// sampling): a sample taken in a stub, in the runtime or in a frame that has returned by then is given the
// stack of wherever the thread polls. Measured on Jetty (JDK 25, 60 s, docs/benchmarks.md): JFR put 3.3% of
// its samples on LongAdder.increment, 2.8% on ManagedSelector.submit and 1.4% on
// VarHandleLongs.weakCompareAndSetRelease, the cpu-clock samples 0.04%, 0.09% and 0.16% (those threads
// are in C1's monitorenter/monitorexit runtime calls and EventFD's write), and the top-15 overlap was
// 11/15. JDK 25's jdk.CPUTimeSample samples by thread CPU time as perf's cpu-clock does, goes through
// the same resolution, but flags the samples it biased: against its unbiased samples the overlap was
// 14/15 (13/15 against all of them, 1,623 of 3,764 Java samples biased).
const cpuTimeFeature = 25

// profileOracle is the JFR event the Java leaves are compared with on jdk (execJFC records both).
func profileOracle(jdk testutil.JDK) string {
	if jdk.Feature >= cpuTimeFeature {
		return "jdk.CPUTimeSample"
	}
	return "jdk.ExecutionSample"
}

// jfrJavaLeaves counts JFR's samples by their top frame's method (as [MethodOf] names ours), leaving out
// the samples JFR flags as safepoint-biased or failed and those in a native method (jdk.CPUTimeSample
// samples threads in native code too; the Java-leaf figure is about Java code); n is how many counted.
func jfrJavaLeaves(events []testutil.JFREvent) (leaf map[string]int64, n int64) {
	leaf = map[string]int64{}
	for _, e := range events {
		st := e.Values.StackTrace
		if e.Values.Biased || e.Values.Failed || st == nil || len(st.Frames) == 0 || st.Frames[0].Native() {
			continue
		}
		leaf[NormalizeMethod(st.Frames[0].MethodName())]++
		n++
	}
	return leaf, n
}

// TestJFRJavaLeaves counts only the unbiased samples in Java code, as jfr print --json gives them.
func TestJFRJavaLeaves(t *testing.T) {
	event := func(class, method string, modifiers int, biased bool) string {
		return `{"type": "jdk.CPUTimeSample", "values": {"stackTrace": {"frames": [{"method": {"type": {"name": "` +
			class + `"}, "name": "` + method + `", "modifiers": ` + strconv.Itoa(modifiers) +
			`}, "type": "JIT compiled"}]}, "biased": ` + strconv.FormatBool(biased) + `}}`
	}
	doc := `{"recording": {"events": [` + strings.Join([]string{
		event("java/math/BigDecimal", "valueOf", 9, false),
		event("java/math/BigDecimal", "valueOf", 9, false),
		event("Foo$$Lambda+0x0000000801000a00", "run", 1, false),
		event("org/eclipse/jetty/io/ManagedSelector", "submit", 1, true),
		event("sun/nio/ch/EventFD", "set0", 0x108, false),
		`{"type": "jdk.CPUTimeSample", "values": {"stackTrace": null, "failed": true}}`,
	}, ",") + `]}}`
	events, err := testutil.ParseJFRJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	leaf, n := jfrJavaLeaves(events)
	want := map[string]int64{"java.math.BigDecimal.valueOf": 2, "Foo$$Lambda.run": 1}
	if n != 3 || !maps.Equal(leaf, want) {
		t.Errorf("jfrJavaLeaves = %v, %d, want %v, 3", leaf, n, want)
	}
}
