package jitlog_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jvmkit/jvmkit/perfmap/jitlog"
)

// A recorder appends what the probes report; names of loads and unloads are formatted alike, so that
// an UNLOAD finds its LOAD, and as Compiler.perfmap names them, so that snapshot entries match.
func Example_recorder() {
	dir, _ := os.MkdirTemp("", "jitlog-example-")
	defer os.RemoveAll(dir)
	w, err := jitlog.Create(filepath.Join(dir, "jit.log"), jitlog.WriterOptions{FlushInterval: 100 * time.Millisecond})
	if err != nil {
		fmt.Println(err)
		return
	}
	// Named as Compiler.perfmap names methods (hotspot:compiled__method__load passes "java/lang/String",
	// "indexOf", "(II)I").
	name := "int java.lang.String.indexOf(int, int)"
	// For each hotspot:compiled__method__load event (usdt.Event: Time, PID; the probe's arguments):
	_ = w.Append(jitlog.Record{Time: 1_000_000_000, PID: 4242, Kind: jitlog.Load, Start: 0x7f0000010000, Size: 0x220,
		Name: name, Source: jitlog.SourceUSDT})
	// ... and for each compiled__method__unload:
	_ = w.Append(jitlog.Record{Time: 3_000_000_000, PID: 4242, Kind: jitlog.Unload, Name: name, Source: jitlog.SourceUSDT})
	if err := w.Close(); err != nil {
		fmt.Println(err)
		return
	}

	recs, damage, _ := jitlog.ReadFile(filepath.Join(dir, "jit.log"))
	r := jitlog.NewResolver(recs)
	for _, t := range []uint64{2_000_000_000, 4_000_000_000} {
		m, ok := r.Lookup(4242, 0x7f0000010010, t)
		fmt.Printf("at %d s: %q exact=%v found=%v\n", t/1e9, m.Name, m.Exact, ok)
	}
	fmt.Println(len(damage), "damaged parts")

	var out strings.Builder
	_, _ = jitlog.Symbolize(&out, strings.NewReader("java 4242/4250 2.000000000: 1 cpu-clock:\n\t7f0000010010 [unknown] (/tmp/perf-4242.map)\n"), r, jitlog.SymbolizeOptions{})
	fmt.Print(out.String())
	// Output:
	// at 2 s: "int java.lang.String.indexOf(int, int)" exact=true found=true
	// at 4 s: "int java.lang.String.indexOf(int, int)" exact=false found=true
	// 0 damaged parts
	// java 4242/4250 2.000000000: 1 cpu-clock:
	// 	7f0000010010 int java.lang.String.indexOf(int, int) (/tmp/perf-4242.map)
}
