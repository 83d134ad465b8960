//go:build linux

package main_test

import (
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jvmkit/jvmkit/internal/testutil"
)

// BenchmarkAttach measures, in one run, the wall time of "VM.version" through gjcmd, the JDK's jcmd
// and Debian's jattach, warm (listener running) and on first attach (a fresh JVM per sample), and
// prints medians and ratios. Run it with scripts/bench-attach (or -benchtime=1x).
func BenchmarkAttach(b *testing.B) {
	warmN, firstN := 31, 9
	if v, err := strconv.Atoi(os.Getenv("BENCH_SAMPLES")); err == nil && v > 0 {
		warmN, firstN = v, max(3, v/3)
	}
	jattach, _ := exec.LookPath("jattach")
	for _, jdk := range testutil.JDKs(b) {
		tools := []struct {
			name string
			args func(pid int) []string
		}{
			{"gjcmd", func(pid int) []string { return []string{gjcmdBin, strconv.Itoa(pid), "VM.version"} }},
			{"jcmd", func(pid int) []string { return []string{jdk.Bin("jcmd"), strconv.Itoa(pid), "VM.version"} }},
		}
		if jattach != "" {
			tools = append(tools, struct {
				name string
				args func(pid int) []string
			}{"jattach", func(pid int) []string { return []string{jattach, strconv.Itoa(pid), "jcmd", "VM.version"} }})
		} else {
			b.Logf("jattach not installed (apt-get install jattach): measuring gjcmd and jcmd only")
		}
		timeOne := func(args []string) time.Duration {
			start := time.Now()
			out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
			d := time.Since(start)
			if err != nil || !strings.Contains(string(out), "JDK ") {
				b.Fatalf("%v: %v\n%s", args, err, out)
			}
			return d
		}
		warm := make(map[string][]time.Duration)
		first := make(map[string][]time.Duration)
		j := testutil.StartJVM(b, jdk, testutil.JVMOptions{})
		for _, tl := range tools {
			for range 3 {
				timeOne(tl.args(j.PID))
			}
		}
		for range warmN {
			for _, tl := range tools { // interleaved, so drift of the machine hits every tool alike
				warm[tl.name] = append(warm[tl.name], timeOne(tl.args(j.PID)))
			}
		}
		j.Stop()
		for range firstN {
			for _, tl := range tools {
				fj := testutil.StartJVM(b, jdk, testutil.JVMOptions{})
				time.Sleep(1500 * time.Millisecond) // let start-up settle, as a JVM in production would
				first[tl.name] = append(first[tl.name], timeOne(tl.args(fj.PID)))
				fj.Stop()
			}
		}
		fmt.Printf("\nVM.version on %s, median wall time (warm n=%d, first attach n=%d)\n", jdk, warmN, firstN)
		fmt.Printf("%-8s %12s %12s\n", "tool", "warm", "first")
		for _, tl := range tools {
			fmt.Printf("%-8s %12s %12s\n", tl.name, ms(median(warm[tl.name])), ms(median(first[tl.name])))
			b.ReportMetric(float64(median(warm[tl.name]).Microseconds())/1000, jdk.Name()+"-"+tl.name+"-warm-ms")
			b.ReportMetric(float64(median(first[tl.name]).Microseconds())/1000, jdk.Name()+"-"+tl.name+"-first-ms")
		}
		g := tools[0].name
		for _, tl := range tools[1:] {
			rw := float64(median(warm[tl.name])) / float64(median(warm[g]))
			rf := float64(median(first[tl.name])) / float64(median(first[g]))
			fmt.Printf("%s / gjcmd: warm %.2fx, first attach %.2fx (gjcmd / %s: warm %.2fx)\n", tl.name, rw, rf, tl.name, 1/rw)
		}
	}
}

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, k int) bool { return s[i] < s[k] })
	return s[len(s)/2]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }
