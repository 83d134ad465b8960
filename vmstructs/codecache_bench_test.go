package vmstructs

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/jvmkit/jvmkit/internal/testutil"
)

// BenchmarkCodeCache lists the code cache of a JVM with 12,000 generated methods compiled (plus the
// JDK's own), method names included, and compares with `jcmd <pid> Compiler.perfmap`, which makes the
// JVM write the same list to a file (the jcmd wall time includes starting jcmd's own JVM, which is
// what a user waits for).
func BenchmarkCodeCache(b *testing.B) {
	testutil.MustHaveRoot(b)
	for _, jdk := range testutil.JDKs(b) {
		b.Run(jdk.Name(), func(b *testing.B) {
			jvm, vm := ccStartManyMethods(b, jdk, 120, 100)
			var ours, theirs time.Duration
			var nmethods, blobs int
			b.Run("CodeBlobs", func(b *testing.B) {
				start := time.Now()
				for b.Loop() {
					bl, err := vm.CodeBlobs()
					if err != nil {
						b.Fatal(err)
					}
					blobs, nmethods = len(bl), 0
					for i := range bl {
						if bl[i].MethodName != "" {
							nmethods++
						}
					}
				}
				ours = time.Since(start) / time.Duration(b.N)
				b.ReportMetric(float64(nmethods), "nmethods")
				b.ReportMetric(float64(blobs), "blobs")
			})
			b.Run("jcmd-perfmap", func(b *testing.B) {
				path := filepath.Join(b.TempDir(), "perf.map")
				args := []string{"Compiler.perfmap"}
				if jdk.Feature >= 21 {
					args = append(args, path)
				} else {
					path = "/tmp/perf-" + strconv.Itoa(jvm.PID) + ".map"
				}
				start := time.Now()
				for b.Loop() {
					ccJcmd(b, jdk, jvm.PID, args...)
				}
				theirs = time.Since(start) / time.Duration(b.N)
				os.Remove(path)
				if ours > 0 {
					b.ReportMetric(float64(theirs)/float64(ours), "x-CodeBlobs")
				}
			})
			if ours > 0 {
				b.Logf("%s: %d blobs, %d nmethods: CodeBlobs() with names %v; jcmd Compiler.perfmap %v; ratio %.1fx",
					jdk.Name(), blobs, nmethods, ours, theirs, float64(theirs)/float64(ours))
			}
		})
	}
}
